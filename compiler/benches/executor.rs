//! Executor overhead on TFRT's bef_perf graphs (100 kernels each), against a direct loop
//! that calls the same kernel function pointers with the same frames and async values but
//! no executor (no registers, ready counts or users lists). Each graph runs compiled with
//! TFRT's streams (the default) and with one stream per call (`--single-stream`).
//!
//! `cargo bench -p hostrt-compiler --bench executor`

use std::cell::Cell;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_compiler::bef::WriteOptions;
use hostrt_compiler::compile;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, raw};
use hostrt_core::kernel::{Argument, KernelFn, KernelFrame, KernelLookup, Output, RemainingArguments};
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
};
use hostrt_std::AlignedBytes;
use hostrt_std::SystemAllocator;

static SYSTEM: SystemAllocator = SystemAllocator::new();

/// `tfrt_test.async_add.i32`: the sum, delivered by a work-queue task.
fn async_add(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(r) = out.allocate() else { return };
    let v = a.wrapping_add(*b);
    let _ = ctx.host().enqueue_work(move || r.emplace(v));
}

/// `tfrt_test.sum`: adds every argument.
fn sum(args: RemainingArguments) -> i32 {
    args.values().iter().map(|v| *v.get::<i32>().unwrap_or(&0)).sum()
}

fn program(kind: &str) -> String {
    let mut s =
        String::from("func.func @main() -> i32 {\n  %a = tfrt.constant.i32 1\n  %c0 = tfrt.constant.i32 0\n");
    match kind {
        "serial" => {
            for i in 0..100 {
                s += &format!("  %c{} = tfrt.add.i32 %c{i}, %a\n", i + 1);
            }
            s += "  tfrt.return %c100 : i32\n}\n";
        }
        "parallel" => {
            for i in 1..=100 {
                s += &format!("  %c{i} = \"test.async_add.i32\"(%a, %c0) : (i32, i32) -> i32\n");
            }
            s += "  tfrt.return %c100 : i32\n}\n";
        }
        _ => {
            let mut args = Vec::new();
            for i in 1..=100 {
                s += &format!("  %c{i} = \"test.async_add.i32\"(%a, %c0) : (i32, i32) -> i32\n");
                args.push(format!("%c{i}"));
            }
            let types = vec!["i32"; 100].join(", ");
            s += &format!(
                "  %s = \"test.sum\"({}) : ({types}) -> i32\n  tfrt.return %s : i32\n}}\n",
                args.join(", ")
            );
        }
    }
    s
}

fn bench(c: &mut Criterion) {
    let alloc = Allocator::register(&SYSTEM).unwrap();
    let mut reg: KernelRegistry<64> = KernelRegistry::new();
    register_basic_kernels(&mut reg).unwrap();
    reg.add_kernel("test.async_add.i32", hostrt_core::kernel!(async_add)).unwrap();
    reg.add_kernel("test.sum", hostrt_core::kernel!(sum)).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let add: KernelFn = reg.lookup("tfrt.add.i32").unwrap().func;
    let async_add_fn: KernelFn = reg.lookup("test.async_add.i32").unwrap().func;
    let sum_fn: KernelFn = reg.lookup("test.sum").unwrap().func;
    let one = host.make_available(1i32).unwrap().into_rc();
    let zero = host.make_available(0i32).unwrap().into_rc();

    for kind in ["serial", "parallel", "star"] {
        let text = program(kind);
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
        let mut g = c.benchmark_group(format!("{kind}_100"));
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
        // TFRT's stream assignment (the default) and one stream per call (`--single-stream`):
        // with streams, independent kernels of other streams become work-queue tasks.
        let one = AlignedBytes::new(&compile("bench.mlir", &text, WriteOptions { streams: false }).unwrap());
        let one_stream = Program::load(one.as_bytes(), &reg, alloc).unwrap();
        for (name, prog) in
            [("hostrt executor (execute + await)", &prog), ("hostrt executor, one stream", &one_stream)]
        {
            g.bench_function(name, |b| {
                b.iter(|| {
                    let slot = [Cell::new(None::<RcAsyncValue>)];
                    // SAFETY: program and contexts outlive the await; the queue is drained.
                    unsafe { raw::execute(prog, &exec, main, &[], &slot) };
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

criterion_group!(benches, bench);
criterion_main!(benches);
