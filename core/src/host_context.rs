//! The environment kernels run in: [`HostContext`] (allocator, work queue, output sinks)
//! and, per request, [`RequestContext`] (cancellation), joined in an [`ExecutionContext`].

use core::fmt;
use core::ptr::{self, NonNull};

use portable_atomic::{AtomicPtr, Ordering};

use crate::allocator::{AllocError, Allocator, OutOfMemory};
use crate::async_value::{AsyncValue, AsyncValueRef, IndirectAsyncValue, RcAsyncValue};
use crate::diagnostic::Diagnostic;
#[cfg(feature = "kept-buffer")]
use crate::tensor::HostBuffer;
use crate::work_queue::{AwaitError, ConcurrentWorkQueue, Task};

/// Shared host resources: where memory comes from, where work runs, where output goes.
///
/// Kernels are not part of it: a [`KernelRegistry`](crate::KernelRegistry) is needed only
/// while a program is loaded, which resolves every kernel name once.
pub struct HostContext<'a> {
    allocator: Allocator,
    work_queue: &'a dyn ConcurrentWorkQueue,
    output: Option<&'a OutputSink<'a>>,
    diagnostics: Option<&'a DiagnosticSink<'a>>,
    max_call_depth: u32,
    /// Whether ready kernels of other streams become work-queue tasks (see
    /// [`with_stream_tasks`](Self::with_stream_tasks)).
    stream_tasks: bool,
    /// A block kept for the next call (the executor keeps the last finished call's frame
    /// block here): opaque to the host, which only frees it when it goes.
    kept: KeptBlock,
    /// A buffer kept for the next call that asks for one of its size ([`HostContext::take_buffer`]).
    #[cfg(feature = "kept-buffer")]
    kept_buffer: KeptBuffer,
    /// Told of every kernel and call run on this host (docs/profiling.md).
    #[cfg(feature = "profile")]
    observer: Option<&'a dyn crate::observe::Observer>,
}

/// What a block kept in a [`KeptBlock`] starts with: the function that frees it. Its owner
/// writes it over the block's first bytes when it hands the block in, so the host can free
/// a block it knows nothing else about.
#[repr(C)]
pub(crate) struct KeptHeader {
    /// Frees the block this header starts.
    pub(crate) free: unsafe fn(NonNull<KeptHeader>),
}

/// One block kept for the host's next call (docs/execution.md, "Frame blocks"): whoever
/// takes it out owns it; the host frees a block still kept when it goes, so the block is
/// back in its allocator before the allocator can go away.
pub(crate) struct KeptBlock {
    /// Model-checked under loom (`core/loom/tests/loom.rs`), hence `crate::sync`.
    block: crate::sync::AtomicPtr<KeptHeader>,
}

impl KeptBlock {
    fn new() -> Self {
        KeptBlock { block: crate::sync::AtomicPtr::new(ptr::null_mut()) }
    }

    /// The kept block, if any, now owned by the caller.
    pub(crate) fn take(&self) -> Option<NonNull<KeptHeader>> {
        if self.block.load(crate::sync::Ordering::Relaxed).is_null() {
            return None; // the common miss costs no locked instruction
        }
        // Acquire: the writes of the thread that kept the block happen before our use.
        NonNull::new(self.block.swap(ptr::null_mut(), crate::sync::Ordering::Acquire))
    }

    /// Keep `block`; when a block is kept already, `block` is handed back.
    ///
    /// # Safety
    /// `block` starts with a [`KeptHeader`] whose `free` frees it, and nobody uses it.
    pub(crate) unsafe fn keep(&self, block: NonNull<KeptHeader>) -> Result<(), NonNull<KeptHeader>> {
        let (empty, ord) = (ptr::null_mut(), crate::sync::Ordering::Release);
        match self.block.compare_exchange(empty, block.as_ptr(), ord, crate::sync::Ordering::Relaxed) {
            Ok(_) => Ok(()),
            Err(_) => Err(block),
        }
    }

    /// Free the kept block, if any.
    fn trim(&self) {
        if let Some(block) = self.take() {
            // SAFETY: taken out, so ours; `keep`'s contract: it starts with the header of
            // the function that frees it.
            unsafe { (block.as_ref().free)(block) };
        }
    }
}

impl Drop for KeptBlock {
    fn drop(&mut self) {
        self.trim();
    }
}

