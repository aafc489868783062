//! The smallest useful hostrt firmware, for the size report: the BEF reader, the executor,
//! the five kernels the embedded fib program uses (registered one by one, so the linker
//! drops every other kernel) and a fixed arena; it reports only through the exit status
//! (no printing, no float formatting).
//! Program: `programs/fib_quiet.mlir`.
#![no_std]
#![no_main]

use core::cell::Cell;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use hostrt_core::allocator::HostAllocator;
use hostrt_core::executor::Program;
use hostrt_core::kernels::{control, integer};
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ExecutionContext, FixedArena, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
};
use panic_semihosting as _;

#[repr(C, align(8))]
struct Bef<const N: usize>([u8; N]);
static FIB: &Bef<{ include_bytes!(concat!(env!("OUT_DIR"), "/fib_quiet.bef")).len() }> =
    &Bef(*include_bytes!(concat!(env!("OUT_DIR"), "/fib_quiet.bef")));

const ARENA_BYTES: usize = 8 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// Run `fib_driver` (which returns fib(5) and fib(12)) and check the results.
fn run(alloc: Allocator) -> bool {
    let mut registry: KernelRegistry<5> = KernelRegistry::new();
    let kernels =
        [integer::CONSTANT_I32, integer::ADD_I32, integer::LESSEQUAL_I32, control::IF, control::CALL];
    if registry.add_entries(&kernels).is_err() {
        return false;
    }
    let host = HostContext::new(alloc, &QUEUE, &registry);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let Ok(program) = Program::load(&FIB.0, &registry, alloc) else { return false };
    let Some(f) = program.function_index("fib_driver") else { return false };
    let slots = [const { Cell::new(None::<RcAsyncValue>) }; 2];
    // SAFETY: program, host and request outlive the await and quiesce below.
    unsafe { program.execute(&exec, f, &[], &slots) };
    let (Some(a), Some(b)) = (slots[0].take(), slots[1].take()) else { return false };
    let ok = QUEUE.await_values(&[a.clone(), b.clone()]).is_ok()
        && a.get::<i32>() == Some(&5)
        && b.get::<i32>() == Some(&144);
    QUEUE.quiesce();
    ok
}

#[entry]
fn main() -> ! {
    let ok = hostrt_core::static_buffer!(ARENA_BYTES).is_some_and(|b| ARENA.init(b).is_ok())
        && Allocator::register(&ARENA).is_ok_and(run)
        && ARENA.stats().is_some_and(|s| s.in_use == 0);
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
