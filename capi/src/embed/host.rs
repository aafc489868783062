//! `hostrt_host`: the memory (an arena in caller memory, one hostrt allocates, or the system
//! heap) and the work queue (single-threaded, or N worker threads) that programs run on.

use std::ffi::{c_char, c_void};
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard};

use hostrt_core::allocator::{Allocator, FixedArena};
use hostrt_core::{ConcurrentWorkQueue, HostContext, SingleThreadedWorkQueue};
use hostrt_std::MultiThreadedWorkQueue;

use super::raw::{self, Kind};
use super::status::{
    Error, HOSTRT_FAILED_PRECONDITION, HOSTRT_INVALID_ARGUMENT, HOSTRT_OUT_OF_RANGE,
    HOSTRT_RESOURCE_EXHAUSTED, hostrt_code, hostrt_status, report,
};
use super::trace::TraceSwitch;
use crate::ffi::text;

/// How to make a host. Start from [`hostrt_host_options_init`]'s defaults: the system heap
/// and the single-threaded queue.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hostrt_host_options {
    /// `sizeof(hostrt_host_options)`, set by `hostrt_host_options_init`.
    pub struct_size: usize,
    /// Caller memory for the arena (`arena_bytes` bytes, valid until the host is
    /// destroyed; the arena starts at its first 64-byte boundary), or NULL for memory
    /// hostrt allocates (exactly `arena_bytes` of arena).
    pub arena: *mut c_void,
    /// The arena's size; 0 with `arena` NULL: no arena, the system heap.
    pub arena_bytes: usize,
    /// 0: the single-threaded queue (work runs on the calling thread); N: N worker threads.
    pub worker_threads: u32,
    /// Threads for blocking work (file reads) when `worker_threads` > 0.
    pub blocking_threads: u32,
}

impl Default for hostrt_host_options {
    /// No arena (the system heap), the single-threaded queue.
    fn default() -> Self {
        hostrt_host_options {
            struct_size: std::mem::size_of::<hostrt_host_options>(),
            arena: std::ptr::null_mut(),
            arena_bytes: 0,
            worker_threads: 0,
            blocking_threads: 0,
        }
    }
}

/// Allocator statistics of a host.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hostrt_allocator_stats {
    /// Bytes in use now.
    pub in_use: usize,
    /// The most bytes ever in use.
    pub peak: usize,
    /// Live allocations.
    pub live_allocations: usize,
    /// Allocations made so far.
    pub total_allocations: usize,
    /// Allocation requests refused.
    pub failed: usize,
    /// The arena's usable size: caller memory from its first 64-byte boundary on (0 for the
    /// system heap).
    pub capacity: usize,
}

/// A host (opaque): see the module docs.
pub struct hostrt_host {
    pub(crate) inner: Arc<HostInner>,
}

/// What a host owns; programs, tensors and results keep it alive. Fields drop in order: the
/// context borrows the queue, everything allocated from the arena is gone before it.
pub(crate) struct HostInner {
    context: HostContext<'static>,
    /// The context's observer and the queue's task observer: traces (`super::trace`).
    /// Declared after the context, which borrows it, so dropped after it.
    trace: Arc<TraceSwitch>,
    _queue: Box<dyn ConcurrentWorkQueue>,
    arena: Option<Arena>,
    /// Serializes calls on the single-threaded queue, which runs work on the caller's thread.
    call_lock: Option<Mutex<()>>,
}

/// The arena's two allocations, freed together on drop. Raw pointers: the arena holds the
/// memory as `&'static mut`, so no `Box` may claim it meanwhile.
struct Blocks {
    arena: *mut FixedArena,
    owned: Option<*mut [u8]>,
}

// SAFETY: the arena is only reached through its allocator handle, which is thread-safe; the
// raw pointers are owned boxes freed once, on drop.
unsafe impl Send for Blocks {}
// SAFETY: as above: shared access only reads the arena's capacity.
unsafe impl Sync for Blocks {}

