//! Arena bounds derived from the program (`Program::call_arena_bound`, docs/bef.md, "Arena
//! sizes"): a call never allocates more than its bound, and what the bound cannot follow
//! (recursion, loops, kernels that do not declare their allocations) is refused with the
//! reason.

use hostrt_core::allocator::{FailAfter, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, Unbounded};
use hostrt_core::kernel::{Argument, KernelFrame};
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

/// A typed kernel whose author did not declare what it allocates.
fn undeclared(a: Argument<'_, i32>) -> i32 {
    *a
}

fn registry() -> KernelRegistry<256> {
    let mut registry = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    registry.add_kernel("test.opaque", opaque).unwrap();
    registry.add_entries(&[hostrt_core::kernel_entry!("test.undeclared", undeclared)]).unwrap();
    registry
}

/// `bef` loaded with [`registry`]'s kernels (for the bound alone: nothing runs).
fn loaded(bef: &AlignedBytes) -> Program<'_> {
    let (_, alloc) = leaked_arena(1 << 16).unwrap();
    Program::load(bef.as_bytes(), &registry(), alloc).unwrap()
}

/// The arena bytes one call of `@main` in `text` allocates at most.
fn peak_of(text: &str) -> usize {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap());
    let registry = registry();
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(vec![0u8; 1 << 18].leak()).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(Allocator::register(arena).unwrap(), &queue);
    let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
    let before = arena.stats().unwrap().in_use;
    let results = program.call(&host, "main", &[]).unwrap();
    assert!(results.get::<i32>(0).is_ok());
    arena.stats().unwrap().peak - before
}

/// The bound of `@main` in `text`, or why there is none (as `Unbounded` displays it).
fn bound_of(text: &str) -> Result<usize, String> {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap());
    let program = loaded(&bef);
    let main = program.function_index("main").unwrap();
    program.call_arena_bound(main).map_err(|e| e.to_string())
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
    let program = loaded(&bef);
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

/// `tfrt.once` of a function with five results (a request remembers four).
const FIVE_ONCE: &str = "func.func @five() -> (i32, i32, i32, i32, i32) {\n %a = tfrt.constant.i32 1\n\
     tfrt.return %a, %a, %a, %a, %a : i32, i32, i32, i32, i32\n}\n\
     func.func @main() -> i32 {\n\
     %r:5 = \"tfrt.once\"() {function = @five} : () -> (i32, i32, i32, i32, i32)\n tfrt.return %r#0 : i32\n}\n";

