//! Scalar registers (docs/execution.md): which kernels the load plans to run on register
//! words, and that such programs compute what the generic path computes, under
//! cancellation, on the multi-threaded queue and at every allocation failure, giving every
//! block back.

use std::cell::Cell;

use hostrt_core::allocator::{FailAfter, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, raw};
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ErrorCode, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, MultiThreadedWorkQueue, leaked_arena};

/// A chain of adds with escaping values: `%a`..`%d` stay in registers; `%e` is printed and
/// `%f` returned, so both become async values; `%g` reads a function argument (an async
/// value) beside the word `%one`, so its result and its user's are async values.
const MIXED: &str = r#"
func.func @mixed(%arg: i32) -> (i32, i32, i32) {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  %c = tfrt.add.i32 %a, %b
  %d = tfrt.mul.i32 %c, %c
  %e = tfrt.add.i32 %d, %a
  %ch1 = tfrt.print.i32 %e, %ch
  %f = "tfrt.minus.i32"(%d, %b) : (i32, i32) -> i32
  %one = tfrt.constant.i32 1
  %g = tfrt.add.i32 %arg, %one
  %h = tfrt.add.i32 %g, %g
  tfrt.return %f, %h, %e : i32, i32, i32
}

func.func @floats() -> (f32, i1, i64) {
  %x = tfrt.constant.f32 1.5
  %y = tfrt.constant.f32 2.0
  %z = "tfrt.multiply.f32"(%x, %y) : (f32, f32) -> f32
  %w = tfrt.add.f32 %z, %x
  %p = tfrt.constant.i64 40000000000
  %q = tfrt.add.i64 %p, %p
  %i = tfrt.constant.i32 3
  %j = tfrt.constant.i32 4
  %le = "tfrt.lessequal.i32"(%i, %j) : (i32, i32) -> i1
  %t = tfrt.constant.i1 1
  %both = "tfrt.and.i1"(%le, %t) : (i1, i1) -> i1
  tfrt.return %w, %both, %q : f32, i1, i64
}
"#;

/// A graph of independent adds over many streams, summed pairwise: on the multi-threaded
/// queue, words cross threads between producer and consumer.
fn tree() -> String {
    let mut s = String::from("func.func @tree() -> i32 {\n  %one = tfrt.constant.i32 1\n");
    for i in 0..64 {
        s += &format!("  %l0_{i} = tfrt.add.i32 %one, %one\n");
    }
    let mut width = 64;
    let mut level = 0;
    while width > 1 {
        for i in 0..width / 2 {
            s += &format!(
                "  %l{}_{i} = tfrt.add.i32 %l{level}_{}, %l{level}_{}\n",
                level + 1,
                2 * i,
                2 * i + 1
            );
        }
        width /= 2;
        level += 1;
    }
    s += &format!("  tfrt.return %l{level}_0 : i32\n}}\n");
    s
}

fn registry() -> KernelRegistry<256> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    r
}

