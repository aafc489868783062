//! The single-threaded work queue (TFRT's `s`): tasks run only on the host thread, while it
//! awaits or quiesces, in FIFO batches. Output is therefore deterministic.

use core::cell::RefCell;

use critical_section::Mutex;
use portable_atomic::{AtomicBool, Ordering};

use super::task::TaskList;
use super::{AwaitError, ConcurrentWorkQueue, Task};
use crate::async_value::RcAsyncValue;

/// Runs tasks on the thread that calls [`await_values`](ConcurrentWorkQueue::await_values)
/// or [`quiesce`](ConcurrentWorkQueue::quiesce). No threads, no allocation of its own: the
/// pending list is intrusive. Safe to add tasks from interrupt handlers (the list is guarded
/// by a critical section).
pub struct SingleThreadedWorkQueue {
    pending: Mutex<RefCell<TaskList>>,
    running: AtomicBool,
    on_idle: Option<fn() -> bool>,
}

impl core::fmt::Debug for SingleThreadedWorkQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SingleThreadedWorkQueue").finish_non_exhaustive()
    }
}

impl Default for SingleThreadedWorkQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl SingleThreadedWorkQueue {
    /// A queue whose `await_values` fails with [`AwaitError::Deadlock`] when no task is left
    /// and awaited values are still unavailable.
    pub const fn new() -> Self {
        SingleThreadedWorkQueue {
            pending: Mutex::new(RefCell::new(TaskList::new())),
            running: AtomicBool::new(false),
            on_idle: None,
        }
    }

    /// A queue that, when it has nothing to run while awaiting, calls `on_idle` (for example
    /// to sleep until an interrupt) and keeps waiting while it returns `true`. Use this when
    /// interrupts or other threads complete values.
    pub const fn with_idle_hook(on_idle: fn() -> bool) -> Self {
        SingleThreadedWorkQueue {
            pending: Mutex::new(RefCell::new(TaskList::new())),
            running: AtomicBool::new(false),
            on_idle: Some(on_idle),
        }
    }

    fn take_pending(&self) -> TaskList {
        critical_section::with(|cs| self.pending.borrow_ref_mut(cs).take())
    }

    fn run(&self, task: Task) {
        let was = self.running.swap(true, Ordering::Relaxed);
        task.run();
        self.running.store(was, Ordering::Relaxed);
    }

    /// Whether no task is waiting to run.
    pub fn pending_is_empty(&self) -> bool {
        critical_section::with(|cs| self.pending.borrow_ref(cs).is_empty())
    }
}

impl ConcurrentWorkQueue for SingleThreadedWorkQueue {
    fn name(&self) -> &str {
        "s"
    }

    fn add_task(&self, task: Task) {
        critical_section::with(|cs| self.pending.borrow_ref_mut(cs).push_back(task));
    }

    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Option<Task> {
        if !allow_queuing {
            // One thread cannot promise to start it while other work blocks.
            return Some(task);
        }
        self.add_task(task);
        None
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), AwaitError> {
        let unavailable = || values.iter().filter(|v| !v.is_available()).count();
        if unavailable() == 0 {
            return Ok(());
        }
        let mut batch = TaskList::new();
        loop {
            let Some(task) = batch.pop_front() else {
                batch = self.take_pending();
                if batch.is_empty() {
                    match self.on_idle {
                        Some(hook) if hook() => continue,
                        _ => return Err(AwaitError::Deadlock { unavailable: unavailable() }),
                    }
                }
                continue;
            };
            self.run(task);
            if unavailable() == 0 {
                // Unrun tasks of this batch go back ahead of those added meanwhile.
                critical_section::with(|cs| self.pending.borrow_ref_mut(cs).prepend(batch));
                return Ok(());
            }
        }
    }

    fn quiesce(&self) {
        loop {
            let mut batch = self.take_pending();
            if batch.is_empty() {
                return;
            }
            while let Some(task) = batch.pop_front() {
                self.run(task);
            }
        }
    }

    fn parallelism_level(&self) -> usize {
        1
    }

    fn is_in_worker_thread(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }
}
