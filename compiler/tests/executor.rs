//! The executor end to end: MLIR text → BEF → `Program::execute`, on a fixed arena that must
//! be empty again afterwards. The programs here are written for these tests.

use std::cell::Cell;
use std::sync::Mutex;

use hostrt_compiler::bef::write;
use hostrt_compiler::text::parse;
use hostrt_core::allocator::{FailAfter, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, raw};
use hostrt_core::kernel::{Argument, KernelLookup, Output};
use hostrt_core::{
    Allocator, AsyncValueRef, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue, RequestContext,
    SingleThreadedWorkQueue,
};
use hostrt_std::AlignedBytes;

/// A test-only kernel: returns its input through a value completed later by a task.
fn async_copy(x: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(r) = out.allocate() else { return };
    let v = *x;
    if let Err(oom) = ctx.host().enqueue_work(move || r.emplace(v)) {
        (oom.into_inner())(); // no memory for the task: complete it here
    }
}

/// A test-only kernel: cancels the current request.
fn cancel(ctx: &ExecutionContext) -> hostrt_core::Chain {
    let _ = ctx.request().cancel(ctx.allocator());
    hostrt_core::Chain
}

fn registry() -> KernelRegistry<256> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    r.add_kernel("test.async_copy", hostrt_core::kernel!(async_copy)).unwrap();
    r.add_kernel("test.cancel", hostrt_core::kernel!(cancel)).unwrap();
    r
}

/// A fresh heap-backed arena of `bytes`, registered; the caller checks it is empty afterwards.
fn arena(bytes: usize) -> (&'static FixedArena, Allocator) {
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(Box::leak(vec![0u8; bytes].into_boxed_slice())).unwrap();
    (arena, Allocator::register(arena).unwrap())
}

struct Run {
    results: Vec<Option<RcAsyncValue>>,
    output: String,
}

/// Compile `text`, run `func` with `args` (made by `make_args` from the allocator), complete
/// late inputs with `after_start`, await, quiesce, and check the arena is empty at the end.
fn run_with(
    text: &str,
    func: &str,
    make_args: impl FnOnce(Allocator) -> Vec<RcAsyncValue>,
    after_start: impl FnOnce(&[RcAsyncValue]),
    check: impl FnOnce(&Run),
) {
    run_in_arena(4 << 20, text, func, make_args, after_start, check)
}

/// [`run_with`] over an arena of `arena_bytes`.
fn run_in_arena(
    arena_bytes: usize,
    text: &str,
    func: &str,
    make_args: impl FnOnce(Allocator) -> Vec<RcAsyncValue>,
    after_start: impl FnOnce(&[RcAsyncValue]),
    check: impl FnOnce(&Run),
) {
    let module = parse("t.mlir", text).unwrap_or_else(|e| panic!("{e}"));
    let bef = AlignedBytes::new(&write(&module, Some(("t.mlir", text))).unwrap_or_else(|e| panic!("{e}")));
    let (arena, alloc) = arena(arena_bytes);
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    let output = Mutex::new(String::new());
    let sink = |a: std::fmt::Arguments<'_>| output.lock().unwrap().push_str(&a.to_string());
    {
        let host = HostContext::new(alloc, &queue).with_output(&sink);
        let request = RequestContext::new();
        let exec = ExecutionContext::new(&host, &request);
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap_or_else(|e| panic!("{e}"));
        let f = program.function_index(func).expect("function");
        let args = make_args(alloc);
        let n = program.file().function(f).unwrap().record().num_results as usize;
        let slots: Vec<Cell<Option<RcAsyncValue>>> = (0..n).map(|_| Cell::new(None)).collect();
        // SAFETY: program, host, request and exec outlive the await and quiesce below.
        unsafe { raw::execute(&program, &exec, f, &args, &slots) };
        after_start(&args);
        let results: Vec<Option<RcAsyncValue>> = slots.into_iter().map(Cell::into_inner).collect();
        let awaited: Vec<RcAsyncValue> = results.iter().flatten().cloned().collect();
        host.await_values(&awaited).expect("results become available");
        host.quiesce();
        drop((awaited, args));
        let run = Run { results, output: std::mem::take(&mut output.lock().unwrap()) };
        check(&run);
        drop(run);
        let _ = reg.lookup("tfrt.call");
    }
    let s = arena.stats().unwrap();
    assert_eq!((s.in_use, s.live_allocations), (0, 0), "arena leaked after running @{func}: {s:?}");
    alloc.unregister().unwrap();
}

fn run(text: &str, func: &str, check: impl FnOnce(&Run)) {
    run_with(text, func, |_| vec![], |_| (), check)
}