#[cfg(feature = "kept-buffer")]
/// One [`HostBuffer`] handle kept between calls (a model's activation arena): whoever takes
/// it out owns the handle; the host drops one still kept when it goes.
struct KeptBuffer {
    /// A handle given up by `HostBuffer::into_kept`, or null.
    block: crate::sync::AtomicPtr<()>,
}

#[cfg(feature = "kept-buffer")]
impl KeptBuffer {
    fn new() -> Self {
        KeptBuffer { block: crate::sync::AtomicPtr::new(ptr::null_mut()) }
    }

    fn take(&self) -> Option<HostBuffer> {
        if self.block.load(crate::sync::Ordering::Relaxed).is_null() {
            return None; // the common miss costs no locked instruction
        }
        // Acquire: the keeping thread's writes happen before our use.
        let block = NonNull::new(self.block.swap(ptr::null_mut(), crate::sync::Ordering::Acquire))?;
        // SAFETY: a block in the slot is a handle `into_kept` gave up, taken out once (swap).
        Some(unsafe { HostBuffer::from_kept(block) })
    }

    fn keep(&self, buffer: HostBuffer) {
        let Some(block) = buffer.into_kept() else { return };
        let (empty, ord) = (ptr::null_mut(), crate::sync::Ordering::Release);
        if self.block.compare_exchange(empty, block.as_ptr(), ord, crate::sync::Ordering::Relaxed).is_err() {
            // Full: the handle goes.
            // SAFETY: `block` came from `into_kept` just above and was not stored.
            drop(unsafe { HostBuffer::from_kept(block) });
        }
    }
}

#[cfg(feature = "kept-buffer")]
impl Drop for KeptBuffer {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// Default for [`HostContext::with_max_call_depth`]: synchronous function calls nested
/// deeper than this start in a work-queue task instead (each level costs a few KiB of
/// stack on a host).
pub const DEFAULT_MAX_CALL_DEPTH: u32 = 64;

/// Receives errors that kernels report (TFRT's diagnostic handler): a driver prints them as
/// `file:line:col: runtime error: message` or checks them against `expected-error`.
pub type DiagnosticSink<'a> = dyn Fn(&Diagnostic) + Sync + 'a;

/// Where print kernels write (stdout on a host, semihosting or a UART on firmware).
pub type OutputSink<'a> = dyn Fn(fmt::Arguments<'_>) + Sync + 'a;

impl fmt::Debug for HostContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostContext")
            .field("allocator", &self.allocator)
            .field("work_queue", &self.work_queue.name())
            .finish_non_exhaustive()
    }
}

impl<'a> HostContext<'a> {
    /// Assemble a host context.
    pub fn new(allocator: Allocator, work_queue: &'a dyn ConcurrentWorkQueue) -> Self {
        HostContext {
            allocator,
            work_queue,
            output: None,
            diagnostics: None,
            max_call_depth: DEFAULT_MAX_CALL_DEPTH,
            stream_tasks: work_queue.parallelism_level() > 1,
            kept: KeptBlock::new(),
            #[cfg(feature = "kept-buffer")]
            kept_buffer: KeptBuffer::new(),
            #[cfg(feature = "profile")]
            observer: None,
        }
    }

    /// The host's slot for one block kept between calls (the executor's last frame block).
    pub(crate) fn kept_block(&self) -> &KeptBlock {
        &self.kept
    }