#[test]
fn once_with_more_results_than_a_request_remembers_runs_and_reports() {
    // No panic: this run's results stand and the kernel reports that it cannot remember
    // them.
    let bef =
        AlignedBytes::new(&hostrt_compiler::compile("once.mlir", FIVE_ONCE, Default::default()).unwrap());
    let reported = std::sync::atomic::AtomicUsize::new(0);
    let (_, alloc) = leaked_arena(1 << 16).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let count = |_: &hostrt_core::Diagnostic| {
        reported.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let host = HostContext::new(alloc, &queue).with_diagnostics(&count);
    let program = Program::load(bef.as_bytes(), &registry(), &host).unwrap();
    let results = program.call(&host, "main", &[]).unwrap();
    assert_eq!(results.get::<i32>(0), Ok(&1));
    assert_eq!(reported.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[test]
fn uses_that_could_fail_are_not_bounded() {
    // What the load accepts but a run turns into error values: a call whose callee takes
    // other arguments, a kernel given too few operands or an attribute of another kind, a
    // typed kernel not declared to allocate only its results.
    let cases = [
        (
            "func.func @callee() -> i32 {\n %a = tfrt.constant.i32 1\n tfrt.return %a : i32\n}\n\
             func.func @main() -> i32 {\n %x = tfrt.constant.i32 1\n %r = tfrt.call @callee(%x) : (i32) -> i32\n tfrt.return %r : i32\n}\n",
            "@main uses 'tfrt.call'",
        ),
        (
            "func.func @main() -> i32 {\n %x = tfrt.constant.i32 1\n %r = \"tfrt.add.i32\"(%x) : (i32) -> i32\n tfrt.return %r : i32\n}\n",
            "@main uses 'tfrt.add.i32'",
        ),
        (
            "func.func @main() -> i32 {\n %x = \"tfrt.constant.i32\"() {value = 1.5 : f32} : () -> i32\n tfrt.return %x : i32\n}\n",
            "@main uses 'tfrt.constant.i32'",
        ),
        (
            "func.func @main() -> i32 {\n %x = tfrt.constant.i32 1\n %r = \"test.undeclared\"(%x) : (i32) -> i32\n tfrt.return %r : i32\n}\n",
            "@main uses 'test.undeclared'",
        ),
        // `tfrt.cond` naming only the true branch: a false condition fails the kernel.
        (
            "func.func @t(%a: i32) -> i32 {\n tfrt.return %a : i32\n}\n\
             func.func @main() -> i32 {\n %c = tfrt.constant.i1 0\n %x = tfrt.constant.i32 1\n\
             %r = \"tfrt.cond\"(%c, %x) {a_true_fn = @t} : (i1, i32) -> i32\n tfrt.return %r : i32\n}\n",
            "@main uses 'tfrt.cond'",
        ),
        // `tfrt.once` returning more results than a request remembers.
        (FIVE_ONCE, "@main uses 'tfrt.once'"),
    ];
    for (text, why) in cases {
        let got = bound_of(text);
        assert!(got.as_ref().is_err_and(|e| e.starts_with(why)), "{why}: {got:?}");
    }
    // Nine functions run once: a request remembers eight.
    let mut nine = String::new();
    let mut main = String::from("func.func @main() -> i32 {\n");
    for i in 0..9 {
        nine +=
            &format!("func.func @f{i}() -> i32 {{\n %a = tfrt.constant.i32 {i}\n tfrt.return %a : i32\n}}\n");
        main += &format!(" %r{i} = \"tfrt.once\"() {{function = @f{i}}} : () -> i32\n");
    }
    let nine = format!("{nine}{main} tfrt.return %r0 : i32\n}}\n");
    assert!(bound_of(&nine).is_err_and(|e| e.starts_with("@main uses 'tfrt.once'")));
    let eight = nine.replace(" %r8 = \"tfrt.once\"() {function = @f8} : () -> i32\n", "");
    assert!(bound_of(&eight).is_ok(), "{eight}");
    // The same shapes, well formed, are bounded.
    let fine = "func.func @callee(%a: i32) -> i32 {\n %b = tfrt.add.i32 %a, %a\n tfrt.return %b : i32\n}\n\
                func.func @main() -> i32 {\n %x = tfrt.constant.i32 1\n %r = tfrt.call @callee(%x) : (i32) -> i32\n tfrt.return %r : i32\n}\n";
    assert!(bound_of(fine).is_ok());
}

#[test]
fn a_call_too_deep_for_the_call_depth_limit_is_not_bounded_in_either_order() {
    // @main calls @leaf directly and through a chain of 64 functions, so that @leaf's second
    // call runs past the default call depth (where calls continue in tasks). The order of
    // the two calls must not matter: the first visit's bound is remembered.
    let mut chain = String::new();
    for i in 0..64 {
        let next = if i == 63 { "leaf".to_string() } else { format!("c{}", i + 1) };
        chain += &format!(
            "func.func @c{i}() -> i32 {{\n %r = tfrt.call @{next}() : () -> i32\n tfrt.return %r : i32\n}}\n"
        );
    }
    let leaf = "func.func @leaf() -> i32 {\n %a = tfrt.constant.i32 1\n tfrt.return %a : i32\n}\n";
    let direct = "%a = tfrt.call @leaf() : () -> i32\n";
    let deep = "%b = tfrt.call @c0() : () -> i32\n";
    for body in [format!("{direct}{deep}"), format!("{deep}{direct}")] {
        let main = format!("func.func @main() -> (i32, i32) {{\n{body} tfrt.return %a, %b : i32, i32\n}}\n");
        let got = bound_of(&format!("{leaf}{chain}{main}"));
        assert_eq!(got, Err("calls nest deeper than 64".to_string()), "{body}");
    }
    // @main runs at depth 1, so through @c1 @leaf runs at 65 (too deep) and through @c2 at
    // 64, the deepest call that still runs inline; there the bound holds.
    let via = |first: &str| {
        let main = format!(
            "func.func @main() -> i32 {{\n %b = tfrt.call @{first}() : () -> i32\n tfrt.return %b : i32\n}}\n"
        );
        format!("{leaf}{chain}{main}")
    };
    assert_eq!(bound_of(&via("c1")), Err("calls nest deeper than 64".to_string()));
    let text = via("c2");
    let bound = bound_of(&text).unwrap();
    assert!(peak_of(&text) <= bound, "the deepest inline chain allocated more than its bound of {bound}");
}

#[test]
fn a_function_index_the_file_lacks_is_refused() {
    let bef = compiled();
    let program = loaded(&bef);
    let n = program.file().num_functions() as u32;
    assert_eq!(program.call_arena_bound(n), Err(Unbounded::NoFunction));
}
