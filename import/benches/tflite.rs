//! TensorFlow Lite models on hostrt, one thread: the import itself (`import/`, a 300 KB
//! MobileNetV1) and one inference of each whole test model (`infer/`). The baseline, LiteRT
//! on the same models and inputs (XNNPACK on and off), is timed by `litert.py` in the same
//! run of `scripts/bench_tflite.sh`, which prints the ratios.

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy;

/// The models timed, as in `litert.py`.
const MODELS: &[&str] = &[
    "ds_cnn_i8",
    "ds_cnn_f32",
    "resnet8_i8",
    "mobilenet_v1_vww_i8",
    "mobilenet_v1_person_i8",
    "autoencoder_i8",
];

fn read(file: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/models/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn bench(c: &mut Criterion) {
    let vww = read("mobilenet_v1_vww_i8.tflite");
    c.bench_function("import/mobilenet_v1_vww_i8", |b| {
        b.iter(|| hostrt_import::tflite(&vww).unwrap().to_bef().unwrap())
    });

    let alloc = Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    for name in MODELS {
        let model = hostrt_import::Program::from_tflite(&read(&format!("{name}.tflite")), &host).unwrap();
        let x = npy::to_tensor(alloc, &npy::read(&read(&format!("{name}.input.npy"))).unwrap()).unwrap();
        c.bench_function(&format!("infer/{name}"), |b| {
            b.iter(|| model.call(&host, vec![x.clone()]).unwrap())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
