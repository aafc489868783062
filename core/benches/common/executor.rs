//! The executor benchmark's body, shared by `benches/executor.rs` (the system heap) and
//! `benches/executor_mimalloc.rs` (mimalloc as the global allocator, so the baselines'
//! allocations and the executor's go through the same heap). See `benches/executor.rs`.

use std::cell::Cell;
use std::hint::black_box;

use criterion::Criterion;
use hostrt_compiler::bef::WriteOptions;
use hostrt_compiler::compile;
use hostrt_core::executor::{Program, raw};
use hostrt_core::kernel::{KernelFn, KernelFrame, KernelLookup};
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ExecutionContext, HostContext, RcAsyncValue, RequestContext,
    SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, CachedMallocAllocator, MallocAllocator, SystemAllocator};

use super::common;

/// The heap every row but one allocates from: the plain system heap, as TFRT's bef_perf
/// runs (`--host_allocator_type malloc`).
static MALLOC: MallocAllocator = MallocAllocator;
/// The same heap with a per-thread cache of small blocks, for one row.
static CACHED: CachedMallocAllocator = CachedMallocAllocator;
/// That with TFRT's profile counters on it (what `hostrt run` uses), for one row.
static SYSTEM: SystemAllocator = SystemAllocator::new();

/// One kernel of the floor baseline: a closure over the register file.
type FloorOp = Box<dyn Fn(&mut [i32])>;

