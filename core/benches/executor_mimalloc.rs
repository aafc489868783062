//! The executor benchmark (`benches/executor.rs`) with mimalloc as the process's global
//! allocator: the baselines' boxes and values and the executor's frames, values and tasks
//! (through `MallocAllocator` and `SystemAllocator`, which forward to the global
//! allocator) all come from it.
//! glibc's malloc consolidates its free lists whenever a block of 1 KiB or more is asked
//! for, which every 100-kernel frame is; a heap without that cost shows what is the
//! executor's own.
//!
//! `cargo bench -p hostrt-core --bench executor_mimalloc`

use criterion::{Criterion, criterion_group, criterion_main};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;
#[path = "common/executor.rs"]
mod executor;

fn bench(c: &mut Criterion) {
    executor::bench(c, " (mimalloc)");
}

criterion_group!(benches, bench);
criterion_main!(benches);
