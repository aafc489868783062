//! hostrt-core on RISC-V (riscv32imac, QEMU `virt`) with no global allocator: every runtime
//! object comes from a fixed arena in a static. Linking this image proves the core needs no
//! `alloc`; running it under QEMU checks behaviour on the target. Prints `N passed, N failed`
//! over semihosting and exits with status 0 only if every check passed.
//!
//! The checks are the same as qemu-tests/cortex-m's.
#![no_std]
#![no_main]

use core::cell::Cell;
use core::mem::MaybeUninit;

use hostrt_core::allocator::HostAllocator;
use hostrt_core::kernel::{Argument, KernelFrame, KernelLookup, Output};
use hostrt_core::{
    Allocator, AsyncValueRef, ConcurrentWorkQueue, Diagnostic, ExecutionContext, FixedArena, HostContext,
    IndirectAsyncValue, KernelRegistry, RcAsyncValue, RequestContext, SingleThreadedWorkQueue, Task,
};
use semihosting::{println, process};

// Links the `critical-section` implementation (feature `critical-section-single-hart`).
use riscv as _;

const ARENA_BYTES: usize = 8 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// Harness self-test (feature `deliberately-fail`): one extra check that always fails.
const INJECTED: &[(&str, bool)] =
    if cfg!(feature = "deliberately-fail") { &[("deliberately_failing", false)] } else { &[] };

/// The arena's memory. Taken once, at start-up.
fn arena_buffer() -> &'static mut [u8] {
    static mut BUFFER: [MaybeUninit<u8>; ARENA_BYTES] = [MaybeUninit::uninit(); ARENA_BYTES];
    // SAFETY: called once, before anything else touches BUFFER; MaybeUninit<u8> and u8 have
    // the same layout and the arena never reads bytes it has not written.
    unsafe { &mut *((&raw mut BUFFER) as *mut [u8; ARENA_BYTES]) }
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
        (k.func)(&KernelFrame::new(exec, &args, &[], &slots));
        let Some(r) = slots[0].take() else { return false };
        ok &= host.await_values(core::slice::from_ref(&r)).is_ok() && r.get::<i32>() == Some(&42);
    }
    ok
}

fn check_queue_order(alloc: Allocator) -> bool {
    static ORDER: order::Order = order::Order::new();
    for i in 1..=3u32 {
        let Ok(t) = Task::new(alloc, move || ORDER.push(i)) else { return false };
        QUEUE.add_task(t);
    }
    QUEUE.quiesce();
    ORDER.get() == 0x321
}

/// A tiny order recorder that needs no allocation (digits, most recent lowest).
mod order {
    use core::sync::atomic::{AtomicU32, Ordering};
    pub struct Order(AtomicU32);
    impl Order {
        pub const fn new() -> Self {
            Order(AtomicU32::new(0))
        }
        pub fn push(&self, digit: u32) {
            let v = self.0.load(Ordering::Relaxed);
            self.0.store(v * 16 + digit, Ordering::Relaxed);
        }
        pub fn get(&self) -> u32 {
            let v = self.0.load(Ordering::Relaxed);
            // Reverse the three digits so FIFO order 1,2,3 reads 0x321.
            (v & 0xf) << 8 | (v >> 4 & 0xf) << 4 | v >> 8
        }
    }
}

#[riscv_rt::entry]
fn main() -> ! {
    let ok_init = ARENA.init(arena_buffer()).is_ok();
    let Ok(alloc) = Allocator::register(&ARENA) else { fail("allocator table") };
    let mut registry: KernelRegistry<8> = KernelRegistry::new();
    let ok_reg = registry.add_kernel("tfrt.add.i32", hostrt_core::kernel!(add_i32)).is_ok()
        && registry.add_kernel("test.add.i32.async", hostrt_core::kernel!(add_i32_async)).is_ok();
    let host = HostContext::new(alloc, &QUEUE, &registry);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);

    let checks: [(&str, bool); 5] = [
        ("arena_init", ok_init && ok_reg),
        ("async_values", check_values(alloc)),
        ("kernels_sync_and_async", check_kernels(&exec, &registry)),
        ("queue_fifo", check_queue_order(alloc)),
        ("no_leaks", ARENA.stats().is_some_and(|s| s.in_use == 0 && s.failed == 0)),
    ];
    let mut failed = 0;
    for &(name, ok) in checks.iter().chain(INJECTED) {
        failed += usize::from(!ok);
        println!("test {} ... {}", name, if ok { "ok" } else { "FAILED" });
    }
    let peak = ARENA.stats().map_or(0, |s| s.peak);
    println!("arena peak {} bytes of {}", peak, ARENA_BYTES);
    println!("{} passed, {} failed", checks.len() + INJECTED.len() - failed, failed);
    process::exit(if failed == 0 { 0 } else { 1 })
}

fn fail(what: &str) -> ! {
    println!("setup failed: {}", what);
    println!("0 passed, 1 failed");
    process::exit(1)
}
