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

/// Float32 whole models too large to commit, timed when `scripts/bench_tflite.sh` has made
/// them (in `target/bench-models`, by `make_models.py`).
const EXTRA: &[&str] = &["resnet8_f32", "mobilenet_v1_vww_f32", "autoencoder_f32"];

fn read(file: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/models/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `file` of the extra models, if made.
fn read_extra(file: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("{}/../target/bench-models/{file}", env!("CARGO_MANIFEST_DIR"))).ok()
}

fn bench(c: &mut Criterion) {
    let vww = read("mobilenet_v1_vww_i8.tflite");
    c.bench_function("import/mobilenet_v1_vww_i8", |b| {
        b.iter(|| hostrt_import::tflite(&vww).unwrap().to_bef().unwrap())
    });

    let alloc = Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let committed = MODELS
        .iter()
        .map(|name| Some((name, read(&format!("{name}.tflite")), read(&format!("{name}.input.npy")))));
    let extra = EXTRA.iter().map(|name| {
        Some((name, read_extra(&format!("{name}.tflite"))?, read_extra(&format!("{name}.input.npy"))?))
    });
    for (name, model, input) in committed.chain(extra).flatten() {
        let model = hostrt_import::Program::from_tflite(&model, &host).unwrap();
        let x = npy::to_tensor(alloc, &npy::read(&input).unwrap()).unwrap();
        c.bench_function(&format!("infer/{name}"), |b| {
            b.iter(|| model.call(&host, vec![x.clone()]).unwrap())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