fn i32_of(r: &Run, i: usize) -> i32 {
    *r.results[i].as_ref().unwrap().get::<i32>().unwrap_or_else(|| panic!("result {i}: {:?}", r.results[i]))
}

/// `@fib` from the firmware example, driven by this test's own `@main`.
const FIB: &str = concat!(
    include_str!("../../examples/firmware/programs/fib.mlir"),
    r#"func.func @main() -> i32 {
  %n = tfrt.constant.i32 15
  %f = tfrt.call @fib(%n) : (i32) -> i32
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %f, %ch
  tfrt.return %f : i32
}
"#
);

#[test]
fn fib_through_calls_and_ifs() {
    run(FIB, "main", |r| {
        assert_eq!(i32_of(r, 0), 610);
        assert_eq!(r.output, "int32 = 610\n");
    });
}

#[test]
fn errors_poison_only_downstream_kernels() {
    let text = r#"
func.func @main() -> (i32, i32, i32) {
  %zero = tfrt.constant.i32 0
  %x = tfrt.constant.i32 42
  %q, %rem = tfrt.div.i32 %x, %zero
  %bad = tfrt.add.i32 %q, %x
  %good = tfrt.add.i32 %x, %x
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %bad, %ch
  %ch2 = tfrt.print.i32 %good, %ch
  tfrt.return %bad, %good, %rem : i32, i32, i32
}
"#;
    run(text, "main", |r| {
        let bad = r.results[0].as_ref().unwrap();
        assert_eq!(bad.get_error().unwrap().message(), "Divide by zero");
        let loc = bad.get_error().unwrap().location.as_ref().unwrap().to_string();
        assert_eq!(loc, "t.mlir:5:14", "the error carries the failing kernel's location");
        assert_eq!(i32_of(r, 1), 84);
        assert!(r.results[2].as_ref().unwrap().is_error());
        assert_eq!(r.output, "int32 = 84\n", "the poisoned print is skipped");
    });
}

#[test]
fn cancellation_skips_everything_after_it() {
    // Kernels ordered after the cancel (through its chain) are skipped; unrelated ones that
    // ran earlier keep their values.
    let text = r#"
func.func @main() -> (i32, i32) {
  %one = tfrt.constant.i32 1
  %before = tfrt.add.i32 %one, %one
  %c = "test.cancel"(%before) : (i32) -> !tfrt.chain
  %after = "tfrt.add.i32"(%one, %one, %c) : (i32, i32, !tfrt.chain) -> i32
  tfrt.return %before, %after : i32, i32
}
"#;
    run(text, "main", |r| {
        assert_eq!(i32_of(r, 0), 2);
        let after = r.results[1].as_ref().unwrap();
        assert_eq!(after.get_error().map(|e| e.code), Some(hostrt_core::ErrorCode::Cancelled));
    });
}

#[test]
fn cancellation_inside_a_loop_stops_the_remaining_iterations() {
    let text = r#"
func.func @main() -> i32 {
  %n = tfrt.constant.i32 1000
  %x = tfrt.constant.i32 0
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    %ten = tfrt.constant.i32 10
    %stop = tfrt.equal.i32 %y, %ten
    %z = tfrt.if %stop, %y : (i32) -> (i32) {
      %c = "test.cancel"() : () -> !tfrt.chain
      tfrt.return %y : i32
    } else {
      tfrt.return %y : i32
    }
    tfrt.return %z : i32
  }
  tfrt.return %r : i32
}
"#;
    run(text, "main", |r| {
        let v = r.results[0].as_ref().unwrap();
        assert_eq!(v.get_error().map(|e| e.code), Some(hostrt_core::ErrorCode::Cancelled), "{v:?}");
    });
}

#[test]
fn repeat_loops_carry_values() {
    let text = r#"
func.func @main() -> i32 {
  %n = tfrt.constant.i32 100
  %x = tfrt.constant.i32 0
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    tfrt.return %y : i32
  }
  tfrt.return %r : i32
}
"#;
    run(text, "main", |r| assert_eq!(i32_of(r, 0), 100));
}

