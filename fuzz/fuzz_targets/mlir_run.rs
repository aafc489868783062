//! Arbitrary text that parses and compiles is run: every parameterless function of the
//! program, with the basic kernels, on the single-threaded queue over a small fixed arena.
//! Never a panic, a hang or a stack overflow, and once the queue is quiet and the program
//! dropped, the arena holds nothing (no leak, also when it ran out of memory midway).
//! Loop kernels (`tfrt.repeat.i32`, `tfrt.while`, parallel loops) are left out, so every
//! program terminates; unbounded recursion ends when the arena is exhausted.
#![no_main]

use hostrt_compiler::bef::{AlignedBytes, write};
use hostrt_compiler::text::parse;
use hostrt_core::allocator::{FixedArena, HostAllocator};
use hostrt_core::executor::{DriverOptions, Program};
use hostrt_core::kernels::{control, float, integer, print};
use hostrt_core::{Allocator, ConcurrentWorkQueue, HostContext, KernelRegistry, SingleThreadedWorkQueue};

/// One arena reused by every run, so the allocator table never fills up.
fn arena() -> (&'static FixedArena, Allocator) {
    static A: std::sync::OnceLock<(&'static FixedArena, Allocator)> = std::sync::OnceLock::new();
    *A.get_or_init(|| {
        let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        arena.init(Box::leak(vec![0u8; 256 << 10].into_boxed_slice())).unwrap();
        (arena, Allocator::register(arena).unwrap())
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = parse("fuzz.mlir", text) else { return };
    let Ok(bef) = write(&module, None) else { return };
    let bytes = AlignedBytes::new(&bef);
    let (arena, alloc) = arena();
    let mut registry: KernelRegistry<64> = KernelRegistry::new();
    let calls = [control::CALL, control::IF, control::COND, control::CASE, control::ONCE];
    for group in [integer::ALL, float::ALL, print::ALL, &calls[..]] {
        registry.add_entries(group).unwrap();
    }
    let queue = SingleThreadedWorkQueue::new();
    let discard = |_: std::fmt::Arguments<'_>| {};
    {
        let host = HostContext::new(alloc, &queue, &registry).with_output(&discard);
        let Ok(program) = Program::load(bytes.as_bytes(), &registry, alloc) else { return };
        let opts = DriverOptions { functions: &[], init_function: None, print_error_code: false };
        let _ = program.run_functions(&host, &opts, &mut |_| {});
        queue.quiesce();
    }
    let stats = arena.stats().unwrap();
    assert_eq!((stats.in_use, stats.live_allocations), (0, 0), "leak after running:\n{text}");
});