fn bef(text: &str) -> AlignedBytes {
    AlignedBytes::new(
        &hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Run `f` with a host over a fresh arena, which must hold nothing afterwards (load programs
/// inside `f`, so they are gone by then).
fn in_arena(f: impl FnOnce(&HostContext<'_>, Allocator)) {
    let (arena, alloc) = leaked_arena(1 << 20).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    f(&HostContext::new(alloc, &queue), alloc);
    let s = arena.stats().unwrap();
    assert_eq!((s.in_use, s.live_allocations), (0, 0), "arena leaked: {s:?}");
}

/// Each kernel's planned mode, (runs scalar, result stays in its register), in textual
/// order.
fn modes(program: &Program<'_>, func: &str) -> Vec<(bool, bool)> {
    (0..).map_while(|k| program.scalar_mode(func, k)).collect()
}

#[test]
fn the_load_plans_registers_only_scalar_kernels_use() {
    let bef = bef(MIXED);
    let reg = registry();
    let (_, alloc) = leaked_arena(1 << 20).unwrap();
    let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
    let m = modes(&program, "mixed");
    // new.chain, a, b, c, d, e, print, f, one, g, h
    assert_eq!(m.len(), 11, "{m:?}");
    let scalar_inline = (true, true);
    let scalar_escaping = (true, false);
    let generic = (false, false);
    assert_eq!(m[0], generic, "tfrt.new.chain has no scalar form");
    assert_eq!(m[1], scalar_inline, "%a: used only by scalar kernels");
    assert_eq!(m[2], scalar_inline, "%b");
    assert_eq!(m[3], scalar_inline, "%c");
    assert_eq!(m[4], scalar_inline, "%d");
    assert_eq!(m[5], scalar_escaping, "%e is printed and returned");
    assert_eq!(m[6], generic, "tfrt.print.i32");
    assert_eq!(m[7], scalar_escaping, "%f is returned");
    assert_eq!(m[8], scalar_inline, "%one: %g reads it as a word beside an async value");
    assert_eq!(m[9], scalar_escaping, "%g reads a function argument, so its result is a value");
    assert_eq!(m[10], scalar_escaping, "%h reads %g, an async value");
    // A value a generic kernel reads is an async value; the scalar kernels reading it still
    // run scalar, but their results, and those of their users, are async values too.
    let shared = MIXED.replace("tfrt.print.i32 %e, %ch", "tfrt.print.i32 %a, %ch");
    let shared_bef = self::bef(&shared);
    let program = Program::load(shared_bef.as_bytes(), &reg, alloc).unwrap();
    let m = modes(&program, "mixed");
    assert_eq!(m[1], scalar_escaping, "%a is printed: {m:?}");
    assert_eq!(m[2], scalar_inline, "%b: {m:?}");
    assert_eq!((m[3], m[4]), (scalar_escaping, scalar_escaping), "%c, %d: {m:?}");
    let f = modes(&program, "floats");
    // Every kernel has a scalar form, but the i64 ones (`%p`, `%q`) only where a register
    // word holds an i64 (64-bit targets; CI also runs this on armv7).
    let wide = cfg!(target_pointer_width = "64");
    for (i, (scalar, _)) in f.iter().enumerate() {
        assert_eq!(*scalar, wide || !(4..=5).contains(&i), "kernel {i}: {f:?}");
    }
    assert_eq!(f[4], (wide, wide), "%p");
}

#[test]
fn scalar_programs_compute_what_the_generic_path_does_and_give_every_block_back() {
    let bef = bef(MIXED);
    let reg = registry();
    in_arena(|host, alloc| {
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
        let arg = host.make_available(10i32).unwrap().into_rc();
        let r = program.call(host, "mixed", &[arg]).unwrap();
        // c = 3, d = 9, e = 10, f = 7, g = 11, h = 22
        assert_eq!((r.get::<i32>(0), r.get::<i32>(1), r.get::<i32>(2)), (Ok(&7), Ok(&22), Ok(&10)));
        let r = program.call(host, "floats", &[]).unwrap();
        assert_eq!(r.get::<f32>(0), Ok(&4.5));
        assert_eq!(r.get::<bool>(1), Ok(&true));
        assert_eq!(r.get::<i64>(2), Ok(&80_000_000_000));
    });
}

#[test]
fn a_cancelled_request_skips_scalar_kernels_and_returns_the_cancellation() {
    let bef = bef(MIXED);
    let reg = registry();
    in_arena(|host, alloc| {
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
        let request = RequestContext::new();
        assert!(request.cancel(alloc).unwrap());
        let exec = ExecutionContext::new(host, &request);
        let arg = host.make_available(10i32).unwrap().into_rc();
        let r = program.call_in(&exec, "mixed", &[arg]).unwrap();
        for i in 0..3 {
            let e = r.get::<i32>(i).unwrap_err();
            assert_eq!(e.code, ErrorCode::Cancelled, "result {i}: {e:?}");
        }
        let r = program.call_in(&exec, "floats", &[]).unwrap();
        assert_eq!(r.get::<f32>(0).unwrap_err().code, ErrorCode::Cancelled);
    });
}

#[test]
fn words_cross_threads_on_the_multi_threaded_queue() {
    let text = tree();
    let bef = bef(&text);
    let reg = registry();
    let (_, alloc) = leaked_arena(4 << 20).unwrap();
    let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
    let m = modes(&program, "tree");
    assert!(m.iter().all(|(s, _)| *s), "{m:?}");
    let queue = MultiThreadedWorkQueue::new(2, 1);
    let host = HostContext::new(alloc, &queue).with_stream_tasks(true);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let main = program.function_index("tree").unwrap();
    for _ in 0..200 {
        let slot = [Cell::new(None::<RcAsyncValue>)];
        // SAFETY: program and contexts outlive the await and quiesce below.
        unsafe { raw::execute(&program, &exec, main, &[], &slot) };
        let r = slot[0].take().unwrap();
        queue.await_values(std::slice::from_ref(&r)).unwrap();
        queue.quiesce();
        assert_eq!(r.get::<i32>(), Some(&128));
    }
}

#[test]
fn every_allocation_failure_in_a_scalar_program_completes_and_leaks_nothing() {
    let bef = bef(MIXED);
    let reg = registry();
    let (backing, loader) = leaked_arena(1 << 20).unwrap();
    let program = Program::load(bef.as_bytes(), &reg, loader).unwrap();
    let mut covered = 0;
    for k in 0.. {
        let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, k)));
        let alloc = Allocator::register(faulty).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue);
        let arg = RcAsyncValue::out_of_memory(); // an error argument: %g and %h take it
        let r = program.call(&host, "mixed", &[arg]).unwrap_or_else(|e| panic!("k={k}: {e:?}"));
        // `%f` never depends on the argument: its value or an out-of-memory error.
        match r.get::<i32>(0) {
            Ok(v) => assert_eq!(*v, 7, "k={k}"),
            Err(e) => assert_eq!(e.code, ErrorCode::ResourceExhausted, "k={k}: {e:?}"),
        }
        drop(r);
        drop(host);
        assert_eq!(faulty.live(), 0, "k={k}: blocks not returned");
        alloc.unregister().unwrap();
        covered += 1;
        if faulty.refused() == 0 {
            break;
        }
    }
    assert!(covered > 3, "the sweep covered {covered} failure points");
}

