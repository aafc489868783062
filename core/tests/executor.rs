//! The executor end to end over a fixed arena that must be empty again afterwards: what the
//! `hostrt check` programs (`executor/` of `hostrt_testing::program`, whose CHECK lines pin
//! the output) cannot show — memory, the asynchronous entry (`executor::raw`), arguments, and
//! allocation failure at every point.

use std::cell::Cell;

use hostrt_core::allocator::{FailAfter, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{CallError, Program, raw};
use hostrt_core::kernel::{Argument, Output};
use hostrt_core::{
    Allocator, AsyncValueRef, ErrorCode, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, leaked_arena};

/// Programs only these tests run (see the file's header).
const RAW_SEAM: &str = include_str!("programs/raw_seam.mlir");

/// `calls.mlir` of `hostrt check`'s executor suite.
fn calls() -> String {
    hostrt_testing::program("executor/calls.mlir")
}

/// `loops.mlir` of `hostrt check`'s executor suite.
fn loops() -> String {
    hostrt_testing::program("executor/loops.mlir")
}

/// A test-only kernel: returns its input through a value completed later by a task.
fn async_copy(x: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(r) = out.allocate() else { return };
    let v = *x;
    if let Err(oom) = ctx.host().enqueue_work(move || r.emplace(v)) {
        (oom.into_inner())(); // no memory for the task: complete it here
    }
}

fn registry() -> KernelRegistry<256> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    r.add_kernel("test.async_copy", hostrt_core::kernel!(async_copy)).unwrap();
    r
}

