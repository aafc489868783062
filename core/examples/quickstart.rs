//! Quickstart: a host with a 16 KiB arena, three kernels (sync, async, partly async) written
//! as plain functions, run through the single-threaded work queue.
//!
//! `cargo run -p hostrt-core --example quickstart`

use std::cell::Cell;

use hostrt_core::allocator::HostAllocator;
use hostrt_core::kernel::{Argument, KernelFrame, KernelLookup, Output};
use hostrt_core::{
    Allocator, ExecutionContext, FixedArena, HostContext, KernelRegistry, RcAsyncValue, RequestContext,
    SingleThreadedWorkQueue,
};

static ARENA: FixedArena = FixedArena::empty();

fn add_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    *a + *b
}

fn add_i32_async(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(result) = out.allocate() else { return };
    let (x, y) = (*a, *b);
    if ctx.host().enqueue_work(move || result.emplace(x + y)).is_err() {
        out.set_error(hostrt_core::Diagnostic::internal("no memory for the task"));
    }
}

fn main() {
    let buffer: &'static mut [u8] = Box::leak(vec![0u8; 16 * 1024].into_boxed_slice());
    ARENA.init(buffer).expect("arena");
    let alloc = Allocator::register(&ARENA).expect("allocator slot");

    let mut registry: KernelRegistry = KernelRegistry::new();
    registry.add_kernel("tfrt.add.i32", hostrt_core::kernel!(add_i32)).unwrap();
    registry.add_kernel("test.add.i32.async", hostrt_core::kernel!(add_i32_async)).unwrap();

    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);

    let one = host.make_available(1i32).unwrap().into_rc();
    let two = host.make_available(2i32).unwrap().into_rc();
    let args = [one, two];
    for name in ["tfrt.add.i32", "test.add.i32.async"] {
        let kernel = registry.lookup(name).expect("registered").func();
        let slots = [Cell::new(None::<RcAsyncValue>)];
        kernel(&KernelFrame::new(&exec, &args, &[], &slots));
        let result = slots[0].take().expect("result set");
        println!("{name}: available right after the call: {}", result.is_available());
        host.await_values(std::slice::from_ref(&result)).expect("await");
        println!("{name}: 1 + 2 = {}", result.get::<i32>().unwrap());
    }
    drop(args);
    let s = ARENA.stats().unwrap();
    println!(
        "arena: {} bytes in use, peak {} bytes, {} allocations, {} failed",
        s.in_use, s.peak, s.total_allocations, s.failed
    );
    assert_eq!(s.in_use, 0, "everything was freed");
}
