//! The multi-threaded work queue (TFRT's `mstd`): N non-blocking workers with work stealing,
//! and a pool of M threads for blocking work plus dynamic threads for tasks that must not
//! wait in a queue.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use hostrt_core::Allocator;
use hostrt_core::work_queue::{AwaitError, IndexClaims};
use hostrt_core::{ConcurrentWorkQueue, RcAsyncValue, Task};

/// Locks ignoring poisoning: a panicking task must not take the queue down with it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Shared {
    id: usize,
    injector: Injector<Task>,
    stealers: Vec<Stealer<Task>>,
    /// Tasks added and not yet finished (queued or running), for quiesce.
    pending: AtomicUsize,
    /// Sleeping workers wait here; `add_task` wakes one when `sleepers` says someone sleeps.
    sleep: Mutex<()>,
    sleepers: AtomicUsize,
    wake: Condvar,
    /// Quiesce waits here for `pending` to reach zero.
    idle: Mutex<()>,
    idle_cv: Condvar,
    blocking: Mutex<VecDeque<Task>>,
    blocking_cv: Condvar,
    shutdown: AtomicBool,
    /// Told of every task run (docs/profiling.md), once set.
    observer: std::sync::OnceLock<Arc<dyn crate::TaskObserver>>,
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// (queue id, this worker's deque) for threads owned by a queue.
    static WORKER: std::cell::RefCell<Option<(usize, Worker<Task>)>> = const { std::cell::RefCell::new(None) };
    static IN_QUEUE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `mstd[:N[,M]]`: N non-blocking workers (default: available parallelism) with per-worker
/// LIFO deques and work stealing (crossbeam-deque), M blocking threads (default 256, as TFRT)
/// and a dynamic thread for each blocking task that may not wait in the queue (it retires
/// after a second without work). Idle workers sleep on a condition variable.
pub struct MultiThreadedWorkQueue {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    workers: usize,
    blocking_threads: usize,
}

impl std::fmt::Debug for MultiThreadedWorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiThreadedWorkQueue")
            .field("workers", &self.workers)
            .field("blocking_threads", &self.blocking_threads)
            .finish()
    }
}

impl MultiThreadedWorkQueue {
    /// A queue with `workers` non-blocking threads and `blocking_threads` blocking ones.
    pub fn new(workers: usize, blocking_threads: usize) -> Self {
        let workers = workers.max(1);
        let deques: Vec<Worker<Task>> = (0..workers).map(|_| Worker::new_lifo()).collect();
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: deques.iter().map(Worker::stealer).collect(),
            pending: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            sleepers: AtomicUsize::new(0),
            wake: Condvar::new(),
            idle: Mutex::new(()),
            idle_cv: Condvar::new(),
            blocking: Mutex::new(VecDeque::new()),
            blocking_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            observer: std::sync::OnceLock::new(),
        });
        let mut threads = Vec::with_capacity(workers + blocking_threads);
        for (i, deque) in deques.into_iter().enumerate() {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hostrt-worker-{i}"))
                    .spawn(move || worker_loop(&s, i, deque))
                    .expect("spawn worker thread"),
            );
        }
        for i in 0..blocking_threads {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hostrt-blocking-{i}"))
                    .spawn(move || blocking_loop(&s, None))
                    .expect("spawn blocking thread"),
            );
        }
        MultiThreadedWorkQueue { shared, threads, workers, blocking_threads }
    }

    /// Parse a TFRT work queue configuration: `mstd`, `mstd:N` or `mstd:N,M`.
    pub fn from_config(config: &str) -> Option<Self> {
        let args = match config.split_once(':') {
            None if config == "mstd" => "",
            Some(("mstd", a)) => a,
            _ => return None,
        };
        let default_n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut it = args.split(',').filter(|a| !a.is_empty()).map(|a| a.trim().parse::<usize>());
        let n = match it.next() {
            None => default_n,
            Some(Ok(n)) if n > 0 => n,
            _ => return None,
        };
        let m = match it.next() {
            None => 256,
            Some(Ok(m)) => m,
            _ => return None,
        };
        if it.next().is_some() {
            return None;
        }
        Some(Self::new(n, m))
    }

    /// Tell `observer` (a [`Recorder`](crate::Recorder)) of every task this queue runs from
    /// now on, on the thread that runs it (docs/profiling.md). `false` when one was set
    /// already (it stays).
    pub fn set_task_observer(&self, observer: Arc<dyn crate::TaskObserver>) -> bool {
        self.shared.observer.set(observer).is_ok()
    }

    /// TFRT's description: `Multi-threaded C++ work queue (N threads, M blocking threads)`.
    pub fn description(&self) -> String {
        format!(
            "Multi-threaded C++ work queue ({} threads, {} blocking threads)",
            self.workers, self.blocking_threads
        )
    }
}

