//! The asynchronous entry to the executor, for kernels and embedders that drive the work
//! queue themselves. Most code wants the safe, blocking
//! [`Program::call`](super::Program::call) instead.
//!
//! # Safety contract (the one place it is written)
//!
//! Starting a run hands raw pointers to the [`Program`] and to the [`ExecutionContext`]
//! (with its [`HostContext`](crate::HostContext) and [`RequestContext`](crate::RequestContext))
//! to every frame, waiter and task of the run, and to every
//! [`Detached`](crate::kernel::Detached) handle its kernels take. The caller of the
//! functions here promises that the program and those contexts stay alive, and are not
//! moved, until every piece of work the run started has finished: until all of its results
//! are available **and** the work queue has quiesced (no task of the run pending or
//! running). `Program::call` keeps the promise by awaiting the results and quiescing the
//! queue before it returns; docs/execution.md ("Lifetime of a run") explains why that is
//! enough.
//!
//! Kernels keep their side of it through `Detached`: work that outlives a kernel call is
//! handed to the work queue or waits on values of the run, never to a thread or a `static`
//! the queue does not know.

use core::cell::Cell;

use super::Program;
use crate::async_value::RcAsyncValue;
use crate::host_context::ExecutionContext;

/// Start `function` of `program` with `args`, putting its (possibly unavailable) results in
/// `results` (one slot per result the function declares). Kernels that are ready run inline
/// before this returns; the rest run when their inputs become available (from waiters or
/// work-queue tasks).
///
/// A wrong argument or result count, an unregistered native function or exhausted memory
/// yields error results, never a panic.
///
/// # Safety
/// `program` and `exec` (its host and request contexts included) must outlive every piece of
/// work this call starts: see the [module documentation](self).
pub unsafe fn execute(
    program: &Program<'_>,
    exec: &ExecutionContext<'_>,
    function: u32,
    args: &[RcAsyncValue],
    results: &[Cell<Option<RcAsyncValue>>],
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { program.execute_with(exec, function, args, results, false) }
}

/// [`execute`] with TFRT's *asynchronous kick-off*: the result placeholders are set before
/// this returns, and the function's kernels start in a new work-queue task.
///
/// # Safety
/// As for [`execute`].
pub unsafe fn execute_async(
    program: &Program<'_>,
    exec: &ExecutionContext<'_>,
    function: u32,
    args: &[RcAsyncValue],
    results: &[Cell<Option<RcAsyncValue>>],
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { program.execute_with(exec, function, args, results, true) }
}
