//! Structured mutations of a valid BEF file that still pass the verifier are loaded with the
//! basic kernels and run: every parameterless function on the single-threaded queue over a
//! small fixed arena. The executor trusts what the verifier accepts (docs/execution.md,
//! "Scalar registers" names one such rule the executor checks itself), so this reaches the
//! executor, the scalar-register plan and the kernels with near-valid but odd programs.
//! Never a panic, a hang or undefined behaviour, and every block comes back. Then, with the
//! real control kernels, every parameterless function with a derived arena bound
//! (`Program::call_arena_bound`, docs/bef.md, "Arena sizes") is called, and may not have
//! more bytes allocated at once than its bound.
#![no_main]

#[path = "common.rs"]
mod common;

use std::sync::atomic::Ordering;

use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{control, float, integer, print};
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelEntry;
use hostrt_core::{ConcurrentWorkQueue, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::AlignedBytes;

/// Scalar chains (words and escaping values), a call, a branch and prints.
const PROGRAM: &str = r#"
func.func @callee(%x: i32, %ch: !tfrt.chain) -> (i32, !tfrt.chain) {
  %one = tfrt.constant.i32 1
  %y = tfrt.add.i32 %x, %one
  %ch1 = tfrt.print.i32 %y, %ch
  tfrt.return %y, %ch1 : i32, !tfrt.chain
}
func.func @main() -> i32 {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 41
  %b = tfrt.constant.i32 2
  %c = tfrt.add.i32 %a, %b
  %d = tfrt.add.i32 %c, %c
  %e = "tfrt.minus.i32"(%d, %b) : (i32, i32) -> i32
  %t = tfrt.constant.i1 true
  %r = tfrt.if %t, %e, %ch : (i32, !tfrt.chain) -> (i32) {
    %v, %ch2 = tfrt.call @callee(%e, %ch) : (i32, !tfrt.chain) -> (i32, !tfrt.chain)
    tfrt.return %v : i32
  } else {
    tfrt.return %e : i32
  }
  %f = tfrt.add.i32 %r, %d
  tfrt.return %f : i32
}
func.func @floats() -> f32 {
  %x = tfrt.constant.f32 1.5
  %y = "tfrt.multiply.f32"(%x, %x) : (f32, f32) -> f32
  %z = tfrt.add.f32 %y, %x
  tfrt.return %z : f32
}
"#;

/// Calls and branches one run may make (a mutated call may recurse).
const CALL_BUDGET: u32 = 2_000;

const BUDGETED: [KernelEntry; 2] = [common::budgeted!(control::CALL), common::budgeted!(control::IF)];

fn valid() -> &'static [u8] {
    static V: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        hostrt_compiler::compile("seed.mlir", PROGRAM, Default::default()).expect("seed compiles")
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut bytes = common::apply_edits(valid(), data);
    hostrt_core::bef::format::seal(&mut bytes);
    let bytes = AlignedBytes::new(&bytes);
    let (arena, alloc) = common::run_arena();
    let mut registry: KernelRegistry<256> = KernelRegistry::new();
    for group in [integer::ALL, float::ALL, print::ALL, &BUDGETED[..]] {
        registry.add_entries(group).unwrap();
    }
    common::BUDGET.store(CALL_BUDGET, Ordering::Relaxed);
    let before = arena.stats().unwrap().in_use;
    let queue = SingleThreadedWorkQueue::new();
    let discard = |_: std::fmt::Arguments<'_>| {};
    {
        let host = HostContext::new(alloc, &queue).with_output(&discard);
        let Ok(program) = Program::load(bytes.as_bytes(), &registry, alloc) else { return };
        let opts = DriverOptions { functions: &[], init_function: None, print_error_code: false };
        let _ = run_functions(&program, &host, &opts, &mut |_| {});
        queue.quiesce();
    }
    let after = arena.stats().unwrap().in_use;
    assert_eq!(after, before, "the run kept {} bytes", after.wrapping_sub(before));
    check_bounds(bytes.as_bytes());
});

/// Call every parameterless function that has a derived bound, each from an empty host,
/// and compare its peak of allocated bytes with the bound. A function with a bound neither
/// loops nor recurses, so its run ends.
fn check_bounds(bytes: &[u8]) {
    let (arena, alloc) = common::run_arena();
    let mut registry: KernelRegistry<256> = KernelRegistry::new();
    for group in [integer::ALL, float::ALL, print::ALL, control::ALL] {
        registry.add_entries(group).unwrap();
    }
    let queue = SingleThreadedWorkQueue::new();
    let discard = |_: std::fmt::Arguments<'_>| {};
    let Ok(program) = Program::load(bytes, &registry, alloc) else { return };
    for fi in 0..program.file().num_functions() as u32 {
        let Some(f) = program.file().function(fi) else { continue };
        if f.record().num_args != 0 || f.name().is_empty() {
            continue;
        }
        let Ok(bound) = program.call_arena_bound(fi) else { continue };
        let host = HostContext::new(alloc, &queue).with_output(&discard);
        let before = arena.stats().unwrap().in_use;
        arena.reset_peak();
        let _ = program.call(&host, f.name(), &[]);
        let peak = arena.stats().unwrap().peak - before;
        assert!(peak <= bound, "@{}: {peak} bytes allocated at once, bound {bound}", f.name());
    }
}
