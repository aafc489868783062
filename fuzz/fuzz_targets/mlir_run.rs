//! Arbitrary text that parses and compiles is run, compiled with and without TFRT's streams:
//! every parameterless function of the program, with the basic and tensor kernels, on the
//! single-threaded queue over a small fixed arena.
//! Never a panic, a hang or a stack overflow, and once the queue is quiet and the program
//! dropped, the arena holds nothing (no leak, also when it ran out of memory midway).
//! Loop kernels (`tfrt.repeat.i32`, `tfrt.while`, parallel loops) are left out and calls are
//! counted against a budget, so every program terminates quickly.
#![no_main]

#[path = "common.rs"]
mod common;

use std::sync::atomic::Ordering;

use hostrt_compiler::bef::{WriteOptions, write_with};
use hostrt_compiler::text::parse;
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{control, float, integer, print};
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelEntry;
use hostrt_core::tensor_kernels::{dht, layers, math, shape};
use hostrt_core::{ConcurrentWorkQueue, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::AlignedBytes;

/// Calls and branches one run may make: with one stream, recursion is depth-first and may
/// never exhaust the arena (fib(52) is 2^36 calls), so work is bounded by counting them.
const CALL_BUDGET: u32 = 5_000;

/// The function-starting control kernels (the loops are left out altogether).
const BUDGETED: [KernelEntry; 5] = [
    common::budgeted!(control::CALL),
    common::budgeted!(control::IF),
    common::budgeted!(control::COND),
    common::budgeted!(control::CASE),
    common::budgeted!(control::ONCE),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = parse("fuzz.mlir", text) else { return };
    // Both schedules: TFRT's streams (other streams become tasks) and one stream per call.
    for streams in [true, false] {
        let Ok(bef) =
            write_with(&module, None, WriteOptions { streams, locations: true, ..Default::default() })
        else {
            return;
        };
        run(&AlignedBytes::new(&bef), text);
    }
});

/// Run every parameterless function of `bytes`; the arena must be empty afterwards.
fn run(bytes: &AlignedBytes, text: &str) {
    let (arena, alloc) = common::run_arena();
    let mut registry: KernelRegistry<1024> = KernelRegistry::new();
    for group in
        [integer::ALL, float::ALL, print::ALL, &BUDGETED[..], shape::ALL, math::F32, math::I32, layers::ALL]
    {
        registry.add_entries(group).unwrap();
    }
    for group in dht::ALL_GROUPS {
        registry.add_entries(group).unwrap();
    }
    common::BUDGET.store(CALL_BUDGET, Ordering::Relaxed);
    let queue = SingleThreadedWorkQueue::new();
    let discard = |_: std::fmt::Arguments<'_>| {};
    {
        let host = HostContext::new(alloc, &queue).with_output(&discard);
        let Ok(program) = Program::load(bytes.as_bytes(), &registry, alloc) else { return };
        let opts = DriverOptions { functions: &[], init_function: None, print_error_code: false };
        let _ = run_functions(&program, &host, &opts, &mut |_| {});
        queue.quiesce();
    }
    let stats = arena.stats().unwrap();
    assert_eq!((stats.in_use, stats.live_allocations), (0, 0), "leak after running:\n{text}");
}