#[test]
fn a_load_without_memory_for_the_plan_runs_everything_generically() {
    // The plan's tables come after the kernel table: with just enough memory for the load
    // but not the plan, the program still loads and runs, on the generic path.
    let bef = bef(MIXED);
    let reg = registry();
    let (backing, run_alloc) = leaked_arena(1 << 20).unwrap();
    let mut planned_somewhere = false;
    for k in 0..64 {
        let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, k)));
        let alloc = Allocator::register(faulty).unwrap();
        let Ok(program) = Program::load(bef.as_bytes(), &reg, alloc) else { continue };
        let planned = modes(&program, "mixed").iter().any(|(s, _)| *s);
        planned_somewhere |= planned;
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(run_alloc, &queue);
        let arg = host.make_available(10i32).unwrap().into_rc();
        let r = program.call(&host, "mixed", &[arg]).unwrap();
        assert_eq!(r.get::<i32>(0), Ok(&7), "k={k} planned={planned}");
        assert_eq!(r.get::<i32>(1), Ok(&22), "k={k} planned={planned}");
        drop((r, host, program));
        assert_eq!(faulty.live(), 0);
        alloc.unregister().unwrap();
        if planned {
            break;
        }
    }
    assert!(planned_somewhere);
}

/// A verified file whose functions share a kernel record (the verifier checks each run of
/// records is in bounds, not that runs are disjoint): `@f`'s plan would keep `%x` a word
/// while `@g`'s, over the same add, would read it as a value. The load plans nothing and
/// both functions run on the generic path.
#[test]
fn functions_sharing_kernel_records_get_no_plan() {
    use hostrt_core::bef::format::{self as fmt, FunctionRecord, section};
    let text = r#"
func.func @f() -> i32 {
  %x = tfrt.constant.i32 4096
  %y = tfrt.add.i32 %x, %x
  tfrt.return %y : i32
}
func.func @g(%a: i32) -> i32 {
  %y = tfrt.add.i32 %a, %a
  tfrt.return %y : i32
}
"#;
    let mut b = hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap();
    let rd = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let n = rd(&b, 12) as usize;
    let dir = (0..n).map(|i| fmt::HEADER_SIZE + i * fmt::SECTION_ENTRY_SIZE);
    let functions =
        dir.clone().find(|at| rd(&b, *at) == section::FUNCTIONS).map(|at| rd(&b, at + 4)).unwrap();
    let record = |i: usize| functions as usize + i * size_of::<FunctionRecord>();
    let first = std::mem::offset_of!(FunctionRecord, first_kernel);
    // `@g`'s one kernel becomes `@f`'s add (record 1), which reads the same registers.
    let f_first = rd(&b, record(0) + first);
    b[record(1) + first..record(1) + first + 4].copy_from_slice(&(f_first + 1).to_le_bytes());
    fmt::seal(&mut b);
    let bef = AlignedBytes::new(&b);
    let reg = registry();
    in_arena(|host, alloc| {
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(modes(&program, "f"), [(false, false); 2]);
        assert_eq!(program.call(host, "f", &[]).unwrap().get::<i32>(0), Ok(&8192));
        let a = host.make_available(5i32).unwrap().into_rc();
        assert_eq!(program.call(host, "g", &[a]).unwrap().get::<i32>(0), Ok(&10));
    });
}