    /// Give back the memory the host keeps between calls: the last finished call's executor
    /// frame block, which the next call of the same size would reuse (docs/execution.md,
    /// "Frame blocks"). For an embedder that checks its arena is whole while the host lives,
    /// or needs the memory elsewhere; dropping the host does the same. Safe at any time, also
    /// while calls run on other threads.
    ///
    /// ```
    /// use hostrt_core::allocator::HostAllocator;
    /// use hostrt_core::basic_kernels::integer;
    /// use hostrt_core::executor::Program;
    /// use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
    ///
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(8 * 1024).unwrap()).unwrap();
    /// static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
    /// let host = HostContext::new(Allocator::register(&ARENA).unwrap(), &QUEUE);
    /// let registry = KernelRegistry::<1>::with_entries(&[integer::ADD_I32]).unwrap();
    /// let text = "func.func @twice(%a: i32) -> i32 {\n  %b = tfrt.add.i32 %a, %a\n  tfrt.return %b : i32\n}";
    /// let bef = hostrt_compiler::compile("twice.mlir", text, Default::default()).unwrap();
    /// let bef = hostrt_std::AlignedBytes::new(&bef);
    /// let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
    /// let one = host.make_available(1i32).unwrap().into_rc();
    /// drop(program.call(&host, "twice", &[one]).unwrap());
    /// drop(program);
    /// assert!(ARENA.stats().unwrap().in_use > 0); // the frame block kept for the next call
    /// host.trim();
    /// assert_eq!(ARENA.stats().unwrap().in_use, 0);
    /// ```
    pub fn trim(&self) {
        self.kept.trim();
        #[cfg(feature = "kept-buffer")]
        drop(self.kept_buffer.take());
    }

    /// A buffer of `size` bytes kept by [`keep_buffer`](Self::keep_buffer), holding what
    /// its last user left in it, when the host keeps one of that size and nothing else holds
    /// it any more; `None` otherwise (a kept buffer of another size is let go). For kernels
    /// that need the same large scratch on every call: a model's activation arena is reused
    /// instead of allocated and zeroed per call.
    ///
    /// ```
    /// use hostrt_core::allocator::HostAllocator;
    /// use hostrt_core::tensor::HostBuffer;
    /// use hostrt_core::{Allocator, FixedArena, HostContext, SingleThreadedWorkQueue};
    ///
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
    /// static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
    /// let host = HostContext::new(Allocator::register(&ARENA).unwrap(), &QUEUE);
    /// let buffer = HostBuffer::allocate(host.allocator(), 256).unwrap();
    /// host.keep_buffer(buffer.clone());
    /// assert!(host.take_buffer(256).is_none()); // still held by `buffer`
    /// host.keep_buffer(buffer);
    /// let again = host.take_buffer(256).unwrap();
    /// assert_eq!(again.len(), 256);
    /// host.keep_buffer(again);
    /// host.trim();
    /// assert_eq!(ARENA.stats().unwrap().in_use, 0);
    /// ```
    #[cfg(feature = "kept-buffer")]
    pub fn take_buffer(&self, size: usize) -> Option<HostBuffer> {
        let buffer = self.kept_buffer.take()?;
        (buffer.len() == size && buffer.is_unique()).then_some(buffer)
    }

    /// Keep `buffer` (a whole, writable one) for a later [`take_buffer`](Self::take_buffer),
    /// also while other handles on it live; when the host keeps one already, or `buffer` is a
    /// window or read-only, the handle is dropped instead. [`trim`](Self::trim) and dropping
    /// the host let it go.
    #[cfg(feature = "kept-buffer")]
    pub fn keep_buffer(&self, buffer: HostBuffer) {
        self.kept_buffer.keep(buffer);
    }

    /// Nested synchronous function calls (`tfrt.call`, `tfrt.if`, ... inside each other)
    /// beyond `depth` start with the asynchronous kick-off, in a new work-queue task, so
    /// deep or unbounded recursion cannot overflow the stack. Firmware with a small stack
    /// lowers it. With `std` each thread counts its own calls; without it the count is
    /// shared by all threads, so under a multi-threaded queue it only ever starts calls in
    /// tasks earlier than needed.
    pub fn with_max_call_depth(mut self, depth: u32) -> Self {
        self.max_call_depth = depth;
        self
    }

    /// See [`with_max_call_depth`](Self::with_max_call_depth).
    pub fn max_call_depth(&self) -> u32 {
        self.max_call_depth
    }

    /// Whether a program's ready kernels of other streams (TFRT's streams, which the
    /// compiler assigns) become work-queue tasks, so that other threads can run them. By
    /// default they do on a queue that runs tasks in parallel
    /// ([`parallelism_level`](ConcurrentWorkQueue::parallelism_level) above 1); on one that
    /// runs one task at a time they run in the task that readied them instead, as a program
    /// compiled with `--single-stream` does (docs/execution.md, "Streams on one thread").
    /// `true` makes them tasks there too: TFRT's scheduling order, at a few hundred
    /// instructions per task.
    pub fn with_stream_tasks(mut self, on: bool) -> Self {
        self.stream_tasks = on;
        self
    }

    /// See [`with_stream_tasks`](Self::with_stream_tasks).
    pub fn stream_tasks(&self) -> bool {
        self.stream_tasks
    }

    /// Send the output of print kernels to `sink` (without one, it is discarded).
    pub fn with_output(mut self, sink: &'a OutputSink<'a>) -> Self {
        self.output = Some(sink);
        self
    }

    /// Send errors reported by kernels to `sink`.
    pub fn with_diagnostics(mut self, sink: &'a DiagnosticSink<'a>) -> Self {
        self.diagnostics = Some(sink);
        self
    }

    /// Tell `observer` of every kernel and call that runs on this host (a profiler, a
    /// tracer: docs/profiling.md).
    #[cfg(feature = "profile")]
    pub fn with_observer(mut self, observer: &'a dyn crate::observe::Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The observer, if one is installed.
    #[cfg(feature = "profile")]
    #[inline]
    pub fn observer(&self) -> Option<&'a dyn crate::observe::Observer> {
        self.observer
    }

    /// Emit a kernel-reported error to the diagnostic sink, if any.
    pub fn emit_error(&self, diag: &Diagnostic) {
        if let Some(sink) = self.diagnostics {
            sink(diag);
        }
    }

    /// Write formatted output through the sink, if any.
    pub fn print(&self, args: fmt::Arguments<'_>) {
        if let Some(out) = self.output {
            out(args);
        }
    }

    /// The allocator every runtime object of this host comes from.
    #[inline]
    pub fn allocator(&self) -> Allocator {
        self.allocator
    }

    /// The work queue.
    #[inline]
    pub fn work_queue(&self) -> &'a dyn ConcurrentWorkQueue {
        self.work_queue
    }

    /// Run `f` on the work queue. On allocator exhaustion the closure is returned unrun.
    pub fn enqueue_work<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), OutOfMemory<F>> {
        let task = Task::new(self.allocator, f)?;
        self.work_queue.add_task(task);
        Ok(())
    }

    /// Run blocking `f` on the queue's blocking pool (see
    /// [`ConcurrentWorkQueue::add_blocking_task`]). Fails if the task cannot be allocated or
    /// the queue refuses it.
    pub fn enqueue_blocking_work<F: FnOnce() + Send + 'static>(
        &self,
        f: F,
        allow_queuing: bool,
    ) -> Result<(), Diagnostic> {
        let task = Task::new(self.allocator, f)
            .map_err(|_| Diagnostic::from(AllocError::new(core::alloc::Layout::new::<F>())))?;
        match self.work_queue.add_blocking_task(task, allow_queuing) {
            None => Ok(()),
            Some(_) => Err(Diagnostic::new(
                crate::diagnostic::ErrorCode::Unavailable,
                "work queue refused a blocking task that may not be queued",
            )),
        }
    }

    /// Block until `values` are available (see [`ConcurrentWorkQueue::await_values`]).
    pub fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), AwaitError> {
        self.work_queue.await_values(values)
    }

    /// Block until no work is pending.
    pub fn quiesce(&self) {
        self.work_queue.quiesce()
    }

    /// A new available value.
    pub fn make_available<T: Send + Sync + 'static>(&self, value: T) -> Result<AsyncValueRef<T>, AllocError> {
        AsyncValueRef::available(self.allocator, value)
    }

    /// A new unavailable value, completed later.
    pub fn make_unconstructed<T: Send + Sync + 'static>(&self) -> Result<AsyncValueRef<T>, AllocError> {
        AsyncValueRef::unconstructed(self.allocator)
    }

    /// A new error value.
    pub fn make_error(&self, diag: Diagnostic) -> Result<RcAsyncValue, AllocError> {
        RcAsyncValue::error(self.allocator, diag)
    }

    /// A new unresolved indirect value.
    pub fn make_indirect(&self) -> Result<IndirectAsyncValue, AllocError> {
        IndirectAsyncValue::new(self.allocator)
    }
}