impl Drop for Blocks {
    fn drop(&mut self) {
        // SAFETY: both boxes were leaked by `new_arena` for this object alone, and nothing
        // allocates from the arena any more (never registered, or unregistered).
        unsafe {
            drop(Box::from_raw(self.arena));
            if let Some(m) = self.owned {
                drop(Box::from_raw(m));
            }
        }
    }
}

/// An arena registered as an allocator; unregistered (and its blocks freed) on drop.
struct Arena {
    alloc: Allocator,
    blocks: ManuallyDrop<Blocks>,
}

impl Drop for Arena {
    fn drop(&mut self) {
        // If something made from the arena is still alive (a value leaked by its owner),
        // unregistering is refused: the blocks stay, rather than free memory in use.
        if self.alloc.unregister().is_ok() {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.blocks) }
        }
    }
}

impl HostInner {
    /// The host's context for running programs.
    pub(crate) fn context(&self) -> &HostContext<'static> {
        &self.context
    }

    /// The host's tracing (`hostrt_trace_begin`, `hostrt_trace_end`).
    pub(crate) fn trace(&self) -> &TraceSwitch {
        &self.trace
    }

    /// The allocator tensors and values of this host come from.
    pub(crate) fn allocator(&self) -> Allocator {
        self.context.allocator()
    }

    /// Held while a call runs on the single-threaded queue (calls on worker threads run
    /// concurrently).
    pub(crate) fn lock_calls(&self) -> Option<MutexGuard<'_, ()>> {
        self.call_lock.as_ref().map(|l| l.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Makes the arena of `options`.
///
/// # Safety
/// `options.arena` is NULL or `arena_bytes` writable bytes that outlive the host.
unsafe fn new_arena(options: &hostrt_host_options) -> Result<Option<Arena>, Error> {
    if options.arena.is_null() && options.arena_bytes == 0 {
        return Ok(None);
    }
    let (memory, owned): (*mut [u8], _) = if options.arena.is_null() {
        // Room for the arena's 64-byte start (`FixedArena::init`), so its capacity is
        // exactly `arena_bytes`.
        let align = hostrt_core::allocator::ARENA_ALIGN;
        let padded = options
            .arena_bytes
            .checked_add(align - 1)
            .ok_or_else(|| Error::invalid(format!("arena of {} bytes: too large", options.arena_bytes)))?;
        let m = Box::into_raw(vec![0u8; padded].into_boxed_slice());
        let skip = (m.cast::<u8>() as usize).wrapping_neg() % align;
        // SAFETY: `skip <= align - 1`, so `skip + arena_bytes <= padded`, the box's length
        // (computed without overflow above).
        let exact =
            std::ptr::slice_from_raw_parts_mut(unsafe { m.cast::<u8>().add(skip) }, options.arena_bytes);
        (exact, Some(m))
    } else {
        (std::ptr::slice_from_raw_parts_mut(options.arena.cast::<u8>(), options.arena_bytes), None)
    };
    let blocks = Blocks { arena: Box::into_raw(Box::new(FixedArena::empty())), owned };
    // SAFETY: `memory` is exclusively the arena's until the host is dropped (caller memory by
    // the contract, or the box above); the arena box lives as long (freed with `blocks`).
    let (arena_ref, memory) = unsafe { (&*blocks.arena, &mut *memory) };
    arena_ref
        .init(memory)
        .map_err(|e| Error::invalid(format!("arena of {} bytes: {e:?}", options.arena_bytes)))?;
    let alloc = Allocator::register(arena_ref).map_err(|_| {
        Error::new(HOSTRT_RESOURCE_EXHAUSTED, "every allocator slot is taken (too many hosts)")
    })?;
    Ok(Some(Arena { alloc, blocks: ManuallyDrop::new(blocks) }))
}

/// A host made as `o` says.
///
/// # Safety
/// `o.arena` is NULL or `o.arena_bytes` writable bytes that outlive the host.
pub(crate) unsafe fn new_host(o: &hostrt_host_options) -> Result<Arc<HostInner>, Error> {
    // SAFETY: the caller's contract, passed on.
    let arena = unsafe { new_arena(o) }?;
    let alloc = match &arena {
        Some(a) => a.alloc,
        None => crate::tf::tf_tensor::heap()
            .ok_or_else(|| Error::new(HOSTRT_RESOURCE_EXHAUSTED, "every allocator slot is taken"))?,
    };
    let trace = Arc::new(TraceSwitch::default());
    let queue: Box<dyn ConcurrentWorkQueue> = if o.worker_threads == 0 {
        Box::new(SingleThreadedWorkQueue::new())
    } else {
        let queue = MultiThreadedWorkQueue::new(o.worker_threads as usize, o.blocking_threads as usize);
        queue.set_task_observer(trace.clone());
        Box::new(queue)
    };
    // SAFETY: the queue is boxed and the switch shared (stable addresses), and both are
    // dropped after the context, which is declared before them in `HostInner`.
    let (q, observer): (&'static dyn ConcurrentWorkQueue, &'static TraceSwitch) =
        unsafe { (&*std::ptr::from_ref(&*queue), &*Arc::as_ptr(&trace)) };
    let context = HostContext::new(alloc, q).with_observer(observer);
    let call_lock = (o.worker_threads == 0).then(|| Mutex::new(()));
    Ok(Arc::new(HostInner { context, trace, _queue: queue, arena, call_lock }))
}

/// Sets `options` to the defaults: no arena (the system heap), the single-threaded queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_host_options_init(options: *mut hostrt_host_options) {
    // SAFETY: NULL or writable, by the contract.
    if let Some(o) = unsafe { options.as_mut() } {
        *o = hostrt_host_options::default();
    }
}

