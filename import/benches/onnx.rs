//! ONNX models on hostrt, one thread and two: one inference of each model that
//! `scripts/make_onnx_models.py` makes for benchmarks (a MobileNetV2-shaped CNN at 96x96 and
//! a 4-layer transformer encoder, in `target/bench-models`), and of the committed test CNN,
//! on the single-threaded work queue and on two threads: the calling thread, which runs the
//! kernels, and one worker that shares each kernel's rows with it (`parallel_for`), as
//! onnxruntime's two intra-op threads are the caller and one pool thread.
//! The baseline, onnxruntime on the same models and inputs (one and two threads), is timed
//! by `ort_times.py` in the same run of `scripts/bench_onnx.sh`, which prints the ratios.

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::{Allocator, ConcurrentWorkQueue, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy;

/// The models timed, as in `ort_times.py`: `(name, directory)`.
const MODELS: &[(&str, &str)] = &[
    ("cnn_small", "import/tests/models/onnx"),
    ("cnn_small_qdq_s8", "import/tests/models/onnx"),
    ("mobilenet_v2_96", "target/bench-models"),
    ("transformer_4x128", "target/bench-models"),
];

fn read(dir: &str, file: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("{}/../{dir}/{file}", env!("CARGO_MANIFEST_DIR"))).ok()
}

fn bench(c: &mut Criterion) {
    let single = SingleThreadedWorkQueue::new();
    let two = hostrt_std::MultiThreadedWorkQueue::new(1, 0);
    let queues: [(&str, &dyn ConcurrentWorkQueue); 2] = [("", &single), ("_2t", &two)];
    for (suffix, queue) in queues {
        bench_on(c, queue, suffix);
    }
}

fn bench_on(c: &mut Criterion, queue: &dyn ConcurrentWorkQueue, suffix: &str) {
    let alloc = Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).unwrap();
    let host = HostContext::new(alloc, queue);
    for (name, dir) in MODELS {
        let (Some(model), Some(input)) =
            (read(dir, &format!("{name}.onnx")), read(dir, &format!("{name}.input.npy")))
        else {
            eprintln!("skipped {name}: not made (scripts/bench_onnx.sh makes it)");
            continue;
        };
        let model = hostrt_import::Program::from_onnx(&model, &host).unwrap();
        let x = npy::to_tensor(alloc, &npy::read(&input).unwrap()).unwrap();
        let id = format!("onnx/{name}{suffix}");
        c.bench_function(&id, |b| b.iter(|| model.call(&host, vec![x.clone()]).unwrap()));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