/// A host stands for its allocator where one is asked for (`Program::load(bytes, &registry,
/// &host)`), so the allocator is named once, when the host is made.
impl From<&HostContext<'_>> for Allocator {
    fn from(host: &HostContext<'_>) -> Allocator {
        host.allocator()
    }
}

/// Per-request state: cancellation.
///
/// Cancelling stores an error value; every kernel dispatched for this request afterwards is
/// skipped and its results become that error.
pub struct RequestContext {
    cancel: AtomicPtr<AsyncValue>,
    once: critical_section::Mutex<core::cell::RefCell<OnceTable>>,
}

/// Results remembered by `tfrt.once` for one request: function index and its results.
type OnceTable = heapless::Vec<(u32, heapless::Vec<RcAsyncValue, MAX_ONCE_RESULTS>), MAX_ONCE_FUNCTIONS>;

/// `tfrt.once` could not remember more functions or results in this request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnceTableFull;

/// How many distinct `tfrt.once` functions one request can remember.
pub const MAX_ONCE_FUNCTIONS: usize = 8;
/// How many results a `tfrt.once` function can have.
pub const MAX_ONCE_RESULTS: usize = 4;

impl Default for RequestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext").field("cancelled", &self.is_cancelled()).finish()
    }
}

impl RequestContext {
    /// A request that is not cancelled.
    pub const fn new() -> Self {
        RequestContext {
            cancel: AtomicPtr::new(ptr::null_mut()),
            once: critical_section::Mutex::new(core::cell::RefCell::new(heapless::Vec::new())),
        }
    }