/// Every group, named `{graph}_100{suffix}`.
pub fn bench(c: &mut Criterion, suffix: &str) {
    let alloc = Allocator::register(&MALLOC).unwrap();
    let cached = Allocator::register(&CACHED).unwrap();
    let profiled = Allocator::register(&SYSTEM).unwrap();
    let reg = common::registry();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    // The same queue with other streams' kernels as tasks, TFRT's scheduling (the
    // single-threaded default runs them inline: docs/execution.md, "Streams on one thread").
    let tasks_host = HostContext::new(alloc, &queue).with_stream_tasks(true);
    let tasks_exec = ExecutionContext::new(&tasks_host, &request);
    let cached_host = HostContext::new(cached, &queue);
    let cached_exec = ExecutionContext::new(&cached_host, &request);
    let profiled_host = HostContext::new(profiled, &queue);
    let profiled_exec = ExecutionContext::new(&profiled_host, &request);
    let add: KernelFn = reg.lookup("tfrt.add.i32").unwrap().func();
    let async_add_fn: KernelFn = reg.lookup("test.async_add.i32").unwrap().func();
    let sum_fn: KernelFn = reg.lookup("test.sum").unwrap().func();
    let one = host.make_available(1i32).unwrap().into_rc();
    let zero = host.make_available(0i32).unwrap().into_rc();

    for kind in ["serial", "parallel", "star"] {
        let text = common::program(kind);
        let bef = AlignedBytes::new(&compile("bench.mlir", &text, WriteOptions::default()).unwrap());
        let prog = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
        let main = prog.function_index("main").unwrap();
        // The graph must compute the right value, or the timings below measure an error path.
        let check = [Cell::new(None::<RcAsyncValue>)];
        // SAFETY: program and contexts outlive the await below.
        unsafe { raw::execute(&prog, &exec, main, &[], &check) };
        let r = check[0].take().unwrap();
        queue.await_values(std::slice::from_ref(&r)).unwrap();
        let want = if kind == "parallel" { 1 } else { 100 };
        assert_eq!(r.get::<i32>(), Some(&want), "{kind}: {r:?}");
        let mut g = c.benchmark_group(format!("{kind}_100{suffix}"));
        // The practical floor: the same graph as an array of closures over an `i32` register
        // file (no values, no allocation, no scheduling).
        let ops: Vec<FloorOp> = (0..100)
            .map(|i| -> FloorOp {
                if kind == "serial" {
                    Box::new(move |r: &mut [i32]| r[i + 1] = r[i].wrapping_add(r[101]))
                } else {
                    Box::new(move |r: &mut [i32]| r[i + 1] = r[101].wrapping_add(r[0]))
                }
            })
            .collect();
        let mut regs = vec![0i32; 103];
        g.bench_function("floor: closures over an i32 register file", |b| {
            b.iter(|| {
                regs[0] = 0;
                regs[101] = black_box(1);
                for op in &ops {
                    op(&mut regs);
                }
                if kind == "star" {
                    regs[102] = regs[1..=100].iter().fold(0i32, |s, v| s.wrapping_add(*v));
                    return black_box(regs[102]);
                }
                black_box(regs[100])
            })
        });
        g.bench_function("baseline: direct loop over the kernel fn pointers", |b| {
            b.iter(|| {
                let mut last = zero.clone();
                let mut outs = Vec::with_capacity(if kind == "serial" { 0 } else { 100 });
                for _ in 0..100 {
                    let slot = [Cell::new(None::<RcAsyncValue>)];
                    if kind == "serial" {
                        add(&KernelFrame::new(&exec, &[last, one.clone()], &[], &slot));
                        last = slot[0].take().unwrap();
                    } else {
                        async_add_fn(&KernelFrame::new(&exec, &[one.clone(), zero.clone()], &[], &slot));
                        outs.push(slot[0].take().unwrap());
                    }
                }
                if kind != "serial" {
                    queue.await_values(&outs).unwrap();
                    if kind == "star" {
                        let slot = [Cell::new(None::<RcAsyncValue>)];
                        sum_fn(&KernelFrame::new(&exec, &outs, &[], &slot));
                        last = slot[0].take().unwrap();
                    } else {
                        last = outs.pop().unwrap();
                    }
                }
                black_box(last.get::<i32>().copied())
            })
        });
        // TFRT's stream assignment (the default) and one stream per call (`--single-stream`);
        // and the default program on a host that makes other streams' kernels work-queue
        // tasks, as TFRT does on every queue.
        let one = AlignedBytes::new(
            &compile(
                "bench.mlir",
                &text,
                WriteOptions { streams: false, locations: true, ..Default::default() },
            )
            .unwrap(),
        );
        let one_stream = Program::load(one.as_bytes(), &reg, alloc).unwrap();
        let on_cached = Program::load(bef.as_bytes(), &reg, cached).unwrap();
        let on_profiled = Program::load(bef.as_bytes(), &reg, profiled).unwrap();
        for (name, prog, exec) in [
            ("hostrt executor (execute + await)", &prog, &exec),
            ("hostrt executor, one stream", &one_stream, &exec),
            ("hostrt executor, stream tasks (TFRT's order)", &prog, &tasks_exec),
            ("hostrt executor, block cache (CachedMallocAllocator)", &on_cached, &cached_exec),
            ("hostrt executor, block cache + profile (SystemAllocator)", &on_profiled, &profiled_exec),
        ] {
            g.bench_function(name, |b| {
                b.iter(|| {
                    let slot = [Cell::new(None::<RcAsyncValue>)];
                    // SAFETY: program and contexts outlive the await; the queue is drained.
                    unsafe { raw::execute(prog, exec, main, &[], &slot) };
                    let r = slot[0].take().unwrap();
                    queue.await_values(std::slice::from_ref(&r)).unwrap();
                    queue.quiesce();
                    black_box(r.get::<i32>().copied())
                })
            });
        }
        if kind != "serial" {
            // The same graph on the multi-threaded queue (one worker per core).
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            let mstd = hostrt_std::MultiThreadedWorkQueue::new(threads, 1);
            let mhost = HostContext::new(alloc, &mstd);
            let mrequest = RequestContext::new();
            let mexec = ExecutionContext::new(&mhost, &mrequest);
            g.bench_function(format!("hostrt executor on mstd ({threads} workers)"), |b| {
                b.iter(|| {
                    let slot = [Cell::new(None::<RcAsyncValue>)];
                    // SAFETY: program and contexts outlive the await and quiesce below.
                    unsafe { raw::execute(&prog, &mexec, main, &[], &slot) };
                    let r = slot[0].take().unwrap();
                    mstd.await_values(std::slice::from_ref(&r)).unwrap();
                    mstd.quiesce();
                    black_box(r.get::<i32>().copied())
                })
            });
        }
        g.finish();
    }
}
