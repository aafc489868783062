//! The single-threaded work queue (TFRT's `s`): tasks run only on the host thread, while it
//! awaits or quiesces, in FIFO batches. Output is therefore deterministic.
//!
//! Adding a task pushes it on a lock-free stack (one compare-and-swap; safe from any thread
//! and from interrupt handlers); the running thread takes the whole stack at once and
//! reverses it into FIFO order. Taking everything at once means no node is ever popped
//! alone, so the stack has no ABA problem. Tasks of a batch left unrun when an await ends
//! wait in a separate front list, ahead of newer ones.

use core::cell::RefCell;
use core::ptr::{self, NonNull};

use critical_section::Mutex;

use super::task::TaskList;
use super::{AwaitError, ConcurrentWorkQueue, Task};
use crate::async_value::RcAsyncValue;
use crate::callback::CallbackHeader;
use crate::sync::{AtomicBool, AtomicPtr, Ordering};

/// Runs tasks on the thread that calls [`await_values`](ConcurrentWorkQueue::await_values)
/// or [`quiesce`](ConcurrentWorkQueue::quiesce). No threads, no allocation of its own: the
/// pending list is intrusive. Safe to add tasks from interrupt handlers (the list is guarded
/// by a critical section).
///
/// ```
/// use hostrt_core::{Allocator, AsyncValueRef, ConcurrentWorkQueue, FixedArena, SingleThreadedWorkQueue, Task};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
/// let queue = SingleThreadedWorkQueue::new();
///
/// let v = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
/// let producer = v.clone();
/// queue.add_task(Task::new(alloc, move || producer.emplace(1)).ok().unwrap());
/// assert!(!v.is_available(), "nothing runs until the host waits");
/// queue.await_values(&[v.clone().into_rc()]).unwrap();
/// assert_eq!(v.get(), Some(&1));
///
/// // A value nothing will complete is a reported deadlock, not a hang.
/// let never = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
/// assert!(queue.await_values(&[never.into_rc()]).is_err());
/// ```
pub struct SingleThreadedWorkQueue {
    /// Tasks added and not yet taken, newest first (see the module docs).
    incoming: AtomicPtr<CallbackHeader>,
    /// Tasks taken but left unrun by an await that ended, oldest first: they run before
    /// `incoming`. Rarely used, so a critical section guards it.
    front: Mutex<RefCell<TaskList>>,
    /// Whether `front` may hold tasks (read without the critical section).
    has_front: AtomicBool,
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

/// A queue with nothing pending (the body of both `make`s: `const` normally, not under loom).
macro_rules! empty_queue {
    ($on_idle:expr) => {
        SingleThreadedWorkQueue {
            incoming: AtomicPtr::new(ptr::null_mut()),
            front: Mutex::new(RefCell::new(TaskList::new())),
            has_front: AtomicBool::new(false),
            running: AtomicBool::new(false),
            on_idle: $on_idle,
        }
    };
}

impl SingleThreadedWorkQueue {
    /// A queue whose `await_values` fails with [`AwaitError::Deadlock`] when no task is left
    /// and awaited values are still unavailable.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::make(None)
    }

