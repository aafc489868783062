//! Executor overhead on TFRT's bef_perf graphs (100 kernels each), against two baselines: a
//! direct loop that calls the same kernel function pointers with the same frames and async
//! values but no executor (no registers, ready counts or users lists), and the practical
//! floor, closures over an `i32` register file (no values, no allocation). Each graph runs compiled with
//! TFRT's streams (the default) and with one stream per call (`--single-stream`).
//!
//! `cargo bench -p hostrt-core --bench executor`; `--bench executor_mimalloc` runs the
//! same with mimalloc as the global allocator (`benches/executor_mimalloc.rs`).

use criterion::{Criterion, criterion_group, criterion_main};

mod common;
#[path = "common/executor.rs"]
mod executor;

fn bench(c: &mut Criterion) {
    executor::bench(c, "");
}

criterion_group!(benches, bench);
criterion_main!(benches);
