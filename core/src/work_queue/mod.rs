//! Work queues: where kernels send work that should not run inline.
//!
//! [`ConcurrentWorkQueue`] is the seed's interface (add task, add blocking task, await,
//! quiesce, parallelism level). The core ships the deterministic [`SingleThreadedWorkQueue`];
//! `hostrt-std` adds the multi-threaded one.

mod parallel;
mod single_threaded;
mod task;

pub use parallel::{IndexClaims, RowSplit, for_row_runs};
pub use single_threaded::SingleThreadedWorkQueue;
pub use task::Task;

use core::fmt;

use crate::allocator::Allocator;
use crate::async_value::RcAsyncValue;

/// Awaiting could not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwaitError {
    /// No task is left to run, yet `unavailable` awaited values are still unavailable, and
    /// nothing else (another thread, an interrupt) was declared able to complete them.
    Deadlock {
        /// How many awaited values are still unavailable.
        unavailable: usize,
    },
}

impl crate::diagnostic::DiagArg for AwaitError {
    fn write_diag(&self, out: &mut crate::diagnostic::MessageText) {
        let AwaitError::Deadlock { unavailable } = self;
        crate::write_diag!(
            out,
            "deadlock: no runnable task, {} awaited value(s) still unavailable",
            unavailable
        );
    }
}

impl fmt::Display for AwaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::diagnostic::display_diag_arg(self, f)
    }
}

/// The work queue interface of the seed (TFRT's `ConcurrentWorkQueue`).
pub trait ConcurrentWorkQueue: Send + Sync {
    /// A short name (`"s"` for single-threaded, `"mstd"` for multi-threaded).
    fn name(&self) -> &str;

    /// Enqueue non-blocking work. A queue with bounded storage may run it in the caller.
    fn add_task(&self, task: Task);

    /// Enqueue every task `tasks` yields, in order, as [`add_task`](Self::add_task) would
    /// one by one; a queue may take them all at once (the single-threaded queue links them
    /// with one atomic exchange). Tasks the queue does not take from the iterator are added
    /// by the caller with `add_task`.
    fn add_tasks(&self, tasks: &mut dyn Iterator<Item = Task>) {
        tasks.for_each(|t| self.add_task(t));
    }

    /// Enqueue work that may block. With `allow_queuing == false` the queue must start the
    /// task within finite time even if all other blocking work blocks forever; a queue that
    /// cannot promise that refuses and returns the task.
    #[must_use = "a refused task is returned and must be handled"]
    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Option<Task>;

    /// Block until every value in `values` is available (concrete or error).
    ///
    /// Must not be called from a thread the queue manages.
    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), AwaitError>;

    /// Block until no task is pending or running.
    fn quiesce(&self);

    /// Number of threads that run non-blocking work (a hint for splitting work).
    fn parallelism_level(&self) -> usize;

    /// Whether the calling thread is currently running one of this queue's tasks.
    fn is_in_worker_thread(&self) -> bool;

    /// Runs `f(i)` for every `i` in `0..n` and returns once all have returned (TFRT's
    /// `ParallelFor`, for work inside one kernel). A queue with several workers may hand
    /// indices to them through helper tasks held in `alloc`; the caller runs indices too,
    /// so this never waits for a worker to become free, and runs all of them itself when
    /// no helper can be made. The default runs them in order on the caller.
    fn parallel_for(&self, alloc: Allocator, n: usize, f: &(dyn Fn(usize) + Sync)) {
        let _ = alloc;
        (0..n).for_each(f);
    }

    /// How many threads a [`parallel_for`](Self::parallel_for) called from this thread may
    /// run on, the caller included: what a kernel splits its work for. 1 (the default)
    /// where it runs everything on the caller.
    fn parallel_threads(&self) -> usize {
        1
    }
}
