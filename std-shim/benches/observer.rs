//! What observing a run costs (docs/profiling.md): a serial graph of 100 kernels run with no
//! observer installed (the baseline), with a [`Recorder`] profiling, and with one tracing
//! too. The difference over 100 is the cost per kernel. The cost of the hook compiled in
//! but unused is measured by scripts/bench_observer.sh, which runs hostrt-core's executor
//! benchmark with the hook and without it.
//!
//! `cargo bench -p hostrt-std --bench observer`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::Program;
use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, Recorder, SystemAllocator};

static SYSTEM: SystemAllocator = SystemAllocator::new();

/// `@main`: 100 additions, each using the one before (TFRT's bef_perf serial graph).
fn serial_100() -> String {
    let mut text = String::from(
        "func.func @main() -> i32 {\n  %v0 = tfrt.constant.i32 0\n  %one = tfrt.constant.i32 1\n",
    );
    for i in 1..=98 {
        text += &format!("  %v{i} = \"tfrt.add.i32\"(%v{}, %one) : (i32, i32) -> i32\n", i - 1);
    }
    text + "  tfrt.return %v98 : i32\n}\n"
}

fn bench(c: &mut Criterion) {
    let alloc = Allocator::register(&SYSTEM).unwrap();
    let mut registry: Box<KernelRegistry<256>> = Box::default();
    register_basic_kernels(&mut registry).unwrap();
    let bef = hostrt_compiler::compile("serial.mlir", &serial_100(), Default::default()).unwrap();
    let bef = AlignedBytes::new(&bef);
    let queue = SingleThreadedWorkQueue::new();
    let (profile, trace) = (Recorder::new(false), Recorder::new(true));
    let hosts = [
        ("no_observer", HostContext::new(alloc, &queue)),
        ("profile", HostContext::new(alloc, &queue).with_observer(&profile)),
        ("trace", HostContext::new(alloc, &queue).with_observer(&trace)),
    ];
    let mut g = c.benchmark_group("observer_serial_100");
    for (name, host) in &hosts {
        let program = Program::load(bef.as_bytes(), &*registry, host).unwrap();
        let results = program.call(host, "main", &[]).unwrap();
        assert_eq!(results.get::<i32>(0), Ok(&98), "{name}");
        drop(results);
        // A trace grows by its events: cleared every 1,000 calls, outside the timing.
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for chunk in (0..iters).collect::<Vec<_>>().chunks(1000) {
                    let start = Instant::now();
                    for _ in chunk {
                        black_box(program.call(host, "main", &[]).unwrap());
                    }
                    spent += start.elapsed();
                    trace.clear();
                    profile.clear();
                }
                spent
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
