//! Arena bounds derived from the program (`Program::call_arena_bound`, docs/bef.md, "Arena
//! sizes"): a call never allocates more than its bound, and what the bound cannot follow
//! (recursion, loops, kernels that do not declare their allocations) is refused with the
//! reason.

use hostrt_core::allocator::{FailAfter, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, Unbounded};
use hostrt_core::kernel::KernelFrame;
use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};

const PROGRAM: &str = r#"
func.func @branches() -> (i32, i32, !tfrt.chain) {
  %ch = tfrt.new.chain
  %x = tfrt.constant.i32 42
  %zero = tfrt.constant.i32 0
  %t = tfrt.constant.i1 1
  %q, %r = tfrt.div.i32 %x, %zero
  %y = tfrt.if %t, %x : (i32) -> (i32) {
    %s = tfrt.add.i32 %x, %x
    tfrt.return %s : i32
  } else {
    tfrt.return %x : i32
  }
  %z = tfrt.call @twice(%y) : (i32) -> i32
  %ch1 = tfrt.print.i32 %z, %ch
  tfrt.return %z, %q, %ch1 : i32, i32, !tfrt.chain
}

func.func @twice(%a: i32) -> i32 {
  %b = tfrt.add.i32 %a, %a
  %f = tfrt.constant.f32 1.5
  %g = tfrt.add.f32 %f, %f
  tfrt.return %b : i32
}

func.func @fib(%n: i32) -> i32 {
  %one = tfrt.constant.i32 1
  %m = "tfrt.minus.i32"(%n, %one) : (i32, i32) -> i32
  %r = tfrt.call @fib(%m) : (i32) -> i32
  tfrt.return %r : i32
}

func.func @loop() -> i32 {
  %n = tfrt.constant.i32 3
  %x = tfrt.constant.i32 1
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %y = tfrt.add.i32 %x, %x
    tfrt.return %y : i32
  }
  tfrt.return %r : i32
}

func.func @spare1() {
  tfrt.return
}

func.func @spare2() {
  tfrt.return
}

func.func @opaque() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %ch1 = "test.opaque"(%ch) : (!tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}
"#;

/// A kernel written against the frame: no signature, so no declared allocations.
fn opaque(frame: &KernelFrame<'_>) {
    frame.set_result(0, frame.args()[0].clone());
}

fn registry() -> KernelRegistry<256> {
    let mut registry = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    registry.add_kernel("test.opaque", opaque).unwrap();
    registry
}

fn compiled() -> AlignedBytes {
    AlignedBytes::new(&hostrt_compiler::compile("bound.mlir", PROGRAM, Default::default()).unwrap())
}

#[test]
fn a_call_allocates_no_more_than_its_bound() {
    let bef = compiled();
    let registry = registry();
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(vec![0u8; 1 << 16].leak()).unwrap();
    let alloc = Allocator::register(arena).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let discard = |_: std::fmt::Arguments<'_>| {};
    let host = HostContext::new(alloc, &queue).with_output(&discard).with_diagnostics(&|_| {});
    let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
    let f = program.function_index("branches").unwrap();
    let bound = program.call_arena_bound(f).unwrap();
    let before = arena.stats().unwrap().in_use;
    let results = program.call(&host, "branches", &[]).unwrap();
    let used = arena.stats().unwrap().peak - before;
    assert!(used <= bound, "the call used {used} bytes, over its bound of {bound}");
    assert!(bound <= 4 * used, "bound {bound} for {used} bytes: too loose to be useful");
    assert_eq!(results.get::<i32>(0), Ok(&168));
}

#[test]
fn what_the_bound_cannot_follow_is_named() {
    let bef = compiled();
    let registry = registry();
    let (_, alloc) = leaked_arena(1 << 16).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
    let bound = |name| program.call_arena_bound(program.function_index(name).unwrap());
    assert_eq!(bound("fib"), Err(Unbounded::Recursion { function: "fib" }));
    assert_eq!(bound("loop"), Err(Unbounded::Kernel { function: "loop", kernel: "tfrt.repeat.i32" }));
    assert_eq!(bound("opaque"), Err(Unbounded::Kernel { function: "opaque", kernel: "test.opaque" }));
    assert_eq!(
        bound("loop").unwrap_err().to_string(),
        "@loop uses 'tfrt.repeat.i32', whose allocations are not declared"
    );
    // A callee's bound is its own: @twice has one, whoever calls it.
    assert!(bound("twice").is_ok());
}

#[test]
fn without_memory_for_its_bookkeeping_the_bound_says_so() {
    let bef = compiled();
    let registry = registry();
    let (arena, _) = leaked_arena(1 << 16).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let load = |budget: usize| {
        let failing: &'static FailAfter<&'static FixedArena> =
            Box::leak(Box::new(FailAfter::new(arena, budget)));
        let host = HostContext::new(Allocator::register(failing).unwrap(), &queue);
        let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
        let f = program.function_index("branches").unwrap();
        (program.call_arena_bound(f), failing.granted())
    };
    // The blocks of the load and of the bound, counted; one fewer leaves the bound's memo
    // (a word per function, more than fit on the stack) without memory.
    let (bound, granted) = load(usize::MAX);
    assert!(bound.is_ok());
    assert_eq!(load(granted - 1).0, Err(Unbounded::NoMemory));
}
