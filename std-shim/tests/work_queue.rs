//! The multi-threaded work queue under load. Every test runs under a deadline: a bug must
//! fail the test, never hang it.

mod common;

use common::with_deadline;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, OnceLock};

use hostrt_core::{Allocator, AsyncValueRef, ConcurrentWorkQueue, RcAsyncValue, Task};
use hostrt_std::AlignedBytes;
use hostrt_std::{MultiThreadedWorkQueue, SystemAllocator};

fn alloc() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    static SYSTEM: SystemAllocator = SystemAllocator::new();
    *A.get_or_init(|| Allocator::register(&SYSTEM).unwrap())
}

fn task(f: impl FnOnce() + Send + 'static) -> Task {
    Task::new(alloc(), f).unwrap()
}

#[test]
fn a_million_tiny_tasks() {
    with_deadline(60, || {
        let q = MultiThreadedWorkQueue::new(4, 2);
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..1_000_000 {
            let n = n.clone();
            q.add_task(task(move || {
                n.fetch_add(1, SeqCst);
            }));
        }
        q.quiesce();
        assert_eq!(n.load(SeqCst), 1_000_000);
    });
}

#[test]
fn tasks_spawned_by_workers_go_to_their_own_deques_and_finish() {
    with_deadline(30, || {
        let q: &'static MultiThreadedWorkQueue = Box::leak(Box::new(MultiThreadedWorkQueue::new(3, 1)));
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let n = n.clone();
            q.add_task(task(move || {
                assert!(q.is_in_worker_thread());
                for _ in 0..100 {
                    let n = n.clone();
                    q.add_task(task(move || {
                        n.fetch_add(1, SeqCst);
                    }));
                }
            }));
        }
        q.quiesce();
        assert_eq!(n.load(SeqCst), 10_000);
        assert!(!q.is_in_worker_thread());
        assert_eq!(q.parallelism_level(), 3);
    });
}

#[test]
fn await_blocks_until_workers_complete_values() {
    with_deadline(30, || {
        let q = MultiThreadedWorkQueue::new(2, 1);
        for _ in 0..200 {
            let values: Vec<AsyncValueRef<u32>> =
                (0..16).map(|_| AsyncValueRef::unconstructed(alloc()).unwrap()).collect();
            for (i, v) in values.iter().enumerate() {
                let v = v.clone();
                q.add_task(task(move || v.emplace(i as u32)));
            }
            let erased: Vec<RcAsyncValue> = values.iter().map(|v| (**v).clone()).collect();
            q.await_values(&erased).unwrap();
            assert!(values.iter().enumerate().all(|(i, v)| v.get() == Some(&(i as u32))));
        }
        q.quiesce();
    });
}

#[test]
fn blocking_tasks_do_not_stop_non_blocking_work_and_unqueued_ones_start() {
    with_deadline(30, || {
        let q = MultiThreadedWorkQueue::new(2, 2);
        // Occupy both blocking threads until the gate opens.
        let gate = Arc::new(Barrier::new(4));
        for _ in 0..2 {
            let g = gate.clone();
            assert!(
                q.add_blocking_task(
                    task(move || {
                        g.wait();
                    }),
                    true
                )
                .is_none()
            );
        }
        // Non-blocking work still runs meanwhile.
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..1000 {
            let n = n.clone();
            q.add_task(task(move || {
                n.fetch_add(1, SeqCst);
            }));
        }
        while n.load(SeqCst) < 1000 {
            std::thread::yield_now();
        }
        // A blocking task that may not queue starts although every blocking thread is busy;
        // it is the third party the gate is waiting for.
        let g = gate.clone();
        assert!(
            q.add_blocking_task(
                task(move || {
                    g.wait();
                }),
                false
            )
            .is_none()
        );
        gate.wait();
        q.quiesce();
    });
}

#[test]
fn configuration_strings() {
    let q = MultiThreadedWorkQueue::from_config("mstd:3,5").unwrap();
    assert_eq!(q.description(), "Multi-threaded C++ work queue (3 threads, 5 blocking threads)");
    assert_eq!(MultiThreadedWorkQueue::from_config("mstd:2").unwrap().parallelism_level(), 2);
    assert!(MultiThreadedWorkQueue::from_config("mstd").is_some());
    for bad in ["mstd:x", "mstd:0", "mstd:1,2,3", "s", "mstdx"] {
        assert!(MultiThreadedWorkQueue::from_config(bad).is_none(), "{bad}");
    }
}