/// The same kernels without their scalar forms (plain strict entries): what the generic
/// path computes.
fn generic_registry() -> KernelRegistry<256> {
    let mut r = KernelRegistry::new();
    for group in [
        hostrt_core::basic_kernels::integer::ALL,
        hostrt_core::basic_kernels::float::ALL,
        hostrt_core::basic_kernels::print::ALL,
    ] {
        for e in group {
            let plain = if e.is_non_strict() {
                hostrt_core::kernel::KernelEntry::non_strict(e.name, e.func())
            } else {
                hostrt_core::kernel::KernelEntry::strict(e.name, e.func())
            };
            r.add_entries(&[plain]).unwrap();
        }
    }
    r
}

/// What a result is, for comparing two runs: its `i32`, or its error's code and message.
fn outcome(r: &hostrt_core::executor::Results, i: usize) -> Result<i32, (ErrorCode, String)> {
    r.get::<i32>(i).copied().map_err(|e| (e.code, e.message().to_string()))
}

#[test]
fn scalar_kernels_on_async_values_match_the_generic_path() {
    // `%g` and `%h` run scalar on the argument, an async value: a number, an error (which
    // becomes their result), a value of another type (an argument error), each also under
    // cancellation (an error operand wins over it, as on the generic path).
    // Also with the word before the argument, so that under cancellation the error operand
    // is the last one and wins.
    for text in [MIXED.to_string(), MIXED.replace("%arg, %one", "%one, %arg")] {
        compare_with_generic(&text);
    }
}

fn compare_with_generic(text: &str) {
    let bef = bef(text);
    let (scalar_reg, generic_reg) = (registry(), generic_registry());
    in_arena(|host, alloc| {
        let scalar = Program::load(bef.as_bytes(), &scalar_reg, alloc).unwrap();
        let generic = Program::load(bef.as_bytes(), &generic_reg, alloc).unwrap();
        assert!(modes(&scalar, "mixed")[9].0 && !modes(&generic, "mixed")[9].0);
        let args = || {
            let failed = hostrt_core::Diagnostic::new(ErrorCode::Internal, "upstream failed");
            [
                host.make_available(10i32).unwrap().into_rc(),
                RcAsyncValue::error(alloc, failed).unwrap(),
                host.make_available(2.5f32).unwrap().into_rc(),
            ]
        };
        for cancelled in [false, true] {
            for (i, (a, b)) in args().into_iter().zip(args()).enumerate() {
                let (ra, rb) = (RequestContext::new(), RequestContext::new());
                if cancelled {
                    ra.cancel(alloc).unwrap();
                    rb.cancel(alloc).unwrap();
                }
                let x = scalar.call_in(&ExecutionContext::new(host, &ra), "mixed", &[a]).unwrap();
                let y = generic.call_in(&ExecutionContext::new(host, &rb), "mixed", &[b]).unwrap();
                for j in 0..3 {
                    assert_eq!(
                        outcome(&x, j),
                        outcome(&y, j),
                        "argument {i}, cancelled {cancelled}, result {j}"
                    );
                }
                let want = match (i, cancelled) {
                    (0, false) => Ok(22),
                    (1, false) => Err(ErrorCode::Internal),
                    (2, false) => Err(ErrorCode::InvalidArgument),
                    // The error argument wins over the cancellation when it comes last.
                    (1, true) if text.contains("%one, %arg") => Err(ErrorCode::Internal),
                    _ => Err(ErrorCode::Cancelled),
                };
                assert_eq!(outcome(&x, 1).map_err(|e| e.0), want, "argument {i}, cancelled {cancelled}");
            }
        }
    });
}
