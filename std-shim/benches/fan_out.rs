//! Fan-out/fan-in of 10,000 tiny tasks: hostrt's `mstd` queue against `rayon::scope` and
//! tokio's multi-threaded runtime, each with one worker per core, in the same run.
//!
//! `cargo bench -p hostrt-std --bench fan_out`

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::{Allocator, ConcurrentWorkQueue, Task};
use hostrt_std::{MallocAllocator, MultiThreadedWorkQueue};

const TASKS: usize = 10_000;
static MALLOC: MallocAllocator = MallocAllocator;

fn bench(c: &mut Criterion) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let alloc = Allocator::register(&MALLOC).unwrap();
    let mstd = MultiThreadedWorkQueue::new(threads, 1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).build().unwrap();
    let mut g = c.benchmark_group(format!("fan_out_fan_in_{TASKS}_tasks_{threads}_threads"));
    g.bench_function("baseline rayon::scope", |b| {
        b.iter(|| {
            let n = AtomicUsize::new(0);
            pool.scope(|s| {
                for _ in 0..TASKS {
                    s.spawn(|_| {
                        n.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
            black_box(n.load(Ordering::Relaxed))
        })
    });
    g.bench_function("baseline tokio multi-thread (spawn + join all)", |b| {
        b.iter(|| {
            let n = Arc::new(AtomicUsize::new(0));
            tokio.block_on(async {
                let handles: Vec<_> = (0..TASKS)
                    .map(|_| {
                        let n = n.clone();
                        tokio::spawn(async move {
                            n.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                    .collect();
                for h in handles {
                    let _ = h.await;
                }
            });
            black_box(n.load(Ordering::Relaxed))
        })
    });
    // Each task does what rayon's does, one increment of a shared counter: a task of the
    // queue must be `'static`, so the counter is a static rather than an `Arc` (whose clone
    // and drop would add two contended read-modify-writes per task that rayon's borrowed
    // counter does not pay).
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    g.bench_function("hostrt mstd (add_task + quiesce)", |b| {
        b.iter(|| {
            COUNT.store(0, Ordering::Relaxed);
            for _ in 0..TASKS {
                mstd.add_task(
                    Task::new(alloc, || {
                        COUNT.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap(),
                );
            }
            mstd.quiesce();
            assert_eq!(COUNT.load(Ordering::Relaxed), TASKS);
            black_box(COUNT.load(Ordering::Relaxed))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
