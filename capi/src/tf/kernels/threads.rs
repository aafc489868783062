//! The seed's device API for host kernels (`hostrt/tf_device_api.h`): `TF_ThreadPool_*` on
//! hostrt's work queue, the `TF_FuncWrap` closure, and `TF_OpKernelContext_UpdateStatus`.
//!
//! `ParallelFor` splits `[0, total)` into shards that the calling kernel and up to
//! `parallelism_level() - 1` helper tasks on the work queue claim one at a time; the caller
//! returns when every shard ran. A helper that starts late finds nothing left, so the call
//! never waits on a queue that cannot run its helpers (on the single-threaded queue the
//! caller runs every shard inline). `Schedule` queues its function as a task (run in the
//! caller when there is no queue or no room for the task).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use hostrt_core::HostContext;

use super::TF_OpKernelContext;
use crate::tf::tf_status::{TF_OK, TF_Status, report};

/// The kernel execution running on this thread, and its host (set by `KernelSite`).
#[derive(Clone, Copy)]
struct Current {
    ctx: *mut TF_OpKernelContext,
    host: Option<*const HostContext<'static>>,
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// Runs `f` with `ctx` (on `host`) as this thread's current kernel execution.
pub(crate) fn with_current<R>(
    ctx: *mut TF_OpKernelContext,
    host: Option<&HostContext<'_>>,
    f: impl FnOnce() -> R,
) -> R {
    // The host outlives the call; the pointer is read only while `f` runs.
    let host = host.map(|h| std::ptr::from_ref(h).cast::<HostContext<'static>>());
    let before = CURRENT.with(|c| c.replace(Some(Current { ctx, host })));
    /// Restores the previous context, also when `f` unwinds (a panicking plugin).
    struct Restore(Option<Current>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// The host of the execution `ctx`, when it is this thread's current one.
fn host_of<'a>(ctx: *mut TF_OpKernelContext) -> Option<&'a HostContext<'a>> {
    let cur = CURRENT.with(Cell::get)?;
    if cur.ctx != ctx {
        return None;
    }
    // SAFETY: set by `with_current` for the duration of the kernel's compute, which is
    // running (this call comes from inside it); the host outlives that call.
    cur.host.map(|h| unsafe { &*h })
}

/// Queues `task` on the host's work queue, or runs it now when that is not possible.
fn schedule(ctx: *mut TF_OpKernelContext, task: impl FnOnce() + Send + 'static) {
    match host_of(ctx) {
        Some(host) => {
            if let Err(back) = host.enqueue_work(task) {
                (back.0)();
            }
        }
        None => task(),
    }
}

/// A function pointer the plugin handed over, callable from any thread (TensorFlow's
/// thread-pool contract).
#[derive(Clone, Copy)]
struct Sendable<F>(F);
// SAFETY: plain C function pointers; the C API requires them to be callable from any thread.
unsafe impl<F> Send for Sendable<F> {}
// SAFETY: as above.
unsafe impl<F> Sync for Sendable<F> {}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ThreadPool_Schedule(
    context: *mut TF_OpKernelContext,
    fn_: Option<unsafe extern "C" fn()>,
) {
    let Some(f) = fn_ else { return };
    let f = Sendable(f);
    // SAFETY: the plugin's function, called once.
    schedule(context, move || unsafe { (f.0)() });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ThreadPool_ScheduleWithHint(
    context: *mut TF_OpKernelContext,
    fn_: Option<unsafe extern "C" fn()>,
    start: c_int,
    limit: c_int,
) {
    let _ = (start, limit);
    // SAFETY: the caller's contract, passed on (the hint picks no thread here).
    unsafe { TF_ThreadPool_Schedule(context, fn_) }
}

/// A closure handed across the C API (the seed's `FuncWrap`): `call_func_ptr(func_ptr)` runs
/// it, `delete_func_ptr(func_ptr)` frees it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TF_FuncWrap {
    /// The closure's state.
    pub func_ptr: *mut c_void,
    /// Calls it.
    pub call_func_ptr: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Frees it.
    pub delete_func_ptr: Option<unsafe extern "C" fn(*mut c_void)>,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ThreadPool_ScheduleFuncWrap(context: *mut TF_OpKernelContext, func: TF_FuncWrap) {
    let func = Sendable(func);
    schedule(context, move || {
        let whole = func; // capture the Sendable, not its (non-Send) field
        let f = whole.0;
        // SAFETY: the plugin's closure, called once and then freed once, as FuncWrap says.
        unsafe {
            if let Some(call) = f.call_func_ptr {
                call(f.func_ptr);
            }
            if let Some(delete) = f.delete_func_ptr {
                delete(f.func_ptr);
            }
        }
    });
}

/// Shards of one `ParallelFor` and who finished them.
struct Shards {
    next: AtomicI64,
    count: i64,
    block: i64,
    total: i64,
    done: Mutex<i64>,
    all_done: Condvar,
}

impl Shards {
    /// Claims and runs shards until none is left.
    fn run(&self, body: &dyn Fn(i64, i64)) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.count {
                return;
            }
            let start = i * self.block;
            body(start, (start + self.block).min(self.total));
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            *done += 1;
            if *done == self.count {
                self.all_done.notify_all();
            }
        }
    }
}

/// `ParallelFor` over `[0, total)`: `body(start, end, worker)` on the caller (worker 0) and
/// helper tasks (workers 1..).
fn parallel_for(ctx: *mut TF_OpKernelContext, total: i64, body: Arc<dyn Fn(i64, i64, c_int) + Send + Sync>) {
    if total <= 0 {
        return;
    }
    let host = host_of(ctx);
    let workers = host.map_or(1, |h| h.work_queue().parallelism_level()).max(1) as i64;
    if workers == 1 {
        return body(0, total, 0);
    }
    let count = total.min(4 * workers);
    let block = (total + count - 1) / count;
    let shards = Arc::new(Shards {
        next: AtomicI64::new(0),
        count: (total + block - 1) / block,
        block,
        total,
        done: Mutex::new(0),
        all_done: Condvar::new(),
    });
    if let Some(host) = host {
        for w in 1..workers.min(shards.count) {
            let (s, b) = (shards.clone(), body.clone());
            let _ = host.enqueue_work(move || s.run(&|a, e| b(a, e, w as c_int)));
        }
    }
    shards.run(&|a, e| body(a, e, 0));
    let mut done = shards.done.lock().unwrap_or_else(|e| e.into_inner());
    while *done < shards.count {
        done = shards.all_done.wait(done).unwrap_or_else(|e| e.into_inner());
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ThreadPool_ParallelFor(
    context: *mut TF_OpKernelContext,
    total: i64,
    cost_per_unit: i64,
    fn_: Option<unsafe extern "C" fn(i64, i64)>,
) {
    let _ = cost_per_unit;
    let Some(f) = fn_ else { return };
    let f = Sendable(f);
    // SAFETY: the plugin's function, callable from any thread on disjoint ranges.
    parallel_for(context, total, Arc::new(move |a, e, _| unsafe { (f.0)(a, e) }));
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ThreadPool_ParallelForWithWorkerId(
    context: *mut TF_OpKernelContext,
    total: i64,
    cost_per_unit: i64,
    fn_: Option<unsafe extern "C" fn(i64, i64, c_int)>,
) {
    let _ = cost_per_unit;
    let Some(f) = fn_ else { return };
    let f = Sendable(f);
    // SAFETY: the plugin's function, callable from any thread on disjoint ranges.
    parallel_for(context, total, Arc::new(move |a, e, w| unsafe { (f.0)(a, e, w) }));
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelContext_UpdateStatus(status: *mut TF_Status) {
    let failure = CURRENT.with(Cell::get).and_then(|cur| {
        // SAFETY: the current execution's context, live while its compute runs (this call
        // comes from inside it).
        unsafe { cur.ctx.as_ref() }.and_then(|c| c.failure.clone())
    });
    let (code, m) = failure.unwrap_or((TF_OK, String::new()));
    // SAFETY: NULL or a live status, by the contract.
    unsafe { report(status, code, &m) }
}
