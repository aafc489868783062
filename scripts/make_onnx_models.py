#!/usr/bin/env python3
"""Builds the small ONNX models import/tests/onnx_models.rs checks (a CNN, an attention
block, a 2-layer transformer encoder, an upsampling decoder, a token-id model, a CNN in QOperator form, dynamically quantized models, PyTorch's padding layers, Resize's cubic and antialiased filters,
a ResNet basic-block stack and a DS-CNN-shaped keyword CNN with their batch norms, float and QDQ int8), with their inputs and
onnxruntime's outputs as goldens (import/tests/models/onnx/). Needs `onnx`, `onnxruntime`
and `numpy` from the package registry:

    pip install onnx==1.23.2 onnxruntime numpy && python3 scripts/make_onnx_models.py

With HOSTRT_MODELS_OUT=DIR it writes the larger benchmark models there instead
(scripts/bench_onnx.sh).

The models are written with onnx.helper from a fixed seed, so the files are reproducible.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "import", "tests", "models", "onnx")
rng = np.random.default_rng(7)


def w(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def save(name, nodes, inits, x_shape, y_shape, opset):
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="hostrt-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, f"{name}.onnx")
    onnx.save(model, path)
    shape = [1 if isinstance(d, str) else d for d in x_shape]
    x = rng.standard_normal(shape).astype(np.float32)
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(OUT, f"{name}.input.npy"), x)
    np.save(os.path.join(OUT, f"{name}.output.npy"), y)
    print(f"{name}: {os.path.getsize(path)} bytes, output {y.shape}")


def cnn():
    """A MobileNet-shaped CNN: conv + batch norm + ReLU, max pool, a depthwise conv with
    asymmetric pads and ReLU6 as Clip, a pointwise conv, a residual add, global average pool,
    the Shape -> Gather -> Unsqueeze -> Concat -> Reshape flatten exporters emit, Gemm, Softmax."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "c1.w", "c1.b"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn"], epsilon=1e-3),
        n("Relu", ["bn"], ["r1"]),
        n("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "dw.w"], ["dw"], group=8, kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1]),
        n("Clip", ["dw", "zero", "six"], ["r2"]),
        n("Conv", ["r2", "pw.w", "pw.b"], ["pw"], kernel_shape=[1, 1]),
        n("Conv", ["p1", "sc.w"], ["sc"], kernel_shape=[1, 1], strides=[2, 2]),
        n("Add", ["pw", "sc"], ["sum"]),
        n("GlobalAveragePool", ["sum"], ["gap"]),
        n("Shape", ["gap"], ["shape"]),
        n("Gather", ["shape", "zero_i"], ["batch"], axis=0),
        n("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        n("Concat", ["batch1", "minus1"], ["flat_shape"], axis=0),
        n("Reshape", ["gap", "flat_shape"], ["flat"]),
        n("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1),
        n("Softmax", ["logits"], ["y"], axis=-1),
    ]
    inits = [
        w("c1.w", 8, 3, 3, 3), w("c1.b", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.s"), w("bn.b", 8),
        w("bn.m", 8), numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "bn.v"),
        w("dw.w", 8, 1, 3, 3), w("pw.w", 16, 8, 1, 1), w("pw.b", 16), w("sc.w", 16, 8, 1, 1),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(6.0, np.float32), "six"),
        i64("zero_i", 0), i64("axes0", [0]), i64("minus1", [-1]),
        w("fc.w", 10, 16), w("fc.b", 10),
    ]
    save("cnn_small", nodes, inits, ["batch", 3, 16, 16], ["batch", 10], 13)


def attention():
    """One transformer attention block without normalization: Q, K, V projections (MatMul +
    Add), scores Q·Kᵀ scaled, Softmax, ·V, output projection, residual add."""
    n = helper.make_node
    d = 16
    nodes = [
        n("MatMul", ["x", "wq"], ["q0"]), n("Add", ["q0", "bq"], ["q"]),
        n("MatMul", ["x", "wk"], ["k0"]), n("Add", ["k0", "bk"], ["k"]),
        n("MatMul", ["x", "wv"], ["v0"]), n("Add", ["v0", "bv"], ["v"]),
        n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["s0"]),
        n("Mul", ["s0", "scale"], ["s"]),
        n("Softmax", ["s"], ["a"], axis=-1),
        n("MatMul", ["a", "v"], ["o0"]),
        n("MatMul", ["o0", "wo"], ["o1"]), n("Add", ["o1", "bo"], ["o"]),
        n("Add", ["o", "x"], ["y"]),
    ]
    inits = [w("wq", d, d), w("bq", d), w("wk", d, d), w("bk", d), w("wv", d, d), w("bv", d), w("wo", d, d), w("bo", d),
             numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32), "scale")]
    save("attention_block", nodes, inits, [1, 8, d], [1, 8, d], 17)