/// `@fib` from the firmware example, driven by this test's own `@main`.
const PROGRAM: &str = concat!(
    include_str!("../../examples/firmware/programs/fib.mlir"),
    r#"func.func @main(%n: i32) -> (i32, i32) {
  %f = tfrt.call @fib(%n) : (i32) -> i32
  %two = tfrt.constant.i32 2
  %g = tfrt.add.i32 %f, %two
  tfrt.return %f, %g : i32, i32
}
"#
);

/// Run `@main(n)` with `n` arriving late (completed from a task), on `queue`.
fn run_program(queue: &dyn ConcurrentWorkQueue, n: i32) -> (i32, i32) {
    use hostrt_core::basic_kernels::register_basic_kernels;
    use hostrt_core::executor::Program;
    use hostrt_core::{HostContext, KernelRegistry};
    let bef = hostrt_compiler::compile("p.mlir", PROGRAM, Default::default()).unwrap();
    let bef = AlignedBytes::new(&bef);
    let mut reg: KernelRegistry<128> = KernelRegistry::new();
    register_basic_kernels(&mut reg).unwrap();
    let host = HostContext::new(alloc(), queue);
    let program = Program::load(bef.as_bytes(), &reg, alloc()).unwrap();
    let arg = AsyncValueRef::<i32>::unconstructed(alloc()).unwrap();
    let a = arg.clone();
    queue.add_task(Task::new(alloc(), move || a.emplace(n)).unwrap());
    let results = program.call(&host, "main", &[(*arg).clone()]).unwrap();
    (*results.get::<i32>(0).unwrap(), *results.get::<i32>(1).unwrap())
}

#[test]
fn programs_give_the_same_results_as_on_the_single_threaded_queue() {
    with_deadline(60, || {
        let single = hostrt_core::SingleThreadedWorkQueue::new();
        let want = run_program(&single, 17);
        assert_eq!(want, (1597, 1599));
        let q = MultiThreadedWorkQueue::new(4, 1);
        for _ in 0..20 {
            assert_eq!(run_program(&q, 17), want);
        }
    });
}

/// `parallel_for` runs every index exactly once, from the host thread and from inside a
/// task (the caller being a worker), with helpers on the other workers; its writes to the
/// caller's stack are all visible when it returns.
#[test]
fn parallel_for_runs_each_index_once() {
    with_deadline(60, || {
        let q = Arc::new(MultiThreadedWorkQueue::new(4, 0));
        for round in 0..200 {
            let n = 1 + round % 37;
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            q.parallel_for(alloc(), n, &|i| {
                hits[i].fetch_add(1, SeqCst);
            });
            assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "round {round}");
        }
        // From a worker: the helpers run on the other three.
        let done = Arc::new(AtomicUsize::new(0));
        let (q2, d) = (q.clone(), done.clone());
        q.add_task(task(move || {
            let mut out = [0usize; 64];
            hostrt_core::work_queue::for_row_runs(
                &*q2,
                alloc(),
                &mut out,
                hostrt_core::work_queue::RowSplit::new(4, 1),
                &|first, rows: &mut [usize]| {
                    for (k, v) in rows.iter_mut().enumerate() {
                        *v = first * 4 + k;
                    }
                },
            );
            assert!(out.iter().enumerate().all(|(i, &v)| v == i));
            d.fetch_add(1, SeqCst);
        }));
        q.quiesce();
        assert_eq!(done.load(SeqCst), 1);
    });
}

/// A `parallel_for` whose helper tasks cannot all be allocated runs the rest on the caller.
#[test]
fn parallel_for_without_memory_runs_on_the_caller() {
    // One helper task is granted, then memory runs out.
    let failing: &'static hostrt_core::allocator::FailAfter<SystemAllocator> =
        Box::leak(Box::new(hostrt_core::allocator::FailAfter::new(SystemAllocator::new(), 1)));
    let tiny = Allocator::register(failing).unwrap();
    let q = MultiThreadedWorkQueue::new(4, 0);
    let ran = AtomicUsize::new(0);
    q.parallel_for(tiny, 10, &|_| {
        ran.fetch_add(1, SeqCst);
    });
    assert_eq!(ran.load(SeqCst), 10);
    assert_eq!(failing.refused(), 1, "the second helper was refused");
}
