//! The execute-and-await round trip of `benches/async_value.rs` (an unavailable value, a
//! task that fills it, an await on the single-threaded queue) in a loop over the plain
//! system heap, for counting its instructions with callgrind:
//! `valgrind --tool=callgrind target/release/examples/round_trip_profile [runs]`.
//! Natively it also prints the time per round trip of its fastest twentieth of the runs.

use std::hint::black_box;

use hostrt_core::{Allocator, AsyncValueRef, ConcurrentWorkQueue, SingleThreadedWorkQueue, Task};
use hostrt_std::MallocAllocator;

static MALLOC: MallocAllocator = MallocAllocator;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let alloc = Allocator::register(&MALLOC).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let batch = (n / 20).max(1);
    let mut best = f64::INFINITY;
    let mut start = std::time::Instant::now();
    for i in 0..n {
        if (i + 1) % batch == 0 {
            best = best.min(start.elapsed().as_secs_f64() * 1e9 / batch as f64);
            start = std::time::Instant::now();
        }
        let v = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
        let w = v.clone();
        queue.add_task(Task::new(alloc, move || w.emplace(black_box(5))).unwrap());
        queue.await_values(std::slice::from_ref(&*v)).unwrap();
        black_box(v.get());
    }
    println!("{n} round trips, fastest batch {best:.1} ns each");
}