def encoder():
    """A 2-layer transformer encoder as PyTorch exports it (opset 17): LayerNormalization,
    single-head attention as MatMul + Softmax, and a GELU MLP written with Erf."""
    n = helper.make_node
    d, h = 16, 32
    nodes, inits = [], []
    x = "x"
    for L in range(2):
        p = f"l{L}."
        nodes += [
            n("LayerNormalization", [x, p + "ln1.s", p + "ln1.b"], [p + "n1"], axis=-1, epsilon=1e-5),
            n("MatMul", [p + "n1", p + "wq"], [p + "q"]),
            n("MatMul", [p + "n1", p + "wk"], [p + "k"]),
            n("MatMul", [p + "n1", p + "wv"], [p + "v"]),
            n("Transpose", [p + "k"], [p + "kt"], perm=[0, 2, 1]),
            n("MatMul", [p + "q", p + "kt"], [p + "s0"]),
            n("Div", [p + "s0", "sqrt_d"], [p + "s"]),
            n("Softmax", [p + "s"], [p + "a"], axis=-1),
            n("MatMul", [p + "a", p + "v"], [p + "o0"]),
            n("MatMul", [p + "o0", p + "wo"], [p + "o"]),
            n("Add", [x, p + "o"], [p + "r1"]),
            n("LayerNormalization", [p + "r1", p + "ln2.s", p + "ln2.b"], [p + "n2"], axis=-1, epsilon=1e-5),
            n("MatMul", [p + "n2", p + "w1"], [p + "h0"]),
            n("Add", [p + "h0", p + "b1"], [p + "h1"]),
            n("Div", [p + "h1", "sqrt2"], [p + "g0"]),
            n("Erf", [p + "g0"], [p + "g1"]),
            n("Add", [p + "g1", "one"], [p + "g2"]),
            n("Mul", [p + "h1", p + "g2"], [p + "g3"]),
            n("Mul", [p + "g3", "half"], [p + "g"]),
            n("MatMul", [p + "g", p + "w2"], [p + "m0"]),
            n("Add", [p + "m0", p + "b2"], [p + "m"]),
            n("Add", [p + "r1", p + "m"], ["y" if L == 1 else p + "out"]),
        ]
        inits += [
            numpy_helper.from_array(rng.uniform(0.5, 1.5, d).astype(np.float32), p + "ln1.s"), w(p + "ln1.b", d),
            numpy_helper.from_array(rng.uniform(0.5, 1.5, d).astype(np.float32), p + "ln2.s"), w(p + "ln2.b", d),
            w(p + "wq", d, d), w(p + "wk", d, d), w(p + "wv", d, d), w(p + "wo", d, d),
            w(p + "w1", d, h), w(p + "b1", h), w(p + "w2", h, d), w(p + "b2", d),
        ]
        x = p + "out"
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits += [scalar("sqrt_d", np.sqrt(d)), scalar("sqrt2", np.sqrt(2.0)), scalar("one", 1.0), scalar("half", 0.5)]
    save("transformer_encoder", nodes, inits, [1, 8, d], [1, 8, d], 17)