fn bef(name: &str, text: &str) -> AlignedBytes {
    AlignedBytes::new(
        &hostrt_compiler::compile(name, text, Default::default()).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Load `text` over a fresh arena of `bytes`, hand the program and a host to `f`, then check
/// that everything went back to the arena. The host makes other streams' kernels tasks, as
/// TFRT schedules them (`in_arena_inline`: the single-threaded default, inline).
fn in_arena(bytes: usize, text: &str, f: impl FnOnce(&Program<'_>, &HostContext<'_>, Allocator)) {
    in_arena_with(bytes, text, true, f)
}

/// [`in_arena`] with the single-threaded queue's default: other streams' kernels inline
/// (docs/execution.md, "Streams on one thread").
fn in_arena_inline(bytes: usize, text: &str, f: impl FnOnce(&Program<'_>, &HostContext<'_>, Allocator)) {
    in_arena_with(bytes, text, false, f)
}

fn in_arena_with(
    bytes: usize,
    text: &str,
    stream_tasks: bool,
    f: impl FnOnce(&Program<'_>, &HostContext<'_>, Allocator),
) {
    let bef = bef("t.mlir", text);
    let (arena, alloc) = leaked_arena(bytes).unwrap();
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    {
        let host = HostContext::new(alloc, &queue).with_stream_tasks(stream_tasks);
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap_or_else(|e| panic!("{e}"));
        f(&program, &host, alloc);
    }
    let s = arena.stats().unwrap();
    assert_eq!((s.in_use, s.live_allocations), (0, 0), "arena leaked: {s:?}");
    alloc.unregister().unwrap();
}

fn i32_at(v: &RcAsyncValue) -> i32 {
    *v.get::<i32>().unwrap_or_else(|| panic!("not an i32: {v:?}"))
}

#[test]
fn suite_programs_give_every_block_back() {
    // Every parameterless function of the suite's programs (their output is checked by
    // `hostrt check`), each through `Program::call`, over one arena.
    for (text, expect) in
        [(calls(), [("fib15", 610), ("deep", 0)]), (loops(), [("repeat", 100), ("while4", 10)])]
    {
        in_arena(4 << 20, &text, |program, host, _| {
            for i in 0..program.file().num_functions() as u32 {
                let f = program.file().function(i).unwrap();
                if f.record().num_args > 0 || f.name().is_empty() {
                    continue;
                }
                let results =
                    program.call(host, f.name(), &[]).unwrap_or_else(|e| panic!("{}: {e:?}", f.name()));
                assert!(
                    results.iter().all(|r| r.is_available() && !r.is_error()),
                    "{}: {results:?}",
                    f.name()
                );
                if let Some((_, v)) = expect.iter().find(|(name, _)| *name == f.name()) {
                    assert_eq!(results.get::<i32>(0), Ok(v), "{}", f.name());
                }
            }
        });
    }
}

#[test]
fn stream_tasks_sharing_a_block_run_and_give_it_back() {
    in_arena(1 << 20, RAW_SEAM, |program, host, _| {
        for _ in 0..3 {
            let results = program.call(host, "fan", &[]).unwrap();
            assert_eq!(results.get::<i32>(0), Ok(&4));
        }
    });
}

#[test]
fn single_threaded_default_runs_other_streams_inline() {
    // `fan`'s four async copies are streams of their own. On the single-threaded queue they
    // run in the kick-off by default: only the copies' own tasks reach the queue. With stream
    // tasks, TFRT's order, the same call also allocates the block of the streams' tasks.
    let allocations = |stream_tasks: bool| {
        let mut made = 0;
        in_arena_with(1 << 20, RAW_SEAM, stream_tasks, |program, host, alloc| {
            assert_eq!(host.stream_tasks(), stream_tasks);
            let before = alloc.stats().unwrap().total_allocations;
            let results = program.call(host, "fan", &[]).unwrap();
            assert_eq!(results.get::<i32>(0), Ok(&4));
            made = alloc.stats().unwrap().total_allocations - before;
        });
        made
    };
    let (inline, tasks) = (allocations(false), allocations(true));
    assert!(inline < tasks, "inline {inline} allocations, with stream tasks {tasks}");
    in_arena_inline(1 << 20, RAW_SEAM, |_, host, _| {
        assert!(!host.stream_tasks(), "the single-threaded queue's default");
    });
}

#[test]
fn non_strict_call_starts_before_its_arguments_are_available() {
    in_arena(1 << 20, RAW_SEAM, |program, host, _| {
        let request = RequestContext::new();
        let exec = ExecutionContext::new(host, &request);
        let slots = [Cell::new(None), Cell::new(None)];
        let f = program.function_index("non_strict").unwrap();
        // Availability right after kick-off, before the queue runs the async kernel's task:
        // only the asynchronous entry shows it.
        // SAFETY: everything outlives the await and quiesce below.
        unsafe { raw::execute(program, &exec, f, &[], &slots) };
        let (r, slow) = (slots[0].take().unwrap(), slots[1].take().unwrap());
        assert!(!slow.is_available(), "the async argument is still pending");
        assert_eq!(r.get::<i32>(), Some(&7), "the call already returned its first argument");
        host.await_values(std::slice::from_ref(&slow)).unwrap();
        host.quiesce();
        assert_eq!(slow.get::<i32>(), Some(&7));
    });
}

#[test]
fn a_pending_result_with_non_strict_and_strict_users_reaches_both_resolved() {
    // `%v` is a result of `@main`, so its users get the result's placeholder; it is still
    // pending when published, and it has a non-strict user (the call) and a strict one (the
    // add), which must see it resolved.
    let text = r#"
        func.func @id(%x: i32) -> i32 {
          tfrt.return %x : i32
        }
        func.func @main() -> (i32, i32, i32) {
          %a = tfrt.constant.i32 1
          %v = "test.async_copy"(%a) : (i32) -> i32
          %c = tfrt.call @id(%v) : (i32) -> i32
          %d = tfrt.add.i32 %v, %a
          tfrt.return %v, %c, %d : i32, i32, i32
        }"#;
    in_arena(1 << 20, text, |program, host, _| {
        let r = program.call(host, "main", &[]).unwrap();
        assert_eq!((i32_at(&r[0]), i32_at(&r[1]), i32_at(&r[2])), (1, 1, 2));
    });
}

#[test]
fn deep_waiter_chains_use_the_depth_guard_instead_of_the_stack() {
    in_arena(4 << 20, RAW_SEAM, |program, host, alloc| {
        let request = RequestContext::new();
        let exec = ExecutionContext::new(host, &request);
        let x = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
        let slot = [Cell::new(None)];
        let f = program.function_index("waiter_chain").unwrap();
        // The argument is completed after kick-off, so 20000 waiters complete in one go.
        // SAFETY: everything outlives the await and quiesce below.
        unsafe { raw::execute(program, &exec, f, &[x.clone().into_rc()], &slot) };
        x.emplace(5);
        let r = slot[0].take().unwrap();
        host.await_values(std::slice::from_ref(&r)).unwrap();
        host.quiesce();
        assert_eq!(i32_at(&r), 20005);
    });
}

#[test]
fn arguments_and_multiple_returns_of_one_register() {
    in_arena(1 << 20, RAW_SEAM, |program, host, _| {
        let two = host.make_available(2i32).unwrap().into_rc();
        let three = host.make_available(3i32).unwrap().into_rc();
        let r = program.call(host, "shared_results", &[two, three]).unwrap();
        assert_eq!((i32_at(&r[0]), i32_at(&r[1]), i32_at(&r[2])), (5, 2, 5));
        assert!(r[0].ptr_eq(&r[2]), "one placeholder, two slots");
        let wrong = program.call(host, "shared_results", &[]).unwrap_err();
        assert_eq!(wrong, CallError::WrongArgumentCount);
        assert_eq!(hostrt_core::Diagnostic::from(wrong).code, ErrorCode::InvalidArgument);
        assert_eq!(program.call(host, "missing", &[]).unwrap_err(), CallError::NotFound);
    });
}

#[test]
fn exhausting_the_arena_mid_run_gives_error_results_and_leaks_nothing() {
    // fib(30) needs far more than 64 KiB: allocations start failing deep in the recursion.
    // Every result must still complete (with the static out-of-memory error when not even
    // an error value fits) and every block must come back; found by the mlir_run fuzzer.
    let text = calls().replace("constant.i32 15", "constant.i32 30");
    in_arena(64 << 10, &text, |program, host, _| {
        let r = program.call(host, "fib15", &[]).unwrap();
        assert_eq!(r[0].get_error().map(|d| d.code), Some(ErrorCode::ResourceExhausted), "{r:?}");
    });
}

/// Run `func` of `text` with the `k`-th allocation and every later one failing, for every
/// `k` until a run no longer runs out: every run must complete all its results (an await
/// that cannot finish is an error on this queue) and give every block back.
fn sweep_allocation_failures(text: &str, func: &str, stream_tasks: bool) -> usize {
    let bef = bef("t.mlir", text);
    let reg = registry();
    let (backing, loader) = leaked_arena(1 << 20).unwrap();
    let program = Program::load(bef.as_bytes(), &reg, loader).unwrap();
    for k in 0.. {
        let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, k)));
        let alloc = Allocator::register(faulty).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue).with_stream_tasks(stream_tasks);
        let results = program.call(&host, func, &[]);
        results.unwrap_or_else(|e| panic!("k={k}: results never complete: {e:?}"));
        drop(host); // gives back the frame block it keeps for the next call
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
    // `wide`: a kernel whose operand buffer comes from the allocator; when that buffer could
    // not be allocated, the kernel's operand references used to stay in their registers.
    let programs = [
        (calls(), "fib6"),
        (loops(), "while4"),
        (loops(), "while1"),
        (loops(), "wide"),
        (RAW_SEAM.to_string(), "mix"),
        (RAW_SEAM.to_string(), "fan"),
    ];
    // Both ways of running other streams' kernels: as tasks (TFRT's order) and inline.
    for (text, func) in &programs {
        for stream_tasks in [true, false] {
            let runs = sweep_allocation_failures(text, func, stream_tasks);
            assert!(runs > 10, "the sweep of @{func} covered {runs} failure points");
        }
    }
}

