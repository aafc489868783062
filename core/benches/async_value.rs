//! AsyncValue and work queue micro-benchmarks, each with a std baseline in the same run.
//!
//! `cargo bench -p hostrt-core --bench async_value`
//!
//! hostrt values are measured on four allocators: the fixed arena (embedded default; on a
//! host its critical section is a process-wide mutex), the system heap as the baselines use it
//! (`MallocAllocator`), the system heap with a per-thread cache of small blocks
//! (`CachedMallocAllocator`), and that with TFRT's profile counters (`SystemAllocator`, what
//! `hostrt run` uses for its leak report: five atomic read-modify-writes per allocation and
//! free).

use std::collections::VecDeque;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::{Allocator, AsyncValueRef, ConcurrentWorkQueue, FixedArena, SingleThreadedWorkQueue, Task};
use hostrt_std::{CachedMallocAllocator, MallocAllocator, SystemAllocator};

static MALLOC: MallocAllocator = MallocAllocator;
static CACHED: CachedMallocAllocator = CachedMallocAllocator;
static SYSTEM: SystemAllocator = SystemAllocator::new();
static ARENA: FixedArena = FixedArena::empty();

fn allocators() -> [(&'static str, Allocator); 4] {
    static IDS: OnceLock<[(&'static str, Allocator); 4]> = OnceLock::new();
    *IDS.get_or_init(|| {
        ARENA.init(Box::leak(vec![0u8; 1 << 20].into_boxed_slice())).unwrap();
        [
            ("arena", Allocator::register(&ARENA).unwrap()),
            ("system", Allocator::register(&MALLOC).unwrap()),
            ("system, block cache", Allocator::register(&CACHED).unwrap()),
            ("system, block cache, profiled", Allocator::register(&SYSTEM).unwrap()),
        ]
    })
}

fn create_available_drop(c: &mut Criterion) {
    let mut g = c.benchmark_group("create_available_drop");
    g.bench_function("baseline Arc<OnceLock<i32>>", |b| {
        b.iter(|| {
            let v = Arc::new(OnceLock::new());
            let _ = v.set(black_box(42i32));
            black_box(v.get());
        })
    });
    for (name, alloc) in allocators() {
        g.bench_function(format!("hostrt AsyncValueRef<i32> ({name})"), |b| {
            b.iter(|| {
                let v = AsyncValueRef::available(alloc, black_box(42i32)).unwrap();
                black_box(v.get());
            })
        });
    }
    g.finish();
}

fn unavailable_and_then_emplace(c: &mut Criterion) {
    let mut g = c.benchmark_group("unavailable_and_then_emplace");
    g.bench_function("baseline futures::oneshot (poll, send, poll)", |b| {
        let waker = futures::task::noop_waker();
        b.iter(|| {
            let (tx, rx) = futures::channel::oneshot::channel::<i32>();
            let mut rx = pin!(rx);
            let mut cx = Context::from_waker(&waker);
            assert!(rx.as_mut().poll(&mut cx).is_pending());
            tx.send(black_box(7)).unwrap();
            match rx.as_mut().poll(&mut cx) {
                Poll::Ready(v) => black_box(v.unwrap()),
                Poll::Pending => unreachable!(),
            };
        })
    });
    for (name, alloc) in allocators() {
        g.bench_function(format!("hostrt and_then + emplace ({name})"), |b| {
            b.iter(|| {
                let v = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
                let w = v.clone();
                v.and_then(move || {
                    black_box(w.get());
                })
                .unwrap();
                v.emplace(black_box(7));
            })
        });
    }
    g.finish();
}

fn queue_round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("execute_and_await_round_trip");
    g.bench_function("baseline VecDeque<Box<dyn FnOnce>> + Arc<OnceLock>", |b| {
        let mut q: VecDeque<Box<dyn FnOnce() + Send>> = VecDeque::new();
        b.iter(|| {
            let v = Arc::new(OnceLock::new());
            let w = v.clone();
            q.push_back(Box::new(move || {
                let _ = w.set(black_box(5i32));
            }));
            while v.get().is_none() {
                (q.pop_front().unwrap())();
            }
            black_box(v.get());
        })
    });
    for (name, alloc) in allocators() {
        let queue = SingleThreadedWorkQueue::new();
        g.bench_function(format!("hostrt single-threaded queue ({name})"), |b| {
            b.iter(|| {
                let v = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
                let w = v.clone();
                queue.add_task(Task::new(alloc, move || w.emplace(black_box(5))).unwrap());
                queue.await_values(std::slice::from_ref(&*v)).unwrap();
                black_box(v.get());
            })
        });
    }
    g.finish();
}

criterion_group!(benches, create_available_drop, unavailable_and_then_emplace, queue_round_trip);
criterion_main!(benches);