def int8_input():
    """An int8 graph input dequantized and used as floats (a Relu), not fused into a layer."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("DequantizeLinear", ["x", "s", "z"], ["f"]), n("Relu", ["f"], ["y"])],
        "int8_input",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"), numpy_helper.from_array(np.array(-2, np.int8), "z")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="hostrt-tests")
    model.ir_version = 8
    path = os.path.join(OUT, "int8_input.onnx")
    onnx.save(model, path)
    x = rng.integers(-128, 128, (1, 8)).astype(np.int8)
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(OUT, "int8_input.input.npy"), x)
    np.save(os.path.join(OUT, "int8_input.output.npy"), y)
    print(f"int8_input: {os.path.getsize(path)} bytes")


def qdq(name, calibration_shape, activation, unfused=False, preprocess=False):
    """The float model `name` quantized by onnxruntime's static quantizer to QDQ form: int8
    per-channel weights, `activation` (QUInt8, onnxruntime's default, or QInt8) activations,
    calibrated on 16 random inputs. The golden is onnxruntime's output of the QDQ model;
    with `unfused`, with its graph optimizations off: each operator between its Dequantize
    and Quantize as ONNX defines it, where onnxruntime's fused int8 kernels (QLinear*) round
    otherwise (the padded model: up to 7 output steps apart). With `preprocess`, the float
    model goes through onnxruntime's quantization pre-processing first (`quant_pre_process`,
    the step its documentation asks for: batch norms folded into the convolutions)."""
    import tempfile
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": rng.standard_normal(calibration_shape).astype(np.float32)} for _ in range(16)])

        def get_next(self):
            return next(self.data, None)

    suffix = "u8" if activation == "QUInt8" else "s8"
    src, dst = os.path.join(OUT, f"{name}.onnx"), os.path.join(OUT, f"{name}_qdq_{suffix}.onnx")
    if preprocess:
        pre = os.path.join(tempfile.mkdtemp(), f"{name}.onnx")
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        src = pre
    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8)
    x = rng.standard_normal(calibration_shape).astype(np.float32)
    options = ort.SessionOptions()
    if unfused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = ort.InferenceSession(dst, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(OUT, f"{name}_qdq_{suffix}.input.npy"), x)
    np.save(os.path.join(OUT, f"{name}_qdq_{suffix}.output.npy"), y)
    print(f"{name}_qdq_{suffix}: {os.path.getsize(dst)} bytes, output {y.shape}")


def batch_norm(n, nodes, inits, x, name, c):
    """An inference-mode BatchNormalization of `c` channels after `x` (statistics near
    those of a trained network), as PyTorch exports it when not folding it itself."""
    inits += [
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), name + ".s"),
        numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), name + ".b"),
        numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), name + ".m"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), name + ".v"),
    ]
    nodes.append(n("BatchNormalization", [x, name + ".s", name + ".b", name + ".m", name + ".v"], [name]))
    return name


def resnet_blocks():
    """A ResNet basic-block stack as PyTorch exports it: a stem (conv, batch norm, ReLU),
    one identity block and one strided block with a 1x1 projection shortcut (each conv,
    batch norm, ReLU, conv, batch norm, residual Add, ReLU), global average pool, Flatten,
    Gemm, Softmax."""
    n = helper.make_node
    nodes, inits = [], []

    def conv_bn(x, name, cin, cout, k, stride=1, relu=True):
        inits.append(w(name + ".w", cout, cin, k, k, scale=0.3))
        p = k // 2
        nodes.append(n("Conv", [x, name + ".w"], [name + ".c"], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[p, p, p, p]))
        y = batch_norm(n, nodes, inits, name + ".c", name + ".bn", cout)
        if relu:
            nodes.append(n("Relu", [y], [name + ".r"]))
            return name + ".r"
        return y

    x = conv_bn("x", "stem", 3, 8, 3)
    for name, cin, cout, stride in [("b1", 8, 8, 1), ("b2", 8, 16, 2)]:
        h = conv_bn(x, name + ".1", cin, cout, 3, stride)
        h = conv_bn(h, name + ".2", cout, cout, 3, relu=False)
        skip = x if stride == 1 and cin == cout else conv_bn(x, name + ".sc", cin, cout, 1, stride, relu=False)
        nodes += [n("Add", [h, skip], [name + ".add"]), n("Relu", [name + ".add"], [name + ".out"])]
        x = name + ".out"
    nodes += [n("GlobalAveragePool", [x], ["gap"]), n("Flatten", ["gap"], ["flat"]),
              n("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1), n("Softmax", ["logits"], ["y"], axis=-1)]
    inits += [w("fc.w", 10, 16), w("fc.b", 10, scale=0.1)]
    save("resnet_blocks", nodes, inits, [1, 3, 16, 16], [1, 10], 13)


def keyword_cnn():
    """An LSTM-free keyword-spotting CNN shaped as DS-CNN on 49x10 MFCC frames: a 10x4
    stride-2 conv with batch norm and ReLU, two depthwise-separable blocks (3x3 depthwise,
    1x1 pointwise, each with batch norm and ReLU), average pool over the whole 25x5 map,
    Flatten, Gemm to 12 keywords, Softmax."""
    n = helper.make_node
    nodes, inits = [], []
    inits.append(w("c1.w", 16, 1, 10, 4, scale=0.3))
    nodes.append(n("Conv", ["x", "c1.w"], ["c1"], kernel_shape=[10, 4], strides=[2, 2], pads=[4, 1, 5, 2]))
    x = batch_norm(n, nodes, inits, "c1", "c1.bn", 16)
    nodes.append(n("Relu", [x], ["c1.r"]))
    x = "c1.r"
    for b in range(2):
        p = f"ds{b}"
        inits += [w(p + ".dw.w", 16, 1, 3, 3, scale=0.3), w(p + ".pw.w", 16, 16, 1, 1, scale=0.3)]
        nodes.append(n("Conv", [x, p + ".dw.w"], [p + ".dw"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16))
        y = batch_norm(n, nodes, inits, p + ".dw", p + ".dw.bn", 16)
        nodes += [n("Relu", [y], [p + ".dw.r"]), n("Conv", [p + ".dw.r", p + ".pw.w"], [p + ".pw"], kernel_shape=[1, 1])]
        y = batch_norm(n, nodes, inits, p + ".pw", p + ".pw.bn", 16)
        nodes.append(n("Relu", [y], [p + ".out"]))
        x = p + ".out"
    nodes += [n("AveragePool", [x], ["pool"], kernel_shape=[25, 5]), n("Flatten", ["pool"], ["flat"]),
              n("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1), n("Softmax", ["logits"], ["y"], axis=-1)]
    inits += [w("fc.w", 12, 16), w("fc.b", 12, scale=0.1)]
    save("keyword_cnn", nodes, inits, [1, 1, 49, 10], [1, 12], 13)


def bench_models(out):
    """Larger float models for the speed comparison with onnxruntime (scripts/bench_onnx.sh),
    too large to commit: a MobileNetV2-shaped CNN at 3x96x96 (inverted residual blocks:
    1x1 expand + ReLU6, 3x3 depthwise + ReLU6, 1x1 project, residual adds; global pool; a
    1000-way Gemm) and a 4-layer transformer encoder (sequence 64, width 128, MLP 512)."""
    global OUT
    OUT = out
    os.makedirs(out, exist_ok=True)
    n = helper.make_node
    nodes, inits = [], []
    relu6 = lambda i, o: n("Clip", [i, "zero", "six"], [o])
    def conv(x, name, cin, cout, k, stride=1, group=1, act=True):
        inits.extend([w(name + ".w", cout, cin // group, k, k, scale=0.2), w(name + ".b", cout, scale=0.1)])
        p = k // 2
        nodes.append(n("Conv", [x, name + ".w", name + ".b"], [name], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[p, p, p, p], group=group))
        if act:
            nodes.append(relu6(name, name + ".r"))
            return name + ".r"
        return name
    x = conv("x", "stem", 3, 16, 3, stride=2)
    c = 16
    for i, (t, cout, stride) in enumerate([(1, 16, 1), (6, 24, 2), (6, 24, 1), (6, 32, 2), (6, 32, 1), (6, 64, 2), (6, 64, 1)]):
        h = conv(x, f"b{i}.e", c, c * t, 1) if t != 1 else x
        h = conv(h, f"b{i}.d", c * t, c * t, 3, stride=stride, group=c * t)
        h = conv(h, f"b{i}.p", c * t, cout, 1, act=False)
        if stride == 1 and cout == c:
            nodes.append(n("Add", [x, h], [f"b{i}.add"]))
            h = f"b{i}.add"
        x, c = h, cout
    x = conv(x, "head", c, 256, 1)
    nodes += [n("GlobalAveragePool", [x], ["gap"]), n("Flatten", ["gap"], ["flat"]),
              n("Gemm", ["flat", "fc.w", "fc.b"], ["y"], transB=1)]
    inits += [w("fc.w", 1000, 256, scale=0.05), w("fc.b", 1000, scale=0.05),
              numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
              numpy_helper.from_array(np.array(6.0, np.float32), "six")]
    save("mobilenet_v2_96", nodes, inits, [1, 3, 96, 96], [1, 1000], 13)

    nodes, inits = [], []
    d, hdim, seq = 128, 512, 64
    x = "x"
    for L in range(4):
        p = f"l{L}."
        nodes += [
            n("LayerNormalization", [x, p + "ln1.s", p + "ln1.b"], [p + "n1"], axis=-1),
            n("MatMul", [p + "n1", p + "wq"], [p + "q"]), n("MatMul", [p + "n1", p + "wk"], [p + "k"]),
            n("MatMul", [p + "n1", p + "wv"], [p + "v"]), n("Transpose", [p + "k"], [p + "kt"], perm=[0, 2, 1]),
            n("MatMul", [p + "q", p + "kt"], [p + "s0"]), n("Mul", [p + "s0", "scale"], [p + "s"]),
            n("Softmax", [p + "s"], [p + "a"], axis=-1), n("MatMul", [p + "a", p + "v"], [p + "o0"]),
            n("MatMul", [p + "o0", p + "wo"], [p + "o"]), n("Add", [x, p + "o"], [p + "r1"]),
            n("LayerNormalization", [p + "r1", p + "ln2.s", p + "ln2.b"], [p + "n2"], axis=-1),
            n("MatMul", [p + "n2", p + "w1"], [p + "h0"]), n("Add", [p + "h0", p + "b1"], [p + "h1"]),
            n("Div", [p + "h1", "sqrt2"], [p + "g0"]), n("Erf", [p + "g0"], [p + "g1"]),
            n("Add", [p + "g1", "one"], [p + "g2"]), n("Mul", [p + "h1", p + "g2"], [p + "g3"]),
            n("Mul", [p + "g3", "half"], [p + "g"]), n("MatMul", [p + "g", p + "w2"], [p + "m0"]),
            n("Add", [p + "m0", p + "b2"], [p + "m"]), n("Add", [p + "r1", p + "m"], ["y" if L == 3 else p + "out"]),
        ]
        inits += [w(p + "ln1.s", d), w(p + "ln1.b", d), w(p + "ln2.s", d), w(p + "ln2.b", d),
                  w(p + "wq", d, d, scale=0.1), w(p + "wk", d, d, scale=0.1), w(p + "wv", d, d, scale=0.1),
                  w(p + "wo", d, d, scale=0.1), w(p + "w1", d, hdim, scale=0.1), w(p + "b1", hdim),
                  w(p + "w2", hdim, d, scale=0.05), w(p + "b2", d)]
        x = p + "out"
    sc = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits += [sc("scale", 1 / np.sqrt(d)), sc("sqrt2", np.sqrt(2.0)), sc("one", 1.0), sc("half", 0.5)]
    save("transformer_4x128", nodes, inits, [1, seq, d], [1, seq, d], 17)


def decoder():
    """An upsampling decoder head: Conv + Relu, LRN, a stride-2 ConvTranspose with pads and
    output_padding, a linear half-pixel Resize down by 2 and a nearest asymmetric Resize up
    by 2 (PyTorch's Upsample), a 1x1 Conv."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "c1.w", "c1.b"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("LRN", ["r1"], ["l1"], size=3, alpha=1e-3, beta=0.75, bias=1.0),
        n("ConvTranspose", ["l1", "t.w", "t.b"], ["t1"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        n("Resize", ["t1", "", "down"], ["d1"], mode="linear", coordinate_transformation_mode="half_pixel"),
        n("Resize", ["d1", "", "up"], ["u1"], mode="nearest", coordinate_transformation_mode="asymmetric",
          nearest_mode="floor"),
        n("Conv", ["u1", "c2.w", "c2.b"], ["y"], kernel_shape=[1, 1]),
    ]
    scales = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    inits = [
        w("c1.w", 8, 3, 3, 3), w("c1.b", 8), w("t.w", 8, 4, 3, 3), w("t.b", 4),
        scales("down", [1, 1, 0.5, 0.5]), scales("up", [1, 1, 2, 2]), w("c2.w", 2, 4, 1, 1), w("c2.b", 2),
    ]
    save("decoder", nodes, inits, [1, 3, 16, 16], [1, 2, 32, 32], 13)


def tokens():
    """Token ids through an embedding Gather, an Einsum projection, a padding mask
    (Equal, Not, Greater, And, Where), ArgMax cast to float and Expanded back, and a Tile."""
    n = helper.make_node
    nodes = [
        n("Gather", ["emb", "x"], ["e"]),
        n("Einsum", ["e", "proj"], ["h"], equation="bsd,de->bse"),
        n("Equal", ["x", "zero"], ["pad"]),
        n("Not", ["pad"], ["real"]),
        n("Greater", ["x", "three"], ["big"]),
        n("And", ["real", "big"], ["keep"]),
        n("Unsqueeze", ["keep", "axis2"], ["keep3"]),
        n("Where", ["keep3", "h", "neg"], ["hm"]),
        n("ArgMax", ["hm"], ["a"], axis=2, keepdims=1),
        n("Cast", ["a"], ["af"], to=TensorProto.FLOAT),
        n("Expand", ["af", "shape"], ["ae"]),
        n("Add", ["hm", "ae"], ["s"]),
        n("Tile", ["s", "reps"], ["y"]),
    ]
    inits = [
        w("emb", 20, 16), w("proj", 16, 16), i64("zero", 0), i64("three", 3), i64("axis2", [2]),
        numpy_helper.from_array(np.array([-1.0], np.float32), "neg"), i64("shape", [1, 8, 16]), i64("reps", [1, 2, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "tokens",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="hostrt-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(OUT, "tokens.onnx")
    onnx.save(model, path)
    x = np.array([[5, 0, 3, 12, 19, 0, 7, 1]], np.int64)
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(OUT, "tokens.input.npy"), x)
    np.save(os.path.join(OUT, "tokens.output.npy"), y)
    print(f"tokens: {os.path.getsize(path)} bytes, output {y.shape}")


def qlinear():
    """A small CNN (two Conv + Relu, Flatten, MatMul) quantized by onnxruntime's static
    quantizer to its QOperator form: QuantizeLinear, QLinearConv (Relu folded into the output
    range), Flatten over int8 values, QLinearMatMul, DequantizeLinear."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "c1.w", "c1.b"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "c2.w", "c2.b"], ["c2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Relu", ["c2"], ["r2"]),
        n("Flatten", ["r2"], ["f"]),
        n("MatMul", ["f", "fc.w"], ["y"]),
    ]
    inits = [w("c1.w", 8, 3, 3, 3), w("c1.b", 8), w("c2.w", 8, 8, 3, 3), w("c2.b", 8), w("fc.w", 128, 10)]
    save("qlinear_cnn", nodes, inits, [1, 3, 8, 8], [1, 10], 13)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": rng.standard_normal([1, 3, 8, 8]).astype(np.float32)} for _ in range(16)])

        def get_next(self):
            return next(self.data, None)

    for activation, suffix in [("QInt8", "s8"), ("QUInt8", "u8")]:
        src, dst = os.path.join(OUT, "qlinear_cnn.onnx"), os.path.join(OUT, f"qlinear_cnn_qop_{suffix}.onnx")
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                        activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8)
        x = rng.standard_normal([1, 3, 8, 8]).astype(np.float32)
        y = ort.InferenceSession(dst, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.save(os.path.join(OUT, f"qlinear_cnn_qop_{suffix}.input.npy"), x)
        np.save(os.path.join(OUT, f"qlinear_cnn_qop_{suffix}.output.npy"), y)
        print(f"qlinear_cnn_qop_{suffix}: {os.path.getsize(dst)} bytes, output {y.shape}")


def dynamic(name, weight_type):
    """The float model `name` quantized by onnxruntime's dynamic quantizer: int8 or uint8
    weights, and each MatMul's or Conv's input quantized at run time (DynamicQuantizeLinear,
    MatMulInteger or ConvInteger, Cast, Mul)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    suffix = "u8" if weight_type == "QUInt8" else "s8"
    src, dst = os.path.join(OUT, f"{name}.onnx"), os.path.join(OUT, f"{name}_dyn_{suffix}.onnx")
    quantize_dynamic(src, dst, weight_type=getattr(QuantType, weight_type))
    x = np.load(os.path.join(OUT, f"{name}.input.npy"))
    y = ort.InferenceSession(dst, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(OUT, f"{name}_dyn_{suffix}.input.npy"), x)
    np.save(os.path.join(OUT, f"{name}_dyn_{suffix}.output.npy"), y)
    print(f"{name}_dyn_{suffix}: {os.path.getsize(dst)} bytes, output {y.shape}")


def padded():
    """What PyTorch exports for its padding layers: ReflectionPad2d, ReplicationPad2d,
    circular padding and ConstantPad2d (Pad in modes reflect, edge, wrap and constant), and
    AvgPool2d's default count_include_pad=True over explicit pads, with ceil_mode."""
    n = helper.make_node
    nodes = [
        n("Pad", ["x", "p1"], ["xp"], mode="reflect"),
        n("Conv", ["xp", "c1.w", "c1.b"], ["c1"], kernel_shape=[3, 3]),
        n("Relu", ["c1"], ["r1"]),
        n("Pad", ["r1", "p2"], ["rp"], mode="edge"),
        n("AveragePool", ["rp"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
          count_include_pad=1, ceil_mode=1),
        n("Pad", ["ap", "p3"], ["wp"], mode="wrap"),
        n("Conv", ["wp", "c2.w", "c2.b"], ["c2"], kernel_shape=[3, 3]),
        n("Pad", ["c2", "p4", "v4"], ["cp"]),
        n("GlobalAveragePool", ["cp"], ["gap"]),
        n("Flatten", ["gap"], ["flat"]),
        n("Gemm", ["flat", "fc.w", "fc.b"], ["y"], transB=1),
    ]
    inits = [
        i64("p1", [0, 0, 2, 1, 0, 0, 1, 2]), w("c1.w", 8, 3, 3, 3), w("c1.b", 8),
        i64("p2", [0, 0, 1, 0, 0, 0, 2, 1]), i64("p3", [0, 0, 1, 1, 0, 0, 1, 1]),
        w("c2.w", 8, 8, 3, 3), w("c2.b", 8), w("fc.w", 5, 8), w("fc.b", 5),
        i64("p4", [0, 0, 2, 0, 0, 0, 1, 3]), numpy_helper.from_array(np.array(0.5, np.float32), "v4"),
    ]
    save("padded", nodes, inits, [1, 3, 12, 12], [1, 5], 19)


def resize_filters():
    """Resize with the filters beyond nearest and linear: cubic (a = -0.5, outside pixels
    excluded) up to 11x13, then an antialiased linear and an antialiased cubic shrink."""
    n = helper.make_node
    nodes = [
        n("Resize", ["x", "", "", "s1"], ["up"], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
        n("Resize", ["up", "", "q2"], ["down"], mode="linear", antialias=1),
        n("Resize", ["down", "", "", "s3"], ["y"], mode="cubic", antialias=1,
          coordinate_transformation_mode="pytorch_half_pixel"),
    ]
    inits = [
        i64("s1", [1, 2, 11, 13]),
        numpy_helper.from_array(np.array([1, 1, 0.5, 0.6], np.float32), "q2"),
        i64("s3", [1, 2, 2, 3]),
    ]
    save("resize_filters", nodes, inits, [1, 2, 6, 7], [1, 2, 2, 3], 18)


if __name__ == "__main__":
    if os.environ.get("HOSTRT_MODELS_OUT"):
        bench_models(os.environ["HOSTRT_MODELS_OUT"])
        raise SystemExit(0)
    os.makedirs(OUT, exist_ok=True)
    cnn()
    attention()
    encoder()
    qdq("cnn_small", [1, 3, 16, 16], "QUInt8")
    qdq("cnn_small", [1, 3, 16, 16], "QInt8")
    int8_input()
    decoder()
    tokens()
    qlinear()
    dynamic("cnn_small", "QUInt8")
    dynamic("transformer_encoder", "QInt8")
    padded()
    qdq("padded", [1, 3, 12, 12], "QInt8", unfused=True)
    resize_filters()
    resnet_blocks()
    keyword_cnn()
    qdq("resnet_blocks", [1, 3, 16, 16], "QInt8", preprocess=True)
    qdq("keyword_cnn", [1, 1, 49, 10], "QInt8", preprocess=True)
