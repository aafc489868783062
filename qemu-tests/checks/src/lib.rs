//! The checks every bare-metal test image runs on hostrt-core: a fixed arena in a static and
//! no global allocator, async values, sync and async kernels through a registry and the
//! single-threaded queue, FIFO task order, and an empty arena at the end. The images
//! (`qemu-tests/cortex-m`, `qemu-tests/riscv`) only add the entry point, output and exit.
#![no_std]

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};

use hostrt_core::allocator::HostAllocator;
use hostrt_core::kernel::{Argument, KernelFrame, KernelLookup, Output};
use hostrt_core::{
    Allocator, AsyncValueRef, ConcurrentWorkQueue, Diagnostic, ExecutionContext, FixedArena, HostContext,
    IndirectAsyncValue, KernelRegistry, RcAsyncValue, RequestContext, SingleThreadedWorkQueue, Task,
};

/// Names and outcomes of the checks, and the arena's peak use in bytes.
#[derive(Debug)]
pub struct Report {
    /// `(name, passed)` per check.
    pub checks: [(&'static str, bool); 5],
    /// Highest number of arena bytes in use.
    pub peak: usize,
}

fn add_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    *a + *b
}

fn add_i32_async(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(result) = out.allocate() else { return };
    let (x, y) = (*a, *b);
    if ctx.host().enqueue_work(move || result.emplace(x + y)).is_err() {
        out.set_error(Diagnostic::internal("no memory for the task"));
    }
}

fn check_values(alloc: Allocator) -> bool {
    let Ok(v) = AsyncValueRef::<u32>::unconstructed(alloc) else { return false };
    let Ok(ind) = IndirectAsyncValue::new(alloc) else { return false };
    ind.forward_to(v.clone().into_rc());
    v.emplace(5);
    let e = RcAsyncValue::error(alloc, Diagnostic::internal("bad"));
    ind.get::<u32>() == Some(&5) && e.map(|e| e.get_error().map(|d| d.message() == "bad")) == Ok(Some(true))
}

fn check_kernels(exec: &ExecutionContext<'_>, registry: &dyn KernelLookup) -> bool {
    let host = exec.host();
    let (Ok(a), Ok(b)) = (host.make_available(40i32), host.make_available(2i32)) else { return false };
    let args = [a.into_rc(), b.into_rc()];
    let mut ok = true;
    for name in ["tfrt.add.i32", "test.add.i32.async"] {
        let Some(k) = registry.lookup(name) else { return false };
        let slots = [Cell::new(None::<RcAsyncValue>)];
        (k.func())(&KernelFrame::new(exec, &args, &[], &slots));
        let Some(r) = slots[0].take() else { return false };
        ok &= host.await_values(core::slice::from_ref(&r)).is_ok() && r.get::<i32>() == Some(&42);
    }
    ok
}

/// Records the order tasks ran in, without allocation (one hex digit per task).
static ORDER: AtomicU32 = AtomicU32::new(0);

fn check_queue_order(alloc: Allocator, queue: &SingleThreadedWorkQueue) -> bool {
    for i in 1..=3u32 {
        let Ok(t) = Task::new(alloc, move || {
            let v = ORDER.load(Ordering::Relaxed);
            ORDER.store(v * 16 + i, Ordering::Relaxed);
        }) else {
            return false;
        };
        queue.add_task(t);
    }
    queue.quiesce();
    ORDER.load(Ordering::Relaxed) == 0x123
}

/// Run every check over `arena` (initialised here with `buffer`) and `queue`.
pub fn run(
    arena: &'static FixedArena,
    buffer: &'static mut [u8],
    queue: &'static SingleThreadedWorkQueue,
) -> Report {
    let ok_init = arena.init(buffer).is_ok();
    let Ok(alloc) = Allocator::register(arena) else {
        return Report { checks: [("allocator_table", false); 5], peak: 0 };
    };
    let mut registry: KernelRegistry<8> = KernelRegistry::new();
    let ok_reg = registry.add_kernel("tfrt.add.i32", hostrt_core::kernel!(add_i32)).is_ok()
        && registry.add_kernel("test.add.i32.async", hostrt_core::kernel!(add_i32_async)).is_ok();
    let host = HostContext::new(alloc, queue);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let checks = [
        ("arena_init", ok_init && ok_reg),
        ("async_values", check_values(alloc)),
        ("kernels_sync_and_async", check_kernels(&exec, &registry)),
        ("queue_fifo", check_queue_order(alloc, queue)),
        ("no_leaks", arena.stats().is_some_and(|s| s.in_use == 0 && s.failed == 0)),
    ];
    Report { checks, peak: arena.stats().map_or(0, |s| s.peak) }
}