/// Runs `t` (of the blocking pool when `blocking`), between the task observer's begin and
/// end when one is set.
fn run_task(s: &Shared, t: Task, blocking: bool) {
    match s.observer.get() {
        Some(r) => {
            let mark = r.task_begin(blocking);
            t.run();
            r.task_end(blocking, mark);
        }
        None => t.run(),
    }
    if s.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        let _g = lock(&s.idle);
        s.idle_cv.notify_all();
    }
}

fn find_task(s: &Shared, me: usize, local: &Worker<Task>) -> Option<Task> {
    if let Some(t) = local.pop() {
        return Some(t);
    }
    loop {
        match s.injector.steal_batch_and_pop(local) {
            Steal::Success(t) => return Some(t),
            Steal::Retry => continue,
            Steal::Empty => break,
        }
    }
    let n = s.stealers.len();
    for k in 1..n {
        let victim = (me + k) % n;
        loop {
            match s.stealers[victim].steal() {
                Steal::Success(t) => return Some(t),
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
    }
    None
}

/// How long an idle worker keeps looking for tasks before it sleeps (TFRT's queue and
/// onnxruntime's pool also spin before parking), so bursts of tasks and the helpers of one
/// kernel after another (`parallel_for`) do not each pay a sleep and a wake-up.
const SPIN: Duration = Duration::from_millis(1);

/// How long `await_values` looks for its values before it sleeps: a short call finishes
/// sooner than a sleeping thread wakes.
const AWAIT_SPIN: Duration = Duration::from_micros(100);

fn worker_loop(s: &Shared, me: usize, deque: Worker<Task>) {
    IN_QUEUE.with(|q| q.set(s.id));
    WORKER.with(|w| *w.borrow_mut() = Some((s.id, deque)));
    let mut idle_rounds = 0u32;
    let mut idle_since: Option<Instant> = None;
    while !s.shutdown.load(Ordering::Acquire) {
        let task = WORKER.with(|w| w.borrow().as_ref().and_then(|(_, d)| find_task(s, me, d)));
        match task {
            Some(t) => {
                idle_since = None;
                run_task(s, t, false);
            }
            None if idle_since.get_or_insert_with(Instant::now).elapsed() < SPIN => {
                // Yield often: on a machine with as many cores as workers, the thread with
                // work must not wait for a spinning one.
                idle_rounds = idle_rounds.wrapping_add(1);
                if idle_rounds.is_multiple_of(4) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            None => {
                idle_since = None;
                // Sleep until woken; the timeout bounds a lost wake-up race (a task pushed
                // between our last look and the wait) to a millisecond, without spinning.
                let g = lock(&s.sleep);
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                if s.injector.is_empty() {
                    let _ = s.wake.wait_timeout(g, Duration::from_millis(1));
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
    WORKER.with(|w| *w.borrow_mut() = None);
}

/// A blocking thread: static ones wait forever for work; a dynamic one (`Some(first)`) runs
/// its first task and then retires after a second without work.
fn blocking_loop(s: &Shared, first: Option<Task>) {
    IN_QUEUE.with(|q| q.set(s.id));
    let dynamic = first.is_some();
    if let Some(t) = first {
        run_task(s, t, true);
    }
    loop {
        let mut q = lock(&s.blocking);
        loop {
            if let Some(t) = q.pop_front() {
                drop(q);
                run_task(s, t, true);
                break;
            }
            if s.shutdown.load(Ordering::Acquire) {
                return;
            }
            let timeout = if dynamic { Duration::from_secs(1) } else { Duration::from_millis(100) };
            let (g, r) = s.blocking_cv.wait_timeout(q, timeout).unwrap_or_else(|e| e.into_inner());
            q = g;
            if dynamic && r.timed_out() && q.is_empty() {
                return;
            }
        }
    }
}

impl ConcurrentWorkQueue for MultiThreadedWorkQueue {
    fn name(&self) -> &str {
        "mstd"
    }

    fn add_task(&self, task: Task) {
        let s = &self.shared;
        s.pending.fetch_add(1, Ordering::AcqRel);
        // From one of our workers: its own deque (LIFO for the owner); else the injector.
        let rejected = WORKER.with(|w| match w.borrow().as_ref() {
            Some((id, d)) if *id == s.id => {
                d.push(task);
                None
            }
            _ => Some(task),
        });
        if let Some(task) = rejected {
            s.injector.push(task);
        }
        // A worker about to sleep re-checks the injector under the lock and sleeps at most a
        // millisecond, so notifying without the lock cannot strand a task.
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            s.wake.notify_one();
        }
    }

    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Option<Task> {
        let s = &self.shared;
        s.pending.fetch_add(1, Ordering::AcqRel);
        if allow_queuing && self.blocking_threads > 0 {
            lock(&s.blocking).push_back(task);
            s.blocking_cv.notify_one();
            return None;
        }
        // Must start in finite time even if every blocking thread is blocked: a new thread.
        let shared = s.clone();
        let cell = Arc::new(Mutex::new(Some(task)));
        let c2 = cell.clone();
        let spawned = std::thread::Builder::new().name("hostrt-blocking-dyn".into()).spawn(move || {
            if let Some(t) = lock(&c2).take() {
                blocking_loop(&shared, Some(t));
            }
        });
        match spawned {
            Ok(_) => None,
            Err(_) => {
                s.pending.fetch_sub(1, Ordering::AcqRel);
                lock(&cell).take()
            }
        }
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), AwaitError> {
        let start = Instant::now();
        while start.elapsed() < AWAIT_SPIN {
            if values.iter().all(RcAsyncValue::is_available) {
                return Ok(());
            }
            std::thread::yield_now();
        }
        // Then block until every value is available: each value's waiter counts down.
        let state = Arc::new((Mutex::new(values.len()), Condvar::new()));
        for v in values {
            let st = state.clone();
            let done = move || {
                let mut n = lock(&st.0);
                *n -= 1;
                if *n == 0 {
                    st.1.notify_all();
                }
            };
            if let Err(oom) = v.and_then(done) {
                // No memory for a waiter: fall back to polling this value.
                while !v.is_available() {
                    std::thread::sleep(Duration::from_micros(50));
                }
                (oom.into_inner())();
            }
        }
        let mut n = lock(&state.0);
        while *n > 0 {
            n = state.1.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    }

    fn quiesce(&self) {
        let s = &self.shared;
        let mut g = lock(&s.idle);
        while s.pending.load(Ordering::Acquire) > 0 {
            g = s.idle_cv.wait_timeout(g, Duration::from_millis(10)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn parallelism_level(&self) -> usize {
        self.workers
    }

    /// The workers, and the caller when it is not one of them.
    fn parallel_threads(&self) -> usize {
        self.workers + usize::from(!self.is_in_worker_thread())
    }

    fn is_in_worker_thread(&self) -> bool {
        IN_QUEUE.with(|q| q.get() == self.shared.id)
    }

    /// Up to one helper task per other worker claims indices beside the caller
    /// ([`IndexClaims`]); the caller then waits, spinning, for the indices the helpers
    /// claimed. A helper that starts after every index was claimed returns at once.
    fn parallel_for(&self, alloc: Allocator, n: usize, f: &(dyn Fn(usize) + Sync)) {
        // Every worker but the caller's own may help.
        let others = self.workers - usize::from(self.is_in_worker_thread());
        let helpers = others.min(n.saturating_sub(1));
        if helpers == 0 {
            return (0..n).for_each(f);
        }
        let claims = Arc::new(IndexClaims::new(n));
        // SAFETY: only the lifetime is erased. `f` is called only inside `IndexClaims::run`
        // for a claimed index below `n`, and this function returns only after `all_done`,
        // that is after every such call has returned or unwound (the caller's own share
        // included, caught below). A helper that runs later claims an index of `n` or more
        // and returns without calling `f`, so `f` is never called after its borrow ends.
        let erased: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
        for _ in 0..helpers {
            let c = claims.clone();
            match Task::new(alloc, move || c.run(erased)) {
                Ok(task) => self.add_task(task),
                // The allocator is exhausted: the caller runs what no helper takes.
                Err(_) => break,
            }
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| claims.run(f)));
        while !claims.all_done() {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        if let Err(panic) = mine {
            std::panic::resume_unwind(panic);
        }
    }
}

impl Drop for MultiThreadedWorkQueue {
    fn drop(&mut self) {
        self.quiesce();
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake.notify_all();
        self.shared.blocking_cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