#[test]
fn non_strict_call_starts_before_its_arguments_are_available() {
    let text = r#"
func.func @first(%a: i32, %b: i32) -> i32 {
  tfrt.return %a : i32
}
func.func @main() -> (i32, i32) {
  %x = tfrt.constant.i32 7
  %slow = "test.async_copy"(%x) : (i32) -> i32
  %r = tfrt.call @first(%x, %slow) : (i32, i32) -> i32
  tfrt.return %r, %slow : i32, i32
}
"#;
    // Check availability right after execute, before the queue runs the async kernel's task.
    let text_owned = text.to_string();
    let module = parse("t.mlir", &text_owned).unwrap();
    let bef = AlignedBytes::new(&write(&module, None).unwrap());
    let (arena, alloc) = arena(1 << 20);
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    {
        let host = HostContext::new(alloc, &queue);
        let request = RequestContext::new();
        let exec = ExecutionContext::new(&host, &request);
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
        let slots = [Cell::new(None), Cell::new(None)];
        // SAFETY: everything outlives the quiesce below.
        unsafe { raw::execute(&program, &exec, program.function_index("main").unwrap(), &[], &slots) };
        let (r, slow) = (slots[0].take().unwrap(), slots[1].take().unwrap());
        assert!(!slow.is_available(), "the async argument is still pending");
        assert_eq!(r.get::<i32>(), Some(&7), "the call already returned its first argument");
        host.await_values(std::slice::from_ref(&slow)).unwrap();
        host.quiesce();
        assert_eq!(slow.get::<i32>(), Some(&7));
    }
    assert_eq!(arena.stats().unwrap().in_use, 0);
    alloc.unregister().unwrap();
}

#[test]
fn deep_waiter_chains_use_the_depth_guard_instead_of_the_stack() {
    // 20000 iterations, each waiting on the previous iteration's unavailable result: when the
    // argument arrives every waiter would nest inside the previous one without the guard.
    let text = r#"
func.func @main(%x: i32) -> i32 {
  %n = tfrt.constant.i32 20000
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    tfrt.return %y : i32
  }
  tfrt.return %r : i32
}
"#;
    run_with(
        text,
        "main",
        |alloc| vec![AsyncValueRef::<i32>::unconstructed(alloc).unwrap().into_rc()],
        |args| args[0].clone().downcast::<i32>().unwrap().emplace(5),
        |r| assert_eq!(i32_of(r, 0), 20005),
    );
}

#[test]
fn arguments_and_multiple_returns_of_one_register() {
    let text = r#"
func.func @main(%a: i32, %b: i32) -> (i32, i32, i32) {
  %s = tfrt.add.i32 %a, %b
  tfrt.return %s, %a, %s : i32, i32, i32
}
"#;
    run_with(
        text,
        "main",
        |alloc| {
            vec![
                AsyncValueRef::available(alloc, 2i32).unwrap().into_rc(),
                AsyncValueRef::available(alloc, 3i32).unwrap().into_rc(),
            ]
        },
        |_| (),
        |r| {
            assert_eq!((i32_of(r, 0), i32_of(r, 1), i32_of(r, 2)), (5, 2, 5));
            assert!(
                r.results[0].as_ref().unwrap().ptr_eq(r.results[2].as_ref().unwrap()),
                "one placeholder, two slots"
            );
        },
    );
}

#[test]
fn wide_kernels_take_their_buffers_from_the_allocator() {
    // 20 operands and 20 results: beyond the 8 kept on the stack.
    let vals: Vec<String> = (0..20).map(|i| format!("%v{i}")).collect();
    let mut text = String::from("func.func @main() -> !tfrt.chain {\n");
    for v in &vals {
        text += &format!("  {v} = tfrt.new.chain\n");
    }
    text +=
        &format!("  %m = tfrt.merge.chains {} : {}\n", vals.join(", "), vec!["!tfrt.chain"; 20].join(", "));
    text += "  tfrt.return %m : !tfrt.chain\n}\n";
    run(&text, "main", |r| assert!(r.results[0].as_ref().unwrap().is_concrete()));
}

#[test]
fn cond_case_and_casts() {
    let text = r#"
func.func @one() -> i32 {
  %x = tfrt.constant.i32 1
  tfrt.return %x : i32
}
func.func @two() -> i32 {
  %x = tfrt.constant.i32 2
  tfrt.return %x : i32
}
func.func @main() -> (i32, i32, i32, i64, f32) {
  %t = tfrt.constant.i1 false
  %c = tfrt.cond %t @one @two () : () -> (i32)
  %i = tfrt.constant.i32 0
  %first = tfrt.case %i [@one, @two] () : () -> (i32)
  %big = tfrt.constant.i32 7
  %last = tfrt.case %big [@one, @two] () : () -> (i32)
  %f = tfrt.constant.f32 2.75
  %n = "tfrt.cast.f32_to_i64"(%f) : (f32) -> i64
  %m = "tfrt.cast.i64_to_f32"(%n) : (i64) -> f32
  tfrt.return %c, %first, %last, %n, %m : i32, i32, i32, i64, f32
}
"#;
    run(text, "main", |r| {
        assert_eq!(
            (i32_of(r, 0), i32_of(r, 1), i32_of(r, 2)),
            (2, 1, 2),
            "an out-of-range case index picks the last branch"
        );
        assert_eq!(r.results[3].as_ref().unwrap().get::<i64>(), Some(&2));
        assert_eq!(r.results[4].as_ref().unwrap().get::<f32>(), Some(&2.0));
    });
}

