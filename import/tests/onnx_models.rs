//! Whole ONNX models (scripts/make_onnx_models.py: a MobileNet-shaped CNN with the
//! flatten chain exporters emit, a transformer attention block, and a 2-layer transformer
//! encoder with LayerNormalization and an Erf GELU) imported, run, and compared with
//! onnxruntime's outputs.

use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy;

fn check(name: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/onnx/");
    let read = |suffix: &str| std::fs::read(format!("{dir}{name}{suffix}")).expect(suffix);
    let alloc =
        Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("allocator");
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let model = hostrt_import::Program::from_onnx(&read(".onnx"), &host).expect("import");
    let x = npy::read(&read(".input.npy")).expect("input");
    let out = model.call(&host, vec![npy::to_tensor(alloc, &x).expect("tensor")]).expect("run");
    let got = npy::from_tensor(&out[0]).expect("output");
    let want = npy::read(&read(".output.npy")).expect("golden");
    assert_eq!(got.shape, want.shape);
    let f = |d: &[u8]| d.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect::<Vec<_>>();
    let (got, want) = (f(&got.data), f(&want.data));
    // Relative to the value, or absolute below 1 (values near 0 carry the rounding of the
    // large ones they were computed from).
    let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0f32, f32::max);
    eprintln!("{name}: largest error {worst:e} against onnxruntime");
    assert!(worst <= 1e-5, "{name}: largest error {worst} against onnxruntime");
}

#[test]
fn cnn_matches_onnxruntime() {
    check("cnn_small");
}

#[test]
fn attention_block_matches_onnxruntime() {
    check("attention_block");
}

#[test]
fn transformer_encoder_matches_onnxruntime() {
    check("transformer_encoder");
}

#[test]
fn a_cnn_keeps_its_activations_nhwc() {
    // One transpose in (the NCHW input), none between the layers: the flatten after the
    // global pool reads the same bytes in either order.
    let bytes =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/onnx/cnn_small.onnx")).unwrap();
    let read = hostrt_import::onnx::model::ReadOptions::default();
    let imported = hostrt_import::onnx_with(&bytes, &read, Default::default()).expect("import");
    let mlir = imported.to_mlir();
    assert_eq!(mlir.matches("nn.copy").count(), 1, "{mlir}");
}
