//! Stress: random dataflow programs with asynchronous kernels give the same results on the
//! multi-threaded queue as on the single-threaded one; cancelling while hundreds of tasks
//! are in flight neither hangs nor leaks. Every test runs under a deadline.

mod common;

use common::with_deadline;
use std::cell::Cell;

use hostrt_std::AlignedBytes;

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, raw};
use hostrt_core::kernel::{Argument, Output};
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
};
use hostrt_std::{MultiThreadedWorkQueue, SystemAllocator};

/// `test.async_add`: the wrapping sum, delivered later by a work-queue task.
fn async_add(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(r) = out.allocate() else { return };
    let v = a.wrapping_add(*b);
    if let Err(t) = ctx.host().enqueue_work(move || r.emplace(v)) {
        (t.into_inner())();
    }
}

fn registry() -> KernelRegistry<128> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    r.add_kernel("test.async_add", hostrt_core::kernel!(async_add)).unwrap();
    r
}

/// A random DAG of `n` nodes (constants, adds, async adds) returning its last 4 values.
fn random_program(seed: u64, n: usize) -> String {
    let mut s = seed | 1;
    let mut next = move |m: usize| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % m as u64) as usize
    };
    let mut text = String::from("func.func @main() -> (i32, i32, i32, i32) {\n");
    for i in 0..n {
        if i < 2 || next(5) == 0 {
            text += &format!("  %v{i} = tfrt.constant.i32 {}\n", next(1000));
        } else {
            let (a, b) = (next(i), next(i));
            let op = if next(2) == 0 { "tfrt.add.i32" } else { "test.async_add" };
            text += &format!("  %v{i} = \"{op}\"(%v{a}, %v{b}) : (i32, i32) -> i32\n");
        }
    }
    text += &format!(
        "  tfrt.return %v{}, %v{}, %v{}, %v{} : i32, i32, i32, i32\n}}\n",
        n - 1,
        n - 2,
        n - 3,
        n - 4
    );
    text
}

/// Run `main` of `text` on `queue`, cancelling the request right after kick-off if asked.
fn run(
    text: &str,
    queue: &dyn ConcurrentWorkQueue,
    alloc: Allocator,
    cancel: bool,
) -> Vec<Result<i32, String>> {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("r.mlir", text, Default::default()).unwrap());
    let reg = registry();
    let host = HostContext::new(alloc, queue);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap();
    let slots: Vec<Cell<Option<RcAsyncValue>>> = (0..4).map(|_| Cell::new(None)).collect();
    // The raw seam, to cancel between the kick-off and the first queued task.
    // SAFETY: everything outlives the await and quiesce below.
    unsafe { raw::execute(&program, &exec, program.function_index("main").unwrap(), &[], &slots) };
    if cancel {
        request.cancel(alloc).unwrap();
    }
    let results: Vec<RcAsyncValue> = slots.iter().map(|s| s.take().unwrap()).collect();
    queue.await_values(&results).unwrap();
    queue.quiesce();
    results
        .iter()
        .map(|v| {
            v.get::<i32>()
                .copied()
                .ok_or_else(|| v.get_error().map(|e| e.message().to_string()).unwrap_or_default())
        })
        .collect()
}

#[test]
fn random_programs_match_the_single_threaded_results() {
    with_deadline(120, || {
        let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
        let alloc = Allocator::register(system).unwrap();
        let mstd = MultiThreadedWorkQueue::new(4, 1);
        let single = SingleThreadedWorkQueue::new();
        for seed in 1..=40u64 {
            let text = random_program(seed, 300);
            let want = run(&text, &single, alloc, false);
            assert!(want.iter().all(Result::is_ok), "seed {seed}: {want:?}");
            assert_eq!(run(&text, &mstd, alloc, false), want, "seed {seed}");
        }
        drop(mstd);
        assert_eq!(system.profile().current, 0, "leaked runtime objects");
    });
}

#[test]
fn cancelling_with_hundreds_of_tasks_in_flight_neither_hangs_nor_leaks() {
    with_deadline(120, || {
        let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
        let alloc = Allocator::register(system).unwrap();
        let mstd = MultiThreadedWorkQueue::new(4, 1);
        for seed in 1..=20u64 {
            // Mostly async adds: hundreds of tasks are queued when the request is cancelled.
            let text = random_program(seed * 7919, 600);
            let results = run(&text, &mstd, alloc, true);
            for r in &results {
                if let Err(e) = r {
                    assert_eq!(e, "Cancelled", "seed {seed}");
                }
            }
        }
        drop(mstd);
        assert_eq!(system.profile().current, 0, "leaked runtime objects after cancellations");
    });
}