/// A `tfrt.while` body: counts `%i` up to 10, sums into `%acc`, prints each new `%i`.
const WHILE_STEP: &str = r#"
func.func @step(%i: i32, %acc: i32) -> (i32, i32, i1) {
  %one = tfrt.constant.i32 1
  %next = tfrt.add.i32 %i, %one
  %sum = tfrt.add.i32 %acc, %next
  %ten = tfrt.constant.i32 9
  %more = "tfrt.lessequal.i32"(%next, %ten) : (i32, i32) -> i1
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %next, %ch
  tfrt.return %next, %sum, %more : i32, i32, i1
}
"#;

/// Run `@step` under `tfrt.while` with `parallel_iterations`: ten bodies, in order.
fn run_while(parallel_iterations: u32) {
    let text = format!(
        "{WHILE_STEP}func.func @main() -> (i32, i32) {{
  %go = tfrt.constant.i1 true
  %zero = tfrt.constant.i32 0
  %i, %acc = tfrt.while %go @step(%zero, %zero) parallel_iterations({parallel_iterations}) : (i32, i32) -> (i32, i32)
  tfrt.return %i, %acc : i32, i32
}}
"
    );
    run(&text, "main", |r| {
        assert_eq!((i32_of(r, 0), i32_of(r, 1)), (10, 55));
        let printed: Vec<&str> = r.output.lines().collect();
        let expected: Vec<String> = (1..=10).map(|i| format!("int32 = {i}")).collect();
        assert_eq!(printed, expected, "ten bodies ran, in order");
    });
}

#[test]
fn while_loops_until_the_body_says_stop() {
    run_while(1);
}

#[test]
fn parallel_while_starts_each_body_in_a_task_with_the_same_results() {
    // parallel_iterations(4): every body starts with the asynchronous kick-off and the loop
    // continues in the condition's waiter; the results equal the inline loop's.
    run_while(4);
}

#[test]
fn parallel_for_halves_the_block_range_into_tasks() {
    // [0, 10) in blocks of 3: block 0 runs inline, [2, 4) and [1, 2) become tasks, [2, 4)
    // hands [3, 4) to another task (docs/execution.md): blocks run in the order 0, 2, 1, 3, each
    // printing its bounds. The result waits for every body's chain.
    let text = r#"
func.func @main() -> !tfrt.chain {
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 10
  %b = tfrt.constant.i32 3
  %done = tfrt.parallel_for.i32 %s to %e fixed %b {
    %ch = tfrt.new.chain
    %ch1 = tfrt.print.i32 %s, %ch
    %ch2 = tfrt.print.i32 %e, %ch1
    tfrt.return %ch2 : !tfrt.chain
  }
  tfrt.return %done : !tfrt.chain
}
"#;
    run(text, "main", |r| {
        assert!(r.results[0].as_ref().unwrap().is_concrete());
        let bounds: Vec<&str> = r.output.lines().map(|l| l.trim_start_matches("int32 = ")).collect();
        assert_eq!(bounds, ["0", "3", "6", "9", "3", "6", "9", "10"]);
    });
}

#[test]
fn deep_recursion_continues_in_tasks_instead_of_overflowing_the_stack() {
    // 3000 nested tfrt.call + tfrt.if levels used to overflow an 8 MiB stack (a few KiB per
    // level); past HostContext::max_call_depth calls start in tasks, and the chain of 6000
    // result forwarders then resolves without recursion.
    let text = r#"
func.func @down(%n: i32) -> i32 {
  %zero = tfrt.constant.i32 0
  %done = "tfrt.lessequal.i32"(%n, %zero) : (i32, i32) -> i1
  %r = tfrt.if %done, %n : (i32) -> (i32) {
    tfrt.return %n : i32
  } else {
    %m1 = tfrt.constant.i32 -1
    %k = tfrt.add.i32 %n, %m1
    %x = tfrt.call @down(%k) : (i32) -> i32
    tfrt.return %x : i32
  }
  tfrt.return %r : i32
}
func.func @main() -> i32 {
  %n = tfrt.constant.i32 3000
  %r = tfrt.call @down(%n) : (i32) -> i32
  tfrt.return %r : i32
}
"#;
    run(text, "main", |r| assert_eq!(i32_of(r, 0), 0));
}