/// A new host made as `options` say (NULL: the defaults), or NULL with the reason in
/// `status`: an arena too small, no allocator slot left, a bad `struct_size`.
///
/// Thread-safety: a host may be used from any thread; on the single-threaded queue its
/// calls run one at a time.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_host_new(
    options: *const hostrt_host_options,
    status: *mut hostrt_status,
) -> *mut hostrt_host {
    let mut out = std::ptr::null_mut();
    // SAFETY: `status` is the caller's; `options` NULL or readable, by the contract.
    unsafe {
        report(status, || {
            let mut o = hostrt_host_options::default();
            if let Some(given) = options.as_ref() {
                if given.struct_size != std::mem::size_of::<hostrt_host_options>() {
                    return Err(Error::invalid(
                        "hostrt_host_options.struct_size is wrong: start from hostrt_host_options_init",
                    ));
                }
                o = *given;
            }
            let inner = new_host(&o)?;
            out = raw::publish(Kind::Host, hostrt_host { inner })?;
            Ok(())
        })
    };
    out
}

/// Destroys a host. Refused with `HOSTRT_FAILED_PRECONDITION` (the host stays usable) while
/// programs, tensors, results or calls made from it are alive: destroy those first. Caller
/// arena memory may be reused once this returns `HOSTRT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_host_destroy(
    host: *mut hostrt_host,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table; `status` is the caller's.
    unsafe {
        report(status, || {
            let h = raw::get(host, Kind::Host).map_err(Error::invalid)?;
            let users = Arc::strong_count(&h.inner) - 1;
            if users > 0 {
                return Err(Error::new(
                    HOSTRT_FAILED_PRECONDITION,
                    format!(
                        "the host still has {users} programs, tensors, results or calls: destroy them first"
                    ),
                ));
            }
            drop(raw::take(host, Kind::Host));
            Ok(())
        })
    }
}

/// The host's allocator statistics, written to `*stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_host_allocator_stats(
    host: *const hostrt_host,
    stats: *mut hostrt_allocator_stats,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table; `stats` NULL or writable, by the contract.
    unsafe {
        report(status, || {
            let h = raw::get(host, Kind::Host).map_err(Error::invalid)?;
            let out = stats.as_mut().ok_or_else(|| Error::invalid("NULL hostrt_allocator_stats"))?;
            let s = h.inner.allocator().stats().unwrap_or_default();
            let capacity = h.inner.arena.as_ref().map_or(0, |a| (*a.blocks.arena).capacity());
            *out = hostrt_allocator_stats {
                in_use: s.in_use,
                peak: s.peak,
                live_allocations: s.live_allocations,
                total_allocations: s.total_allocations,
                failed: s.failed,
                capacity,
            };
            Ok(())
        })
    }
}

