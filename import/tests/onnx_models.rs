//! Whole ONNX models (scripts/make_onnx_models.py: a MobileNet-shaped CNN with the
//! flatten chain exporters emit, a ResNet basic-block stack, a DS-CNN-shaped keyword CNN, a
//! transformer attention block, a 2-layer transformer encoder with LayerNormalization and an
//! Erf GELU, an upsampling decoder and a token-id model, float and quantized) imported, run,
//! and compared with onnxruntime's outputs.

use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy;

fn check(name: &str) {
    check_within(name, |_| 1e-5);
}

/// Runs `name` and compares with onnxruntime's output: each value within `tolerance(golden)`
/// (relative, or absolute below 1).
fn check_within(name: &str, tolerance: impl Fn(f32) -> f32) {
    check_on(name, tolerance, &SingleThreadedWorkQueue::new());
}

/// [`check_within`] on the host work queue `queue`.
fn check_on(name: &str, tolerance: impl Fn(f32) -> f32, queue: &dyn hostrt_core::ConcurrentWorkQueue) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/onnx/");
    let read = |suffix: &str| std::fs::read(format!("{dir}{name}{suffix}")).expect(suffix);
    let alloc =
        Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("allocator");
    let host = HostContext::new(alloc, queue);
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
    for (a, b) in got.iter().zip(&want) {
        assert!((a - b).abs() / b.abs().max(1.0) <= tolerance(*b), "{name}: {a} where onnxruntime gives {b}");
    }
}