/// `Program::load_preverified` (bytes verified when firmware was built): runs the verified
/// bytes, and still refuses a corrupted copy (checksum) and an unregistered kernel (named,
/// with its location), as `load` does.
#[test]
fn preverified_load_runs_verified_bytes_and_still_checks_checksum_and_names() {
    let text = "func.func @f() -> i32 {\n  %x = tfrt.constant.i32 20\n  %y = tfrt.add.i32 %x, %x\n  \
                tfrt.return %y : i32\n}\n";
    let compiled = hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap();
    let leak = |b: &[u8]| -> &'static [u8] { Box::leak(Box::new(AlignedBytes::new(b))).as_bytes() };
    let (_, alloc) = leaked_arena(1 << 16).unwrap();
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let good = leak(&compiled);
    hostrt_core::bef::BefFile::load_unresolved(good, alloc).unwrap();
    // SAFETY: verified just above.
    let program = unsafe { Program::load_preverified(good, &reg, &host) }.unwrap();
    assert_eq!(i32_at(&program.call(&host, "f", &[]).unwrap()[0]), 40);
    assert_eq!(program.static_bytes().map(<[u8]>::as_ptr), Some(good.as_ptr()));
    drop(program);

    let mut flipped = compiled.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    // SAFETY: verified bytes with one bit flipped, which CRC-32 always detects: the load
    // checks the checksum before reading anything past the header.
    let e = unsafe { Program::load_preverified(leak(&flipped), &reg, &host) }.unwrap_err();
    assert_eq!(e.kind, hostrt_core::bef::BefErrorKind::BadChecksum, "{e}");

    let empty: KernelRegistry<4> = KernelRegistry::new();
    // SAFETY: verified above.
    let e = unsafe { Program::load_preverified(good, &empty, &host) }.unwrap_err();
    assert!(e.to_string().starts_with("t.mlir:2:8: unknown kernel 'tfrt.constant.i32'"), "{e}");
}