/// Loads a plugin (a shared object written against TensorFlow's C API, docs/capi.md) for
/// every host and program of the process. Loading the same file again does nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_load_plugin(path: *const c_char, status: *mut hostrt_status) -> hostrt_code {
    // SAFETY: `path` NULL or a C string, by the contract; `status` is the caller's.
    unsafe {
        report(status, || {
            let path = text(path).ok_or_else(|| Error::invalid("NULL plugin path"))?;
            crate::tf::std_ops::register_standard_ops();
            crate::tf::plugins::load_plugin(std::path::Path::new(&*path))
                .map(drop)
                .map_err(|m| Error::new(HOSTRT_INVALID_ARGUMENT, m))
        })
    }
}

/// Starts tracing `host`: from now until [`hostrt_trace_end`], every kernel, call and
/// work-queue task of the host is recorded as a span on the thread that ran it.
/// `HOSTRT_FAILED_PRECONDITION` while a trace runs, or while an ended one has not been read.
/// Spans of work running as the trace begins or ends are cut at that moment.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_trace_begin(
    host: *const hostrt_host,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: the handle is checked by the table; `status` is the caller's.
    unsafe { report(status, || raw::get(host, Kind::Host).map_err(Error::invalid)?.inner.trace().begin()) }
}

/// Ends `host`'s trace and writes it into `buffer` as JSON (Chrome's trace event format,
/// which ui.perfetto.dev and chrome://tracing open; not NUL-terminated). `*size` holds the
/// buffer's capacity and receives the trace's length. When the trace does not fit (or
/// `buffer` is NULL) nothing is written, `*size` receives the length needed, the code is
/// `HOSTRT_OUT_OF_RANGE`, and the trace is kept for the next call. `HOSTRT_FAILED_PRECONDITION`
/// when no trace was begun.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_trace_end(
    host: *const hostrt_host,
    buffer: *mut c_char,
    size: *mut usize,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: the handle is checked by the table; `size` NULL or read-write, `buffer` NULL or
    // `*size` writable bytes, by the contract; `status` is the caller's.
    unsafe {
        report(status, || {
            let size = size.as_mut().ok_or_else(|| Error::invalid("NULL size"))?;
            raw::get(host, Kind::Host).map_err(Error::invalid)?.inner.trace().end(|json| {
                let capacity = std::mem::replace(size, json.len());
                if buffer.is_null() || capacity < json.len() {
                    return Err(Error::new(
                        HOSTRT_OUT_OF_RANGE,
                        format!(
                            "the trace is {} bytes, the buffer {capacity}: it is kept for the next call",
                            json.len()
                        ),
                    ));
                }
                std::ptr::copy_nonoverlapping(json.as_ptr(), buffer.cast::<u8>(), json.len());
                Ok(true)
            })
        })
    }
}

/// Ends `host`'s trace and writes it to the file at `path` (as [`hostrt_trace_end`]). When
/// the file cannot be written the code says why and the trace is kept for the next call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_trace_end_to_file(
    host: *const hostrt_host,
    path: *const c_char,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: the handle is checked by the table; `path` NULL or a C string; `status` is the
    // caller's.
    unsafe {
        report(status, || {
            let path = text(path).ok_or_else(|| Error::invalid("NULL trace path"))?;
            raw::get(host, Kind::Host).map_err(Error::invalid)?.inner.trace().end(|json| {
                std::fs::write(&*path, json).map(|()| true).map_err(|e| {
                    Error::new(HOSTRT_FAILED_PRECONDITION, format!("{path}: {e}: the trace is kept"))
                })
            })
        })
    }
}

/// The host behind a handle, shared.
///
/// # Safety
/// As for `raw::get`.
pub(crate) unsafe fn host(h: *const hostrt_host) -> Result<Arc<HostInner>, Error> {
    // SAFETY: the caller's contract, passed on.
    unsafe { raw::get(h, Kind::Host) }.map(|h| h.inner.clone()).map_err(Error::invalid)
}
