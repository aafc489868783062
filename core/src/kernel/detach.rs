//! [`Detached`]: the one handle through which work that outlives a kernel call (a task, a
//! waiter, a value's payload) keeps the kernel's execution context, program and location.
//!
//! # Contract (audited here, once)
//!
//! A kernel frame borrows its execution context for the length of the kernel call, but a
//! kernel often finishes later: `tfrt.while` continues in a waiter, parallel loops split
//! into tasks, asynchronous kernels complete from the blocking pool. Their closures must be
//! `'static`, so the borrow is erased here and nowhere else. That is sound because of the
//! executor's rule (docs/execution.md, "Lifetime of a run"): whoever starts a run keeps
//! the program and the execution context (with its host and request) alive until every
//! piece of work the run started has finished — its results are available *and* the work
//! queue has quiesced. [`Program::call`](crate::executor::Program::call) does exactly
//! that, and [`executor::raw`](crate::executor::raw) states it as the caller's promise.
//!
//! A `Detached` handle therefore belongs to the run it was taken in. Move it only into work
//! of that run: tasks given to the host's work queue, waiters on values of the run, and
//! payloads of values the run releases. Never store it in a `static` or hand it to a thread
//! the work queue does not know about.

use core::cell::Cell;
use core::fmt;
use core::ptr::NonNull;

use super::frame::{Invoke, KernelFrame, start};
use crate::async_value::RcAsyncValue;
use crate::diagnostic::{Diagnostic, Location};
use crate::host_context::{ExecutionContext, HostContext};

/// A kernel's execution context, program runner and location, kept for work that runs after
/// the kernel returned (TFRT's copied `KernelFrame`). See the module documentation for the
/// one rule that keeps it sound.
///
/// ```
/// use hostrt_core::kernel::{Detached, KernelFrame};
///
/// /// Completes its result from a work-queue task, after the kernel returned.
/// fn later(frame: &KernelFrame<'_>) {
///     let Ok(out) = frame.exec_ctx().host().make_unconstructed::<i32>() else { return };
///     frame.set_result(0, out.clone().into_rc());
///     let d = Detached::of(frame);
///     let task = move || {
///         d.host().print(format_args!("done\n"));
///         out.emplace(7);
///     };
///     if let Err(oom) = frame.exec_ctx().host().enqueue_work(task) {
///         (oom.into_inner())();
///     }
/// }
/// # let _ = later;
/// ```
#[derive(Clone, Copy)]
pub struct Detached {
    exec: NonNull<ExecutionContext<'static>>,
    invoker: Option<NonNull<dyn Invoke + 'static>>,
    location: Option<Location>,
}

// SAFETY: the pointers stand for shared references to an `ExecutionContext` and a
// `dyn Invoke`, both `Sync` (the host's queue and sinks are `Sync`, `Invoke: Sync`), so
// sending or sharing the handle only shares those references; the module's contract keeps
// them alive wherever the handle goes.
unsafe impl Send for Detached {}
// SAFETY: as above.
unsafe impl Sync for Detached {}

impl fmt::Debug for Detached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detached")
            .field("invoker", &self.invoker.is_some())
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Detached {
    /// Keep `frame`'s execution context, program runner and location for work of the same
    /// run (see the module documentation).
    pub fn of(frame: &KernelFrame<'_>) -> Self {
        let exec = NonNull::from(frame.exec_ctx()).cast::<ExecutionContext<'static>>();
        let invoker = frame.invoker().map(|i| {
            let p: NonNull<dyn Invoke + '_> = NonNull::from(i);
            // SAFETY: only the trait object's lifetime bound changes (same fat-pointer
            // layout); the program outlives the run by the module's contract.
            unsafe { core::mem::transmute::<NonNull<dyn Invoke + '_>, NonNull<dyn Invoke + 'static>>(p) }
        });
        Detached { exec, invoker, location: frame.location().map(|l| l.to_location()) }
    }

    /// The execution context of the run.
    #[inline]
    pub fn exec(&self) -> &ExecutionContext<'_> {
        // SAFETY: taken from a live reference in `of`; the module's contract keeps the
        // context alive while any handle of its run exists. The returned borrow is tied
        // to `self`, so it cannot be kept longer than the handle.
        unsafe { self.exec.as_ref() }
    }

    /// The host context of the run.
    #[inline]
    pub fn host(&self) -> &HostContext<'_> {
        self.exec().host()
    }

    /// The program runner, present for kernels the executor runs.
    pub fn invoker(&self) -> Option<&dyn Invoke> {
        // SAFETY: as for `exec`: the program outlives every handle of the run.
        self.invoker.map(|p| unsafe { p.as_ref() })
    }

    /// Start `function` of the program with `args` (see [`Invoke::invoke`]); `false` when
    /// the kernel had no program.
    pub fn invoke(
        &self,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) -> bool {
        start(self.invoker(), self.exec(), function, args, results, false)
    }

    /// [`invoke`](Self::invoke) with the asynchronous kick-off (results now, kernels in a
    /// new work-queue task).
    pub fn invoke_async(
        &self,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) -> bool {
        start(self.invoker(), self.exec(), function, args, results, true)
    }

    /// The kernel's location, when known.
    pub fn location(&self) -> Option<Location> {
        self.location
    }

    /// `diag` located at the kernel, unless it has a location.
    pub fn locate(&self, mut diag: Diagnostic) -> Diagnostic {
        if diag.location.is_none() {
            diag.location = self.location;
        }
        diag
    }

    /// Report an error after the kernel returned (TFRT's `ReportError` on a copied frame):
    /// emit the diagnostic at the kernel's location, then make every one of `results` that
    /// is still unavailable an error.
    pub fn report_error(&self, diag: Diagnostic, results: &[&RcAsyncValue]) {
        let diag = self.locate(diag);
        self.host().emit_error(&diag);
        for r in results {
            if !r.is_available() {
                r.set_error(diag);
            }
        }
    }
}

/// Kernels take a `Detached` parameter to keep their context for work that runs later.
impl super::sealed::Param for Detached {}
impl super::SignedParam for Detached {
    const PARAM: super::Param = super::Param::Other;
}

impl super::KernelParam for Detached {
    type Item<'f> = Detached;
    fn fetch(frame: &KernelFrame<'_>, _cursor: &mut super::Cursor) -> Option<Detached> {
        Some(Detached::of(frame))
    }
}