#[test]
fn exhausting_the_arena_mid_run_gives_error_results_and_leaks_nothing() {
    // fib(30) needs far more than 64 KiB: allocations start failing deep in the recursion.
    // Every result must still complete (with the static out-of-memory error when not even
    // an error value fits) and every block must come back; found by the mlir_run fuzzer.
    let text = FIB.replace("constant.i32 15", "constant.i32 30");
    run_in_arena(
        64 << 10,
        &text,
        "main",
        |_| vec![],
        |_| (),
        |r| {
            let e = r.results[0].as_ref().unwrap();
            assert_eq!(
                e.get_error().map(|d| d.code),
                Some(hostrt_core::ErrorCode::ResourceExhausted),
                "{e:?}"
            );
        },
    );
}

#[test]
fn once_runs_its_function_once_per_request() {
    let text = r#"
func.func @hello(%x: i32, %ch: !tfrt.chain) -> i32 {
  %ch1 = tfrt.print.i32 %x, %ch
  tfrt.return %x : i32
}
func.func @main() -> (i32, i32) {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  %r1 = tfrt.once @hello(%a, %ch) : (i32, !tfrt.chain) -> (i32)
  %r2 = "tfrt.once"(%b, %ch) {function = @hello} : (i32, !tfrt.chain) -> i32
  tfrt.return %r1, %r2 : i32, i32
}
"#;
    // Which `tfrt.once` runs first is the scheduler's choice (with TFRT's streams the
    // second one, in the `%ch` task's stream switch); whichever it is runs alone.
    run(text, "main", |r| {
        let first = i32_of(r, 0);
        assert_eq!(r.output, format!("int32 = {first}\n"), "the function ran once");
        assert_eq!(i32_of(r, 1), first, "both calls return the first run's results");
    });
}

/// Run `func` of `text` with the `k`-th allocation and every later one failing, for every
/// `k` until a run no longer runs out: every run must complete all its results (an await
/// that cannot finish is an error on this queue) and give every block back.
fn sweep_allocation_failures(text: &str, func: &str) -> usize {
    let module = parse("t.mlir", text).unwrap_or_else(|e| panic!("{e}"));
    let bef = AlignedBytes::new(&write(&module, None).unwrap());
    let reg = registry();
    let (backing, loader) = arena(1 << 20);
    let program = Program::load(bef.as_bytes(), &reg, loader).unwrap();
    for k in 0.. {
        let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, k)));
        let alloc = Allocator::register(faulty).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue);
        let results = program.call(&host, func, &[]);
        results.unwrap_or_else(|e| panic!("k={k}: results never complete: {e:?}"));
        let leaked = faulty.live();
        assert_eq!(leaked, 0, "k={k}: {leaked} blocks not returned after running @{func}");
        alloc.unregister().unwrap();
        if faulty.refused() == 0 {
            return k; // this run had all the memory it asked for
        }
    }
    unreachable!()
}

#[test]
fn every_allocation_failure_completes_all_results_and_leaks_nothing() {
    let while_text = format!(
        "{WHILE_STEP}func.func @main() -> (i32, i32) {{
  %go = tfrt.constant.i1 true
  %zero = tfrt.constant.i32 0
  %i, %acc = tfrt.while %go @step(%zero, %zero) parallel_iterations(4) : (i32, i32) -> (i32, i32)
  tfrt.return %i, %acc : i32, i32
}}
"
    );
    let programs = [
        (FIB.replace("constant.i32 15", "constant.i32 6"), "main"),
        (while_text.clone(), "main"),
        (while_text.replace("parallel_iterations(4)", "parallel_iterations(1)"), "main"),
        (
            r#"func.func @main() -> i32 {
  %n = tfrt.constant.i32 5
  %x = tfrt.constant.i32 1
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %y = "test.async_copy"(%x) : (i32) -> i32
    %z = tfrt.add.i32 %x, %y
    tfrt.return %z : i32
  }
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 7
  %b = tfrt.constant.i32 2
  %done = tfrt.parallel_for.i32 %s to %e fixed %b {
    tfrt.return
  }
  %c = "tfrt.lessequal.i32"(%r, %e) : (i32, i32) -> i1
  %out = tfrt.if %c, %r : (i32) -> (i32) {
    tfrt.return %r : i32
  } else {
    %m = tfrt.add.i32 %r, %r
    tfrt.return %m : i32
  }
  tfrt.return %out : i32
}
"#
            .to_string(),
            "main",
        ),
    ];
    for (text, func) in &programs {
        let runs = sweep_allocation_failures(text, func);
        assert!(runs > 10, "the sweep covered {runs} failure points");
    }
}
