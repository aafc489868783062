//! Unit-test support: a host whose queue counts the tasks kernels enqueue, and a way to call
//! a kernel on a hand-built frame (as `hostrt-core`'s own kernel tests do).

extern crate std;

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::boxed::Box;
use std::sync::Mutex;

use hostrt_core::kernel::{AttrRef, KernelFn, KernelFrame, LocRef};
use hostrt_core::work_queue::AwaitError;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, ExecutionContext, HostContext, RcAsyncValue, RequestContext,
    SingleThreadedWorkQueue, Task,
};
use hostrt_std::SystemAllocator;

/// The single-threaded queue, counting what it is given.
#[derive(Debug, Default)]
pub(crate) struct CountingQueue {
    inner: SingleThreadedWorkQueue,
    tasks: AtomicUsize,
    blocking: AtomicUsize,
}

impl ConcurrentWorkQueue for CountingQueue {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn add_task(&self, task: Task) {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        self.inner.add_task(task)
    }
    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Option<Task> {
        self.blocking.fetch_add(1, Ordering::SeqCst);
        self.inner.add_blocking_task(task, allow_queuing)
    }
    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), AwaitError> {
        self.inner.await_values(values)
    }
    fn quiesce(&self) {
        self.inner.quiesce()
    }
    fn parallelism_level(&self) -> usize {
        self.inner.parallelism_level()
    }
    fn is_in_worker_thread(&self) -> bool {
        self.inner.is_in_worker_thread()
    }
}

/// What a test sees of its host.
pub(crate) struct Env<'a> {
    pub(crate) exec: &'a ExecutionContext<'a>,
    queue: &'a CountingQueue,
    output: &'a Mutex<String>,
    diags: &'a Mutex<Vec<String>>,
}

impl Env<'_> {
    /// Call kernel `k` on a frame over `args` and `attrs` with `n` result slots, located at
    /// `test.mlir:4:7`; return the result slots.
    pub(crate) fn call(
        &self,
        k: KernelFn,
        args: &[RcAsyncValue],
        attrs: &[AttrRef<'_>],
        n: usize,
    ) -> Vec<Option<RcAsyncValue>> {
        self.call_at(k, args, attrs, n, LocRef { file: "test.mlir", line: 4, column: 7 })
    }

    /// [`call`](Self::call) at another location.
    pub(crate) fn call_at(
        &self,
        k: KernelFn,
        args: &[RcAsyncValue],
        attrs: &[AttrRef<'_>],
        n: usize,
        at: LocRef<'_>,
    ) -> Vec<Option<RcAsyncValue>> {
        let slots: Vec<Cell<Option<RcAsyncValue>>> = (0..n).map(|_| Cell::new(None)).collect();
        let frame = KernelFrame::new(self.exec, args, attrs, &slots).with_location(at);
        k(&frame);
        slots.into_iter().map(Cell::into_inner).collect()
    }

    /// Call `k` and unwrap every result slot.
    pub(crate) fn results(
        &self,
        k: KernelFn,
        args: &[RcAsyncValue],
        attrs: &[AttrRef<'_>],
        n: usize,
    ) -> Vec<RcAsyncValue> {
        self.call(k, args, attrs, n).into_iter().map(|r| r.expect("result set")).collect()
    }

    /// A new available value.
    pub(crate) fn value<T: Send + Sync + 'static>(&self, v: T) -> RcAsyncValue {
        self.exec.host().make_available(v).unwrap().into_rc()
    }

    /// Non-blocking and blocking tasks enqueued so far.
    pub(crate) fn tasks(&self) -> (usize, usize) {
        (self.queue.tasks.load(Ordering::SeqCst), self.queue.blocking.load(Ordering::SeqCst))
    }

    /// Run every queued task.
    pub(crate) fn quiesce(&self) {
        self.queue.quiesce()
    }

    /// Take what was printed so far.
    pub(crate) fn take_output(&self) -> String {
        core::mem::take(&mut *self.output.lock().unwrap())
    }

    /// Take the diagnostics emitted so far (`location: message`).
    pub(crate) fn take_diags(&self) -> Vec<String> {
        core::mem::take(&mut *self.diags.lock().unwrap())
    }
}

/// Run `f` with a fresh host (system allocator, counting queue, empty registry). The queue
/// is quiesced before the host goes away, as the executor's contract requires.
pub(crate) fn with_host(f: impl FnOnce(&Env<'_>)) {
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let alloc = Allocator::register(system).unwrap();
    let queue = CountingQueue::default();
    let output = Mutex::new(String::new());
    let diags = Mutex::new(Vec::new());
    let sink = |a: core::fmt::Arguments<'_>| output.lock().unwrap().push_str(&a.to_string());
    let on_diag = |d: &Diagnostic| {
        let at = d.location.map(|l| l.to_string()).unwrap_or_default();
        diags.lock().unwrap().push(std::format!("{at}: {}", d.message()));
    };
    {
        let host = HostContext::new(alloc, &queue).with_output(&sink).with_diagnostics(&on_diag);
        let request = RequestContext::new();
        let exec = ExecutionContext::new(&host, &request);
        f(&Env { exec: &exec, queue: &queue, output: &output, diags: &diags });
        queue.quiesce();
    }
    // Everything a test made must be gone (tests that leak on purpose return early).
    assert_eq!(system.leak_report(), None, "host allocator leaked");
    alloc.unregister().unwrap();
}
