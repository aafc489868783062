//! The registration log: while a plugin loads, the op and kernel registrations it makes
//! (from its entry points or from the static initializers that run when it is opened) are
//! noted per thread, so that the loader can tell whether it registered anything and report
//! every registration that failed. `TF_RegisterOpDefinition` and `TF_RegisterKernelBuilder`
//! note their outcome; outside a load there is nothing to note.

use std::cell::RefCell;

/// The registrations of the plugin a thread is loading: how many succeeded, which failed.
#[derive(Default)]
struct Registrations {
    succeeded: usize,
    failed: Vec<String>,
}

thread_local! {
    /// What the plugin this thread is loading registered, if it is loading one.
    static LOADING: RefCell<Option<Registrations>> = const { RefCell::new(None) };
}

/// Notes the outcome of an op or kernel registration for the plugin being loaded (none:
/// nothing to do).
pub(crate) fn note(result: Result<(), &str>) {
    LOADING.with(|l| {
        if let Some(r) = l.borrow_mut().as_mut() {
            match result {
                Ok(()) => r.succeeded += 1,
                Err(m) => r.failed.push(m.to_owned()),
            }
        }
    });
}

/// Starts this thread's log: a plugin is about to be opened.
pub(crate) fn start() {
    LOADING.with(|l| *l.borrow_mut() = Some(Registrations::default()));
}

/// Whether a registration succeeded or failed since [`start`].
pub(crate) fn any() -> bool {
    LOADING.with(|l| l.borrow().as_ref().is_some_and(|r| r.succeeded > 0 || !r.failed.is_empty()))
}

/// Ends this thread's log and returns the failures it noted since [`start`].
pub(crate) fn finish() -> Vec<String> {
    LOADING.with(|l| l.borrow_mut().take()).unwrap_or_default().failed
}