/// The import report's operator table of test model `name`: op → (count, kernels).
fn op_table(name: &str) -> std::collections::BTreeMap<String, (usize, String)> {
    let path = format!("{}/tests/models/onnx/{name}.onnx", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(path).unwrap();
    let read = hostrt_import::onnx::model::ReadOptions::default();
    hostrt_import::onnx_with(&bytes, &read, Default::default()).expect("import").report.ops
}

#[test]
fn cnn_matches_onnxruntime() {
    check("cnn_small");
}

/// With several workers the GEMMs and convolutions split their output rows over them
/// (`parallel_for`): the same answers, within the same tolerance.
#[test]
fn models_split_over_workers_match_onnxruntime() {
    for workers in [2, 3] {
        let queue = hostrt_std::MultiThreadedWorkQueue::new(workers, 0);
        for name in
            ["cnn_small", "resnet_blocks", "keyword_cnn", "attention_block", "transformer_encoder", "decoder"]
        {
            check_on(name, |_| 1e-5, &queue);
        }
    }
}

#[test]
fn attention_block_matches_onnxruntime() {
    check("attention_block");
}

#[test]
fn transformer_encoder_matches_onnxruntime() {
    check("transformer_encoder");
}

/// The encoder's Erf GELU (Div, Erf, Add, Mul, Mul) runs as one exact GELU kernel, reported
/// under its last node; the test above checks its values against onnxruntime's.
#[test]
fn an_erf_gelu_chain_runs_as_one_kernel() {
    let ops = op_table("transformer_encoder");
    let ops = &ops;
    let kernels = |op: &str| ops.get(op).map(|(n, k)| (*n, k.as_str()));
    // Per layer: one GELU; the Div left is the attention's scaling.
    assert_eq!(kernels("Erf"), None, "{ops:?}");
    assert_eq!(kernels("Mul"), Some((2, "nn.gelu.f32")), "{ops:?}");
    assert_eq!(kernels("Div"), Some((2, "nn.div.f32")), "{ops:?}");
}

/// The CNN's Conv, BatchNormalization and Relu run as one convolution: the normalization
/// folded into its filter and bias, the Relu as its clamp; `cnn_matches_onnxruntime`
/// checks the values.
#[test]
fn a_conv_batch_norm_relu_chain_runs_as_one_convolution() {
    let ops = op_table("cnn_small");
    assert!(!ops.contains_key("BatchNormalization") && !ops.contains_key("Relu"), "{ops:?}");
    assert_eq!(ops.get("Conv").map(|(n, _)| *n), Some(4), "{ops:?}");
    let kernels: Vec<&str> = ops.values().flat_map(|(_, k)| k.split(", ")).collect();
    assert!(!kernels.contains(&"nn.mul.f32") && !kernels.contains(&"nn.clamp.f32"), "{ops:?}");
}

/// The CNN quantized by onnxruntime (QDQ, per-channel int8 weights) runs as int8 kernels with
/// TensorFlow Lite's arithmetic, whose rounding is not onnxruntime's: the softmax outputs
/// (scale 1/255) may differ by 2 steps with uint8 activations; with int8 ones they are equal.
#[test]
fn qdq_cnn_matches_onnxruntime_within_two_steps() {
    check_within("cnn_small_qdq_u8", |_| 2.0 / 255.0 + 1e-6);
    check_within("cnn_small_qdq_s8", |_| 2.0 / 255.0 + 1e-6);
}

/// A ResNet basic-block stack and a DS-CNN-shaped keyword CNN as PyTorch writes them (Conv,
/// BatchNormalization, Relu; the batch norms fold into the convolutions at import).
#[test]
fn resnet_blocks_and_keyword_cnn_match_onnxruntime() {
    check("resnet_blocks");
    check("keyword_cnn");
}

/// The same two quantized by onnxruntime after its pre-processing (QDQ, int8 activations and
/// per-channel weights) run their convolutions, adds and Gemm as int8 kernels: each output
/// within two steps of the softmax's scale (1/255) of onnxruntime's.
#[test]
fn qdq_resnet_blocks_and_keyword_cnn_run_int8_within_two_steps() {
    for name in ["resnet_blocks_qdq_s8", "keyword_cnn_qdq_s8"] {
        check_within(name, |_| 2.0 / 255.0 + 1e-6);
        let ops = op_table(name);
        assert!(ops["Conv"].1.contains("nn.conv_2d.i8") && !ops["Conv"].1.contains(".f32"), "{ops:?}");
        assert_eq!(ops["Gemm"].1, "nn.fully_connected.i8", "{ops:?}");
    }
}

/// LRN, a padded ConvTranspose with output_padding, and linear and nearest Resizes.
#[test]
fn decoder_matches_onnxruntime() {
    check("decoder");
}

/// int64 ids: Gather, Einsum, Equal/Not/Greater/And masks into Where, ArgMax, Cast, Expand
/// and Tile.
#[test]
fn token_model_matches_onnxruntime() {
    check("tokens");
}

/// The same kind of CNN in onnxruntime's QOperator form (QLinearConv, Flatten of int8
/// values, QLinearMatMul) runs as int8 kernels: each output within two steps of the final
/// DequantizeLinear's scale (TensorFlow Lite's rounding is not onnxruntime's).
#[test]
fn qoperator_cnn_matches_onnxruntime_within_two_steps() {
    check("qlinear_cnn");
    for name in ["qlinear_cnn_qop_s8", "qlinear_cnn_qop_u8"] {
        let path = format!("{}/tests/models/onnx/{name}.onnx", env!("CARGO_MANIFEST_DIR"));
        let m = hostrt_import::onnx::model::Model::read(&std::fs::read(path).unwrap(), &Default::default())
            .expect("model");
        let last = m.nodes.last().expect("nodes");
        assert_eq!(last.op_type, "DequantizeLinear");
        let scale = m.constants.get(last.inputs[1].as_deref().unwrap()).expect("scale").f64s()[0] as f32;
        check_within(name, |_| 2.0 * scale + 1e-6);
    }
}

/// Models quantized by onnxruntime's dynamic quantizer: each input of a Conv or MatMul
/// quantized at run time (DynamicQuantizeLinear), the exact int32 ConvInteger or
/// MatMulInteger, then float scaling.
#[test]
fn dynamically_quantized_models_match_onnxruntime() {
    check("cnn_small_dyn_u8");
    check("transformer_encoder_dyn_s8");
}

#[test]
fn pytorch_padding_layers_match_onnxruntime() {
    check("padded");
    // Quantized by onnxruntime with int8 activations; the golden is onnxruntime's run of
    // the QDQ graph as ONNX defines it (its fused int8 kernels round otherwise): within one
    // step of the output's scale.
    check_within("padded_qdq_s8", |_| 0.0189 + 1e-6);
    // Its Pads run on the int8 values (a constant Pad's value quantized as its input).
    let ops = op_table("padded_qdq_s8");
    let kernels = |op: &str| ops.get(op).map(|(n, k)| (*n, k.clone()));
    assert_eq!(kernels("Pad"), Some((4, "nn.pad_border, nn.fill, nn.copy".into())));
    assert_eq!(kernels("Conv"), Some((2, "nn.copy, nn.conv_2d.i8".into())));
}

#[test]
fn resize_filters_match_onnxruntime() {
    check("resize_filters");
}

#[test]
fn an_int8_input_dequantized_for_a_float_layer() {
    check("int8_input");
}

#[test]
fn qdq_layers_run_as_int8_kernels() {
    let ops = op_table("cnn_small_qdq_u8");
    let kernels = |op: &str| ops.get(op).map(|(_, k)| k.clone()).unwrap_or_default();
    assert_eq!(kernels("Conv"), "nn.copy, nn.conv_2d.i8, nn.depthwise_conv_2d.i8");
    assert_eq!(kernels("Gemm"), "nn.fully_connected.i8");
    assert_eq!(kernels("Add"), "nn.add.i8");
    assert_eq!(kernels("MaxPool"), "nn.max_pool_2d.i8");
    assert_eq!(kernels("GlobalAveragePool"), "nn.sum.i8");
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
