//! A kernel's execution context, program runner and location, kept for work that runs after
//! the kernel returned (tasks, waiters, payload destructors): TFRT's copied `KernelFrame`.

use core::fmt;

use hostrt_core::kernel::{Cursor, Invoke, KernelFrame, KernelParam};
use hostrt_core::{Diagnostic, ExecutionContext, HostContext, Location, RcAsyncValue};

/// The execution context (and the program runner, when the kernel has one) of a kernel
/// invocation with the lifetimes erased, so tasks and payloads can hold it, and the kernel's
/// location for errors reported later.
#[derive(Clone, Copy)]
pub(crate) struct Detached {
    exec: &'static ExecutionContext<'static>,
    invoker: Option<&'static dyn Invoke>,
    location: Option<Location>,
}

impl fmt::Debug for Detached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detached")
            .field("invoker", &self.invoker.is_some())
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Detached {
    /// Keep `frame`'s execution context, invoker and location for later.
    ///
    /// The handle must only be moved into work of the current run: tasks and waiters it
    /// starts, payloads of values the run releases. The executor's caller keeps the context
    /// (the object itself, its host and request) and the program alive until all of that is
    /// over: it is the contract of `Program::execute`, through which every kernel the
    /// executor runs is started. Tests that call kernels on hand-built frames keep the same
    /// promise (they quiesce the queue and drop the results before the host).
    pub(crate) fn of(frame: &KernelFrame<'_>) -> Self {
        let exec = core::ptr::from_ref(frame.exec_ctx()).cast::<ExecutionContext<'static>>();
        // SAFETY: the pointer comes from a live reference, and the object outlives every use
        // of this handle (the executor contract above), which is all the erased lifetime
        // claims; handles never escape the run.
        let exec: &'static ExecutionContext<'static> = unsafe { &*exec };
        let invoker = frame.invoker().map(|i| {
            // SAFETY: only the lifetimes change (same fat-pointer layout); the program is
            // kept alive for the whole run by the same contract.
            unsafe { core::mem::transmute::<&dyn Invoke, &'static dyn Invoke>(i) }
        });
        Detached { exec, invoker, location: frame.location().map(|l| l.to_location()) }
    }

    /// The execution context.
    pub(crate) fn exec(&self) -> &'static ExecutionContext<'static> {
        self.exec
    }

    /// The host context.
    pub(crate) fn host(&self) -> &'static HostContext<'static> {
        self.exec.host()
    }

    /// The program runner (present for kernels the executor runs).
    pub(crate) fn invoker(&self) -> Option<&'static dyn Invoke> {
        self.invoker
    }

    /// `diag` located at the kernel, unless it has a location.
    pub(crate) fn locate(&self, mut diag: Diagnostic) -> Diagnostic {
        if diag.location.is_none() {
            diag.location = self.location;
        }
        diag
    }

    /// Report an error after the kernel returned (TFRT's `ReportError` on a copied frame):
    /// emit the diagnostic at the kernel's location, then make every result that is still
    /// unavailable an error.
    pub(crate) fn report_error(&self, diag: Diagnostic, results: &[&RcAsyncValue]) {
        let diag = self.locate(diag);
        self.host().emit_error(&diag);
        for r in results {
            if !r.is_available() {
                r.set_error(diag.clone());
            }
        }
    }
}

/// Kernels take a `Detached` parameter to keep their context for work that runs later.
impl KernelParam for Detached {
    type Item<'f> = Detached;
    fn fetch(frame: &KernelFrame<'_>, _cursor: &mut Cursor) -> Option<Detached> {
        Some(Detached::of(frame))
    }
}