    /// Cancel with `error` (an available error value). The first cancellation wins; later
    /// calls return `false` and drop their value.
    pub fn cancel_with(&self, error: RcAsyncValue) -> bool {
        debug_assert!(error.is_error());
        let raw = error.into_raw();
        match self.cancel.compare_exchange(ptr::null_mut(), raw.as_ptr(), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: not stored: re-adopt and drop our reference.
                drop(unsafe { RcAsyncValue::from_raw(raw) });
                false
            }
        }
    }

    /// Cancel with a `CANCELLED` error allocated from `alloc`.
    pub fn cancel(&self, alloc: Allocator) -> Result<bool, AllocError> {
        Ok(self.cancel_with(RcAsyncValue::error(alloc, Diagnostic::cancelled())?))
    }

    /// The results `tfrt.once` remembered for `function` in this request, if any.
    pub fn once_results(&self, function: u32) -> Option<heapless::Vec<RcAsyncValue, MAX_ONCE_RESULTS>> {
        critical_section::with(|cs| {
            self.once.borrow_ref(cs).iter().find(|(f, _)| *f == function).map(|(_, r)| r.clone())
        })
    }

    /// Remember `results` for `function` (the first call wins). Fails when the table or the
    /// result list is full.
    pub fn remember_once(&self, function: u32, results: &[RcAsyncValue]) -> Result<(), OnceTableFull> {
        let list: heapless::Vec<RcAsyncValue, MAX_ONCE_RESULTS> =
            heapless::Vec::from_slice(results).map_err(|_| OnceTableFull)?;
        critical_section::with(|cs| {
            let mut table = self.once.borrow_ref_mut(cs);
            if table.iter().any(|(f, _)| *f == function) {
                return Ok(());
            }
            table.push((function, list)).map_err(|_| OnceTableFull)
        })
    }

    /// Whether the request was cancelled.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        !self.cancel.load(Ordering::Relaxed).is_null()
    }

    /// The cancellation error value, if cancelled.
    pub fn cancel_value(&self) -> Option<RcAsyncValue> {
        let p = NonNull::new(self.cancel.load(Ordering::Acquire))?;
        // SAFETY: once stored, the value is owned by this context until it is dropped, which
        // cannot happen while `&self` is borrowed.
        Some(unsafe { RcAsyncValue::clone_from_ptr(p) })
    }
}

impl Drop for RequestContext {
    fn drop(&mut self) {
        if let Some(p) = NonNull::new(*self.cancel.get_mut()) {
            // SAFETY: the context owned this reference.
            drop(unsafe { RcAsyncValue::from_raw(p) });
        }
    }
}

/// What a kernel sees of its environment: the host and the current request.
#[derive(Clone, Copy, Debug)]
pub struct ExecutionContext<'a> {
    host: &'a HostContext<'a>,
    request: &'a RequestContext,
}

impl<'a> ExecutionContext<'a> {
    /// Join a host and a request.
    pub fn new(host: &'a HostContext<'a>, request: &'a RequestContext) -> Self {
        ExecutionContext { host, request }
    }

    /// The host context.
    #[inline]
    pub fn host(&self) -> &'a HostContext<'a> {
        self.host
    }

    /// The request context.
    #[inline]
    pub fn request(&self) -> &'a RequestContext {
        self.request
    }

    /// The host's allocator.
    #[inline]
    pub fn allocator(&self) -> Allocator {
        self.host.allocator()
    }
}