    /// A queue whose `await_values` fails with [`AwaitError::Deadlock`] when no task is left
    /// and awaited values are still unavailable.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::make(None)
    }

    /// A queue that, when it has nothing to run while awaiting, calls `on_idle` (for example
    /// to sleep until an interrupt) and keeps waiting while it returns `true`. Use this when
    /// interrupts or other threads complete values.
    #[cfg(not(loom))]
    pub const fn with_idle_hook(on_idle: fn() -> bool) -> Self {
        Self::make(Some(on_idle))
    }

    /// [`with_idle_hook`](Self::with_idle_hook) under loom (its atomics are not `const`).
    #[cfg(loom)]
    pub fn with_idle_hook(on_idle: fn() -> bool) -> Self {
        Self::make(Some(on_idle))
    }

    #[cfg(not(loom))]
    const fn make(on_idle: Option<fn() -> bool>) -> Self {
        empty_queue!(on_idle)
    }

    // loom's atomics have no `const fn new`.
    #[cfg(loom)]
    fn make(on_idle: Option<fn() -> bool>) -> Self {
        empty_queue!(on_idle)
    }

    /// Every task waiting to run, oldest first: the front list, then the stack reversed.
    fn take_pending(&self) -> TaskList {
        // Acquire: the pushers' writes to the nodes (closure, link) happen before.
        let top = self.incoming.swap(ptr::null_mut(), Ordering::Acquire);
        // SAFETY: the chain was detached from the stack by the swap; we own its task nodes.
        let mut batch = unsafe { TaskList::from_stack(top) };
        if self.has_front.load(Ordering::Acquire) {
            let front = critical_section::with(|cs| {
                self.has_front.store(false, Ordering::Relaxed);
                self.front.borrow_ref_mut(cs).take()
            });
            batch.prepend(front);
        }
        batch
    }

    /// Put unrun tasks ahead of every pending one.
    fn put_back(&self, batch: TaskList) {
        critical_section::with(|cs| {
            let mut front = self.front.borrow_ref_mut(cs);
            let mut batch = batch;
            batch.append(front.take());
            *front = batch;
            self.has_front.store(true, Ordering::Release);
        });
    }

    /// Push the owned chain of task nodes from `top` down to `bottom` (linked through
    /// `next`, newest first) onto the stack of incoming tasks.
    fn push_chain(&self, top: NonNull<CallbackHeader>, bottom: NonNull<CallbackHeader>) {
        let mut old = self.incoming.load(Ordering::Relaxed);
        loop {
            // SAFETY: we own the chain until the exchange below publishes it.
            unsafe { (*bottom.as_ptr()).next = old };
            // Release: the nodes' contents happen before the taker's acquire swap.
            match self.incoming.compare_exchange_weak(old, top.as_ptr(), Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    fn run(&self, task: Task) {
        // Only the owner runs tasks, so a plain load and store do (a swap is a locked
        // instruction on x86); a nested run (a task awaiting on this queue) restores `was`.
        let was = self.running.load(Ordering::Relaxed);
        self.running.store(true, Ordering::Relaxed);
        task.run();
        self.running.store(was, Ordering::Relaxed);
    }

    /// Whether no task is waiting to run.
    pub fn pending_is_empty(&self) -> bool {
        self.incoming.load(Ordering::Acquire).is_null()
            && (!self.has_front.load(Ordering::Acquire)
                || critical_section::with(|cs| self.front.borrow_ref(cs).is_empty()))
    }
}

impl ConcurrentWorkQueue for SingleThreadedWorkQueue {
    fn name(&self) -> &str {
        "s"
    }

    fn add_task(&self, task: Task) {
        let node = task.into_node();
        self.push_chain(node, node);
    }

    fn add_tasks(&self, tasks: &mut dyn Iterator<Item = Task>) {
        // Linked newest first, as the stack keeps them, then pushed with one exchange.
        let Some(first) = tasks.next() else { return };
        let bottom = first.into_node();
        let mut top = bottom;
        for task in tasks {
            let node = task.into_node();
            // SAFETY: we own both nodes until the chain is published.
            unsafe { (*node.as_ptr()).next = top.as_ptr() };
            top = node;
        }
        self.push_chain(top, bottom);
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
        // Values never become unavailable again, so each check resumes at the first value
        // the last one found unavailable (awaiting n values costs O(n), not O(n) per task).
        let mut checked = 0;
        let mut all_available = || {
            while values.get(checked).is_some_and(|v| v.is_available()) {
                checked += 1;
            }
            checked == values.len()
        };
        if all_available() {
            return Ok(());
        }
        let mut batch = TaskList::new();
        loop {
            let Some(task) = batch.pop_front() else {
                batch = self.take_pending();
                if batch.is_empty() {
                    match self.on_idle {
                        Some(hook) if hook() => continue,
                        _ => {
                            let unavailable = values.iter().filter(|v| !v.is_available()).count();
                            return Err(AwaitError::Deadlock { unavailable });
                        }
                    }
                }
                continue;
            };
            self.run(task);
            if all_available() {
                // Unrun tasks of this batch go back ahead of those added meanwhile.
                if !batch.is_empty() {
                    self.put_back(batch);
                }
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

impl Drop for SingleThreadedWorkQueue {
    fn drop(&mut self) {
        // Pending tasks are dropped unrun (the front list drops its own).
        drop(self.take_pending());
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use super::*;
    use crate::async_value::AsyncValueRef;
    use crate::testing::{Log, TestArena, drop_counter};

    fn task(a: &TestArena, f: impl FnOnce() + Send + 'static) -> Task {
        Task::new(a.alloc, f).unwrap()
    }

    #[test]
    fn quiesce_runs_fifo_batches() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let log = Log::default();
        for name in ["a", "b"] {
            let l = log.clone();
            let alloc = a.alloc;
            let qp: &'static SingleThreadedWorkQueue = unsafe_static(&q);
            q.add_task(task(&a, move || {
                l.push(name);
                let l2 = l.clone();
                qp.add_task(Task::new(alloc, move || l2.push(std::format!("{name}2"))).unwrap());
            }));
        }
        assert!(log.take().is_empty(), "nothing runs until quiesce or await");
        q.quiesce();
        assert_eq!(log.take(), ["a", "b", "a2", "b2"]);
        assert!(q.pending_is_empty());
    }

    /// Tests run the queue on this thread only; the tasks never outlive `q`.
    fn unsafe_static(q: &SingleThreadedWorkQueue) -> &'static SingleThreadedWorkQueue {
        // SAFETY: every test quiesces `q` before it goes out of scope, so no task holding
        // this reference runs after `q` is dropped.
        unsafe { &*(q as *const SingleThreadedWorkQueue) }
    }

    #[test]
    fn await_stops_when_values_are_ready_and_keeps_the_rest_in_front() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let qp = unsafe_static(&q);
        let log = Log::default();
        let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
        let (w, l, alloc) = (v.clone(), log.clone(), a.alloc);
        q.add_task(task(&a, move || {
            l.push("t1");
            let l2 = l.clone();
            qp.add_task(Task::new(alloc, move || l2.push("t4")).unwrap());
            w.emplace(1);
        }));
        for name in ["t2", "t3"] {
            let l = log.clone();
            q.add_task(task(&a, move || l.push(name)));
        }
        q.await_values(&[v.clone().into_rc()]).unwrap();
        assert_eq!(log.take(), ["t1"]);
        q.quiesce();
        assert_eq!(log.take(), ["t2", "t3", "t4"], "unrun batch tasks go ahead of newer ones");
    }

    #[test]
    fn tasks_added_as_a_chain_keep_their_place_in_line() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let log = Log::default();
        let l = log.clone();
        q.add_task(task(&a, move || l.push("before")));
        let mut chain = ["c1", "c2", "c3"].into_iter().map(|name| {
            let l = log.clone();
            task(&a, move || l.push(name))
        });
        q.add_tasks(&mut chain);
        q.add_tasks(&mut core::iter::empty());
        let l = log.clone();
        q.add_task(task(&a, move || l.push("after")));
        q.quiesce();
        assert_eq!(log.take(), ["before", "c1", "c2", "c3", "after"]);
    }

    #[test]
    fn await_sees_values_completed_out_of_order() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let log = Log::default();
        let values: std::vec::Vec<_> =
            (0..3).map(|_| AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap()).collect();
        // Completed last first: the first value stays unavailable until the third task.
        for (i, name) in [(2, "t1"), (1, "t2"), (0, "t3"), (0, "t4")] {
            let (v, l) = (values[i].clone(), log.clone());
            q.add_task(task(&a, move || {
                l.push(name);
                if !v.is_available() {
                    v.emplace(i as i32);
                }
            }));
        }
        let rcs: std::vec::Vec<_> = values.iter().map(|v| v.clone().into_rc()).collect();
        q.await_values(&rcs).unwrap();
        assert_eq!(log.take(), ["t1", "t2", "t3"]);
        q.quiesce();
        assert_eq!(log.take(), ["t4"]);
    }

    #[test]
    fn await_on_available_values_runs_nothing() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let log = Log::default();
        let l = log.clone();
        q.add_task(task(&a, move || l.push("x")));
        let v = AsyncValueRef::available(a.alloc, 1u8).unwrap().into_rc();
        q.await_values(&[v]).unwrap();
        assert!(log.take().is_empty());
        q.quiesce();
    }

    #[test]
    fn await_without_runnable_work_reports_deadlock() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap().into_rc();
        let w = AsyncValueRef::available(a.alloc, 0i32).unwrap().into_rc();
        assert_eq!(q.await_values(&[v.clone(), w]), Err(AwaitError::Deadlock { unavailable: 1 }));
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let q = SingleThreadedWorkQueue::with_idle_hook(|| CALLS.fetch_add(1, SeqCst) < 3);
        assert!(q.await_values(&[v]).is_err());
        assert_eq!(CALLS.load(SeqCst), 4, "idle hook consulted until it gives up");
    }

    #[test]
    fn blocking_tasks_need_queuing() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let log = Log::default();
        let l = log.clone();
        let refused = q.add_blocking_task(task(&a, move || l.push("no")), false);
        assert!(refused.is_some(), "cannot guarantee progress without queuing");
        drop(refused);
        let l = log.clone();
        assert!(q.add_blocking_task(task(&a, move || l.push("yes")), true).is_none());
        q.quiesce();
        assert_eq!(log.take(), ["yes"]);
        assert_eq!(q.parallelism_level(), 1);
    }

    #[test]
    fn worker_flag_and_unrun_tasks_are_freed() {
        let a = TestArena::new(8192);
        let q = SingleThreadedWorkQueue::new();
        let qp = unsafe_static(&q);
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let i = inside.clone();
        q.add_task(task(&a, move || i.store(qp.is_in_worker_thread(), SeqCst)));
        assert!(!q.is_in_worker_thread());
        q.quiesce();
        assert!(inside.load(SeqCst));
        let (c, drops) = drop_counter();
        q.add_task(task(&a, move || drop(c)));
        drop(q);
        assert_eq!(drops.load(SeqCst), 1, "dropping the queue drops pending tasks unrun");
    }
}
