#!/usr/bin/env python3
"""Builds the TensorFlow Lite test models of hostrt-import and their goldens.

Each model is a small Keras network converted with TensorFlow's converter, in float32 and
in full-integer int8 (a representative dataset of random inputs); the HYBRID models in
dynamic-range quantization (int8 weights, float32 activations quantized on the fly); the
RAW models (LSTM variants no converter path writes) as FlatBuffers written here. For
every model this writes NAME.tflite, NAME.input.npy (one input batch, int8 inputs as the
model takes them) and NAME.output.npy, the golden output: TensorFlow Lite Micro's Python
interpreter for int8 models (the reference kernels firmware teams compare against), LiteRT
for float32, and LiteRT's builtin kernels without XNNPACK for hybrid models.
models.json records each golden's source, TFLite Micro's arena use and, for int8 models,
the CRC-32 of every operator output in TFLite Micro (the test compares each layer); for
float32 models, every float32 operator output's largest magnitude and up to 64 values at
evenly spaced positions in LiteRT's builtin kernels (`tensor_samples`, compared likewise).

Regenerate (needs TensorFlow, tflite-micro and ai-edge-litert from the package registry;
CI needs none of them):
    bash scripts/make_tflite_models.sh [NAME ...]
Only the float32 models' `tensor_samples`, from the committed models and inputs (nothing
rebuilt, the rest of models.json kept):
    bash scripts/make_tflite_models.sh --float-layers [NAME ...]
"""
import contextlib, json, os, sys, tempfile, zlib

import flatbuffers
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers as L

OUT = os.path.dirname(os.path.abspath(__file__))
# HOSTRT_MODELS_OUT=DIR writes elsewhere (scripts/bench_tflite.sh: float32 whole models too
# large to commit, for the speed table); every model then gets both kinds.
EXTRA = os.environ.get("HOSTRT_MODELS_OUT")
OUT = EXTRA or OUT
SEED = 1234


def conv_same_relu():
    x = keras.Input((12, 12, 3))
    return keras.Model(x, L.Conv2D(8, 3, padding="same", activation="relu")(x))


def conv_valid_stride2_relu6():
    x = keras.Input((15, 13, 4))
    return keras.Model(x, L.Conv2D(6, (3, 5), strides=2, padding="valid", activation=keras.activations.relu6)(x))


def conv_dilated_nobias():
    x = keras.Input((16, 16, 2))
    return keras.Model(x, L.Conv2D(4, 3, dilation_rate=2, padding="same", use_bias=False)(x))


def depthwise_dilated():
    x = keras.Input((13, 11, 4))
    h = L.DepthwiseConv2D(3, dilation_rate=(2, 3), padding="same", activation="relu")(x)
    return keras.Model(x, L.DepthwiseConv2D((2, 3), dilation_rate=2, padding="valid")(h))


def depthwise_same_relu6():
    x = keras.Input((10, 10, 8))
    return keras.Model(x, L.DepthwiseConv2D(3, padding="same", activation=keras.activations.relu6)(x))


def depthwise_mult2_stride2():
    x = keras.Input((11, 11, 3))
    return keras.Model(x, L.DepthwiseConv2D(3, strides=2, depth_multiplier=2, padding="valid")(x))


def fc_relu():
    x = keras.Input((40,))
    return keras.Model(x, L.Dense(16, activation="relu")(x))


def pools():
    x = keras.Input((13, 13, 5))
    a = L.MaxPooling2D(3, strides=2, padding="same")(x)
    return keras.Model(x, L.AveragePooling2D(2, strides=2, padding="valid")(a))


def add_mul():
    x = keras.Input((6, 6, 4))
    y = L.Conv2D(4, 1)(x)
    s = L.Add()([x, y])
    return keras.Model(x, L.Multiply()([s, L.Conv2D(4, 1, activation="relu")(s)]))


def softmax():
    x = keras.Input((20,))
    return keras.Model(x, L.Softmax()(L.Dense(10)(x)))


def ds_cnn():
    """DS-CNN keyword spotting (MLPerf Tiny's shape, 49x10 MFCC input, fewer filters)."""
    x = keras.Input((49, 10, 1))
    h = L.Conv2D(32, (10, 4), strides=2, padding="same", activation="relu")(x)
    for _ in range(3):
        h = L.DepthwiseConv2D(3, padding="same", activation="relu")(h)
        h = L.Conv2D(32, 1, activation="relu")(h)
    h = L.AveragePooling2D(pool_size=(25, 5))(h)
    h = L.Flatten()(h)
    return keras.Model(x, L.Softmax()(L.Dense(12)(h)))


def resnet8():
    """ResNet-8 for CIFAR-10 (MLPerf Tiny's shape, 32x32x3)."""
    x = keras.Input((32, 32, 3))
    h = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    for filters, stride in [(16, 1), (32, 2), (64, 2)]:
        y = L.Conv2D(filters, 3, strides=stride, padding="same", activation="relu")(h)
        y = L.Conv2D(filters, 3, padding="same")(y)
        if stride != 1 or filters != h.shape[-1]:
            h = L.Conv2D(filters, 1, strides=stride)(h)
        h = L.ReLU()(L.Add()([h, y]))
    h = L.AveragePooling2D(8)(h)
    h = L.Flatten()(h)
    return keras.Model(x, L.Softmax()(L.Dense(10)(h)))


def mobilenet_v1(shape, alpha=0.25, classes=2):
    """MobileNetV1 (MLPerf Tiny's visual wake words shape: width 0.25, 96x96 input, batch
    norm folded into the convolutions' biases)."""
    def build():
        x = keras.Input(shape)
        h = L.Conv2D(int(32 * alpha), 3, strides=2, padding="same", activation="relu")(x)
        blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
        for filters, stride in blocks:
            h = L.DepthwiseConv2D(3, strides=stride, padding="same", activation="relu")(h)
            h = L.Conv2D(int(filters * alpha), 1, activation="relu")(h)
        h = L.Flatten()(L.AveragePooling2D(h.shape[1:3])(h))
        return keras.Model(x, L.Softmax()(L.Dense(classes)(h)))
    return build


def autoencoder():
    """Fully-connected autoencoder (MLPerf Tiny anomaly detection: 640-128-8-128-640, two
    hidden layers fewer)."""
    x = keras.Input((640,))
    h = L.Dense(128, activation="relu")(x)
    h = L.Dense(8, activation="relu")(h)
    h = L.Dense(128, activation="relu")(h)
    return keras.Model(x, L.Dense(640)(h))


def transpose_pad():
    x = keras.Input((5, 6, 4))
    h = L.Permute((2, 1, 3))(L.Conv2D(4, 1)(x))
    return keras.Model(x, L.Conv2D(3, 1)(L.ZeroPadding2D(((1, 0), (2, 1)))(h)))


def slice_concat():
    x = keras.Input((8, 8, 4))
    h = L.Conv2D(4, 1)(x)
    a = L.Lambda(lambda t: t[:, 1:7:2, ::-1, :])(h)
    b = L.Lambda(lambda t: tf.slice(t, [0, 2, 0, 1], [1, 3, 8, 3]))(h)
    return keras.Model(x, L.Conv2D(5, 1)(L.Concatenate(axis=-1)([a, b])))


def split_pack():
    x = keras.Input((6, 4, 4))
    h = L.Conv2D(4, 1)(x)
    a, b = L.Lambda(lambda t: tf.split(t, 2, axis=1))(h)
    c, d, e = L.Lambda(lambda t: tf.split(t, [1, 2, 3], axis=1))(h)
    u = L.Lambda(lambda t: tf.stack(tf.unstack(t, axis=2)[::-1], axis=3))(h)
    s = L.Concatenate(axis=1)([b, a])
    m = L.Concatenate(axis=1)([e, c, d])
    return keras.Model(x, L.Conv2D(3, 1)(L.Concatenate(axis=-1)([s, m, L.Reshape((6, 4, 4))(u)])))


def padv2():
    x = keras.Input((5, 5, 3))
    h = L.Conv2D(3, 1)(x)
    return keras.Model(x, L.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 2], [2, 0], [0, 1]], constant_values=0.5))(h))


def mirror_pad():
    """MIRROR_PAD in both of TensorFlow's modes (REFLECT, which does not repeat the edge,
    and SYMMETRIC, which does), over rows, columns and channels, up to the longest pads
    each mode allows."""
    x = keras.Input((5, 6, 3))
    h = L.Conv2D(4, 1)(x)
    r = L.Lambda(lambda t: tf.pad(t, [[0, 0], [2, 1], [1, 3], [0, 0]], mode="REFLECT"))(h)
    s = L.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 2], [3, 1], [1, 4]], mode="SYMMETRIC"))(h)
    return keras.Model(x, L.Conv2D(3, 1)(L.Concatenate(axis=-1)([r, s])))


def space_batch_2d():
    """SPACE_TO_BATCH_ND (block 2x3, paddings 1+2 rows and 2+0 columns: [1, 5, 4, 3] ->
    [6, 4, 2, 3]), a 1x1 convolution over the six batches, BATCH_TO_SPACE_ND with another
    block (3x2) and crops (1+2 rows, 0+1 columns: -> [1, 9, 3, 4]). No dilated convolution's
    pair (the blocks differ), so both run on their own."""
    x = keras.Input((5, 4, 3), batch_size=1)
    h = L.Lambda(lambda t: tf.space_to_batch_nd(t, [2, 3], [[1, 2], [2, 0]]))(x)
    h = L.Conv2D(4, 1)(h)
    return keras.Model(x, L.Lambda(lambda t: tf.batch_to_space(t, [3, 2], [[1, 2], [0, 1]]))(h))


def space_batch_1d():
    """The 3-D form ([batch, steps, channels], one block dim): SPACE_TO_BATCH_ND (block 3,
    paddings 2+1: [1, 9, 4] -> [3, 4, 4]), a Dense over the channels, BATCH_TO_SPACE_ND
    (block 3, crops 1+0: -> [1, 11, 5])."""
    x = keras.Input((9, 4), batch_size=1)
    h = L.Lambda(lambda t: tf.space_to_batch_nd(t, [3], [[2, 1]]))(x)
    h = L.Dense(5)(h)
    return keras.Model(x, L.Lambda(lambda t: tf.batch_to_space(t, [3], [[1, 0]]))(h))


def sub_broadcast():
    x = keras.Input((5, 5, 4))
    a, b = L.Conv2D(4, 1)(x), L.Conv2D(1, 1)(x)
    c = L.Lambda(lambda t: t - tf.constant([0.5, -0.25, 1.0, 0.0]))(a)
    return keras.Model(x, L.Subtract()([c, b]))


def maximum_minimum():
    x = keras.Input((5, 5, 4))
    a, b, c = L.Conv2D(4, 1)(x), L.Conv2D(4, 1)(x), L.Conv2D(1, 1)(x)
    return keras.Model(x, L.Minimum()([L.Maximum()([a, b]), c]))


def squared_difference():
    x = keras.Input((5, 5, 4))
    a, b = L.Conv2D(4, 1)(x), L.Conv2D(4, 1)(x)
    return keras.Model(x, L.Lambda(lambda t: tf.math.squared_difference(t[0], t[1]))([a, b]))


def prelu():
    x = keras.Input((5, 5, 4))
    p = L.PReLU(shared_axes=[1, 2], alpha_initializer=keras.initializers.RandomUniform(0.05, 0.5))
    return keras.Model(x, p(L.Conv2D(4, 1)(x)))


def activation(layer):
    """One standalone activation operator on the model's input (after any other operator
    the converter fuses it or moves it before a transpose)."""
    def build():
        x = keras.Input((6, 40))
        return keras.Model(x, layer()(x))
    return build


ACTIVATIONS = {
    "relu": lambda: L.ReLU(),
    "relu6": lambda: L.ReLU(6.0),
    "relu_n1_to_1": lambda: L.Lambda(lambda t: tf.clip_by_value(t, -1.0, 1.0)),
    "leaky_relu": lambda: L.LeakyReLU(0.2),
    "logistic": lambda: L.Activation("sigmoid"),
    "tanh": lambda: L.Activation("tanh"),
    "hard_swish": lambda: L.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) / 6.0),
    "log_softmax": lambda: L.Lambda(tf.nn.log_softmax),
}


def mean_sum():
    """GlobalAveragePooling2D (MEAN over height and width), and SUM over channels kept."""
    x = keras.Input((6, 5, 8))
    h = L.Conv2D(8, 1)(x)
    m = L.GlobalAveragePooling2D()(h)
    s = L.Lambda(lambda t: tf.reduce_sum(t, axis=[1, 3]))(h)
    return keras.Model(x, L.Concatenate()([L.Dense(4)(m), L.Dense(4)(s)]))


def batch_matmul():
    """Attention-shaped products: q . k^T (adj_y), then the scores . v, over a batch of 2."""
    x = keras.Input((2, 6, 8), batch_size=1)  # static shapes: no shape arithmetic ops
    q, k, v = L.Dense(8)(x), L.Dense(8)(x), L.Dense(5)(x)
    s = L.Lambda(lambda t: tf.linalg.matmul(t[0], t[1], transpose_b=True))([q, k])
    return keras.Model(x, L.Lambda(lambda t: tf.linalg.matmul(t[0], t[1]))([s, v]))


def transpose_conv_same():
    """Conv2DTranspose 4x5, stride 2, SAME (padding 1 above and left of the 10x12 output; a
    3x3 stride 2 one has none), relu and bias fused into TRANSPOSE_CONV (a nonzero bias: the
    converter drops a zero one). A static batch: the output shape is a constant, not SHAPE
    arithmetic."""
    x = keras.Input((5, 6, 4), batch_size=1)
    return keras.Model(x, L.Conv2DTranspose(6, (4, 5), strides=2, padding="same", activation="relu")(x))


def transpose_conv_valid():
    """Conv2DTranspose 4x3, stride (2, 1), VALID, no bias (TRANSPOSE_CONV of three inputs)."""
    x = keras.Input((5, 6, 4), batch_size=1)
    return keras.Model(x, L.Conv2DTranspose(3, (4, 3), strides=(2, 1), padding="valid", use_bias=False)(x))


def resize():
    """Nearest and bilinear resizing, up and down, with half-pixel centers and with
    align_corners."""
    x = keras.Input((6, 8, 3))
    h = L.Conv2D(4, 1)(x)
    up = lambda f: L.Lambda(f)
    n = up(lambda t: tf.image.resize(t, (12, 16), method="nearest"))(h)
    a = up(lambda t: tf.compat.v1.image.resize_bilinear(t, (7, 9), align_corners=True))(h)
    a = up(lambda t: tf.image.resize(t, (12, 16), method="bilinear"))(L.Conv2D(4, 1)(a))
    b = up(lambda t: tf.image.resize(t, (11, 5), method="bilinear"))(h)
    b = up(lambda t: tf.compat.v1.image.resize_nearest_neighbor(t, (12, 16), align_corners=True))(L.Conv2D(4, 1)(b))
    return keras.Model(x, L.Add()([n, a, b]))


def fc_relu_hybrid():
    """A batch of three rows through a 128->32 Dense: FULLY_CONNECTED quantizes each row on
    the fly."""
    x = keras.Input((128,), batch_size=3)
    return keras.Model(x, L.Dense(32, activation="relu")(x))


def conv_same_relu6_stride2_hybrid():
    """Two images: CONV_2D quantizes each on its own."""
    x = keras.Input((12, 12, 16), batch_size=2)
    return keras.Model(x, L.Conv2D(32, 3, strides=2, padding="same", activation=keras.activations.relu6)(x))


def depthwise_mult2_hybrid():
    """126 output channels: LiteRT's epilogue takes four at a time, then the last two."""
    x = keras.Input((6, 6, 63))
    return keras.Model(x, L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu")(x))


def small_cnn_hybrid():
    """Hybrid layers mixed with float32 ones (those under 1024 weights stay float32)."""
    x = keras.Input((16, 16, 8))
    h = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    h = L.DepthwiseConv2D(3, strides=2, padding="same", activation="relu")(h)
    h = L.Conv2D(64, 1, activation="relu")(h)
    h = L.DepthwiseConv2D(3, strides=2, padding="valid", activation=keras.activations.relu6)(h)
    h = L.Flatten()(L.GlobalAveragePooling2D(keepdims=True)(h))
    h = L.Dense(32, activation="relu")(L.Dense(64, activation="relu")(h))
    return keras.Model(x, L.Softmax()(L.Dense(10)(h)))


def compare_select():
    """Comparisons, logic and selection over float32 (ONNX's Equal/Where/... as TFLite builtins):
    EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, LOGICAL_AND/OR/NOT, SELECT,
    SELECT_V2 and CAST (bool to float32)."""
    x = keras.Input((4, 6))
    def f(t):
        r = tf.round(t * 2.0)
        band = tf.logical_and(tf.greater(t, -0.5), tf.less_equal(t, 0.8))
        either = tf.logical_or(band, tf.equal(r, 1.0))
        other = tf.logical_not(tf.logical_or(tf.less(t, -1.0), tf.greater_equal(t, 1.2)))
        picked = tf.where(either, t, -2.0 * t)
        counted = tf.cast(tf.not_equal(r, 0.0), tf.float32) + tf.cast(other, tf.float32)
        kept = tf.compat.v1.where(other, t, r)  # SELECT (the first version)
        return tf.concat([picked, counted, kept], axis=-1)
    return keras.Model(x, L.Lambda(f)(x))


def index_ops():
    """Indexing and repetition: ARG_MAX and ARG_MIN (cast to float32), GATHER of constant
    indices, TILE, BROADCAST_TO, and LOCAL_RESPONSE_NORMALIZATION."""
    x = keras.Input((4, 6, 8), batch_size=1)
    def f(t):
        arg = tf.cast(tf.argmax(t, axis=-1), tf.float32) - tf.cast(tf.argmin(t, axis=3), tf.float32)
        gathered = tf.gather(t, [5, 0, 2, 2], axis=2)
        tiled = tf.tile(gathered[:, :, :2, :], [1, 1, 3, 1])
        spread = tf.broadcast_to(tf.reduce_max(t, axis=2, keepdims=True), [1, 4, 6, 8])
        lrn = tf.nn.local_response_normalization(t, depth_radius=2, bias=1.5, alpha=0.3, beta=0.6)
        flat = lambda v: tf.reshape(v, [1, -1])
        return tf.concat([flat(arg), flat(tiled), flat(spread), flat(lrn)], axis=-1)
    return keras.Model(x, L.Lambda(f, output_shape=(24 + 3 * 192,))(x))


def lstm_sequence():
    """LSTM(12) over 8 steps of 6 features, every step's output. Keras 3's LSTM converts to a
    WHILE loop; tf_keras' (Keras 2, `pip install --no-deps tf-keras`) converts to one
    UNIDIRECTIONAL_SEQUENCE_LSTM when the batch is static."""
    import tf_keras
    x = tf_keras.Input((8, 6), batch_size=1)
    return tf_keras.Model(x, tf_keras.layers.LSTM(12, return_sequences=True)(x))


def lstm_last():
    """LSTM(10) (the last step's output: a STRIDED_SLICE of the sequence), then Dense(4)."""
    import tf_keras
    x = tf_keras.Input((8, 6), batch_size=1)
    return tf_keras.Model(x, tf_keras.layers.Dense(4)(tf_keras.layers.LSTM(10)(x)))


def lstm_variant(features=5, cell=8, output=4, steps=6, batch=2, peephole=False, projection=False,
                 projection_bias=False, layer_norm=False, cifg=False, cell_clip=0.0, proj_clip=0.0,
                 time_major=False, intermediates=False):
    """An UNIDIRECTIONAL_SEQUENCE_LSTM variant that no converter path writes (Keras' LSTM is
    the standard form), as a FlatBuffer written here with TensorFlow's schema bindings: one
    float32 operator, its weights drawn from `rng`, the states variable tensors. Builds
    `(model bytes, input shape)`; LiteRT runs it for the golden. With `intermediates`, the
    operator also has the five intermediate tensors TensorFlow's calibrator records the
    gates' and hidden state's ranges in (see `quantize_raw`)."""
    from tensorflow.lite.python import schema_py_generated as fb
    def build(rng):
        n_out = output if projection else cell
        buffers, tensors = [fb.BufferT()], []
        def tensor(name, shape, data=None, variable=False):
            t = fb.TensorT()
            t.name, t.shape, t.type, t.buffer, t.isVariable = name, list(shape), fb.TensorType.FLOAT32, 0, variable
            if data is not None:
                b = fb.BufferT()
                b.data = np.frombuffer(np.asarray(data, np.float32).tobytes(), np.uint8)
                buffers.append(b)
                t.buffer = len(buffers) - 1
            tensors.append(t)
            return len(tensors) - 1
        w = lambda rows, cols: rng.normal(0, 0.5 / np.sqrt(cols), (rows, cols))
        shape = [steps, batch, features] if time_major else [batch, steps, features]
        inputs = [-1] * 24
        inputs[0] = tensor("input", shape)
        gates = ["input", "forget", "cell", "output"]
        for k, g in enumerate(gates):
            if cifg and g == "input":
                continue
            inputs[1 + k] = tensor(f"input_to_{g}", [cell, features], w(cell, features))
            inputs[5 + k] = tensor(f"recurrent_to_{g}", [cell, n_out], w(cell, n_out))
            inputs[12 + k] = tensor(f"{g}_bias", [cell], rng.normal(0, 0.1, cell) + (1.0 if g == "forget" else 0.0))
            if layer_norm:
                inputs[20 + k] = tensor(f"{g}_layer_norm", [cell], rng.normal(1.0, 0.2, cell))
        if peephole:
            for k, g in [(9, "input"), (10, "forget"), (11, "output")]:
                if not (cifg and g == "input"):
                    inputs[k] = tensor(f"cell_to_{g}", [cell], rng.normal(0, 0.3, cell))
        if projection:
            inputs[16] = tensor("projection", [n_out, cell], w(n_out, cell))
            if projection_bias:
                inputs[17] = tensor("projection_bias", [n_out], rng.normal(0, 0.1, n_out))
        inputs[18] = tensor("output_state", [batch, n_out], variable=True)
        inputs[19] = tensor("cell_state", [batch, cell], variable=True)
        out = tensor("output", shape[:2] + [n_out])
        o = fb.UnidirectionalSequenceLSTMOptionsT()
        o.fusedActivationFunction, o.cellClip, o.projClip, o.timeMajor = fb.ActivationFunctionType.TANH, cell_clip, proj_clip, time_major
        op = fb.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = 0, inputs, [out]
        if intermediates:
            op.intermediates = [tensor(f"intermediate_{i}", []) for i in range(5)]
        op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.UnidirectionalSequenceLSTMOptions, o
        code = fb.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
        code.version = 1
        sg = fb.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs, sg.operators, sg.name = tensors, [inputs[0]], [out], [op], "main"
        m = fb.ModelT()
        m.version, m.operatorCodes, m.subgraphs, m.buffers, m.description = 3, [code], [sg], buffers, "hostrt test LSTM"
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output()), shape
    return build


# LSTM variants written as FlatBuffers (float32: TFLite Micro, the int8 reference, runs only
# the standard LSTM). Clips small enough to bind.
RAW = {
    "lstm_peephole": lstm_variant(peephole=True, cell_clip=0.3),
    "lstm_projection": lstm_variant(projection=True, projection_bias=True, proj_clip=0.1, time_major=True),
    "lstm_layer_norm": lstm_variant(layer_norm=True),
    "lstm_cifg": lstm_variant(cifg=True, peephole=True, layer_norm=True, projection=True),
}


# The same variants in int8: LiteRT's fully integer LSTM runs them (TFLite Micro runs none);
# its reference kernels give the golden. Two combinations LiteRT gets wrong are left out (the
# importer refuses them): a peephole LSTM projected to fewer outputs than cells (LiteRT's
# integer kernel applies the peephole weights to as many cells as outputs) and CIFG with
# layer norm (LiteRT outputs the zero point throughout).
RAW_I8 = {
    "lstm_peephole": lstm_variant(peephole=True, cell_clip=0.3, intermediates=True),
    "lstm_projection": lstm_variant(projection=True, projection_bias=True, proj_clip=0.1, time_major=True,
                                    intermediates=True),
    "lstm_layer_norm": lstm_variant(layer_norm=True, intermediates=True),
    "lstm_cifg": lstm_variant(cifg=True, peephole=True, projection=True, output=8, cell_clip=0.5,
                              intermediates=True),
    "lstm_peephole_layer_norm_projection": lstm_variant(peephole=True, layer_norm=True, projection=True,
                                                        projection_bias=True, output=8, intermediates=True),
}


def quantize_raw(data, shape, rng):
    """Full-integer int8 quantization of a float FlatBuffer with TensorFlow's calibrator (the
    converter's own path for models it did not write): 64 random inputs, int8 in and out."""
    from tensorflow.lite.python.optimize import calibrator
    xs = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(64)]
    return calibrator.Calibrator(data).calibrate_and_quantize(lambda: ([x] for x in xs), tf.int8, tf.int8, False,
                                                             tf.int8)


# Dynamic-range ("hybrid") models: float32 input and output, int8 weights (the converter
# quantizes weights of 1024 elements or more, per channel) quantized on the fly.
HYBRID = {
    "fc_relu": fc_relu_hybrid,
    "conv_same_relu6_stride2": conv_same_relu6_stride2_hybrid,
    "depthwise_mult2": depthwise_mult2_hybrid,
    "small_cnn": small_cnn_hybrid,
}


# (builder, int8, float32)
MODELS = {
    "conv_same_relu": (conv_same_relu, True, True),
    "conv_valid_stride2_relu6": (conv_valid_stride2_relu6, True, True),
    # Dilated convolutions convert to SPACE_TO_BATCH_ND + CONV_2D + BATCH_TO_SPACE_ND, which
    # the importer folds back into one dilated convolution.
    "conv_dilated_nobias": (conv_dilated_nobias, True, True),
    "depthwise_dilated": (depthwise_dilated, True, True),
    "depthwise_same_relu6": (depthwise_same_relu6, True, True),
    "depthwise_mult2_stride2": (depthwise_mult2_stride2, True, True),
    "fc_relu": (fc_relu, True, True),
    "pools": (pools, True, True),
    "add_mul": (add_mul, True, True),
    "softmax": (softmax, True, True),
    "ds_cnn": (ds_cnn, True, True),
    "resnet8": (resnet8, True, False),
    "autoencoder": (autoencoder, True, False),
    "mobilenet_v1_vww": (mobilenet_v1((96, 96, 3)), True, False),
    "mobilenet_v1_person": (mobilenet_v1((96, 96, 1)), True, False),
    "transpose_pad": (transpose_pad, True, True),
    "slice_concat": (slice_concat, True, True),
    "split_pack": (split_pack, True, True),
    "padv2": (padv2, True, True),
    "mirror_pad": (mirror_pad, True, True),
    "space_batch_2d": (space_batch_2d, True, True),
    "space_batch_1d": (space_batch_1d, True, True),
    "sub_broadcast": (sub_broadcast, True, True),
    "maximum_minimum": (maximum_minimum, True, True),
    "squared_difference": (squared_difference, True, True),
    "prelu": (prelu, True, True),
    "mean_sum": (mean_sum, True, True),
    "batch_matmul": (batch_matmul, True, True),
    "transpose_conv_same": (transpose_conv_same, True, True),
    "transpose_conv_valid": (transpose_conv_valid, True, True),
    "resize": (resize, True, True),
    "compare_select": (compare_select, False, True),
    "index_ops": (index_ops, False, True),
    "lstm_sequence": (lstm_sequence, True, True),
    "lstm_last": (lstm_last, True, True),
    # TFLite Micro has no RELU_N1_TO_1: float32 only.
    **{name: (activation(layer), name != "relu_n1_to_1", True) for name, layer in ACTIVATIONS.items()},
}


def randomize(model, rng, gain=0.5):
    # Keras' initial weights, scaled so activations neither vanish nor saturate (deep
    # networks use He's gain, sqrt(2)).
    for layer in model.layers:
        ws = layer.get_weights()
        if ws:
            layer.set_weights([rng.normal(0, gain / np.sqrt(max(1, w.size // w.shape[-1])), w.shape).astype(np.float32) if i == 0 else rng.normal(0, 0.1, w.shape).astype(np.float32) for i, w in enumerate(ws)])


def convert(model, int8, rng, hybrid=False):
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if hybrid:
        # Dynamic-range quantization: int8 weights, no representative dataset.
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    elif int8:
        shape = [1] + list(model.input_shape[1:])
        data = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(64)]
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([d] for d in data)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv.convert()


@contextlib.contextmanager
def captured_stderr():
    """Captures what C++ writes to fd 2 (TFLite Micro's allocation report)."""
    with tempfile.TemporaryFile(mode="w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        box = []
        try:
            yield box
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            box.append(f.read())


def tflm_run(data, x):
    from tflite_micro.python.tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data)
    it.set_input(x, 0)
    it.invoke()
    with captured_stderr() as err:
        it.print_allocations()
    arena = {}
    for line in err[0].splitlines():
        for key in ("total", "head", "tail"):
            if f"Arena allocation {key}" in line:
                arena[key] = int(line.split()[-2])
    return it.get_output(0), arena


def tflm_intermediates(data, x):
    """CRC-32 of every operator output's bytes in TFLite Micro (tensor index -> crc), for
    the layer-by-layer comparison of the int8 models."""
    from ai_edge_litert.interpreter import Interpreter
    from tflite_micro.python.tflite_micro import runtime
    outs = sorted({t for op in Interpreter(model_content=data)._get_ops_details() for t in op["outputs"]})
    it = runtime.Interpreter.from_bytes(data, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    it.set_input(x, 0)
    it.invoke()
    return {str(t): zlib.crc32(np.ascontiguousarray(it.GetTensor(t, 0)["tensor_data"]).tobytes()) for t in outs}


def litert_run(data, x):
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_content=data)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def litert_builtin_run(data, x):
    """LiteRT's builtin kernels, without XNNPACK (which runs hybrid layers its own way): the
    golden of the hybrid models. Checks that their layers really are hybrid."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    dtype = {t["index"]: t["dtype"] for t in it.get_tensor_details()}
    hybrid = [op["op_name"] for op in it._get_ops_details()
              if op["op_name"] in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")
              and dtype[op["inputs"][0]] == np.float32 and dtype[op["inputs"][1]] == np.int8]
    assert hybrid, "no hybrid layer"
    assert "DEQUANTIZE" not in {op["op_name"] for op in it._get_ops_details()}, "weights dequantized"
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]), hybrid


# TFLite Micro's SPACE_TO_BATCH_ND pads with an uninitialized parameter (its OpData is a
# persistent buffer nobody writes; in practice 0, not the zero point), so a dilated int8
# convolution, or any int8 SPACE_TO_BATCH_ND that pads, differs from the model's meaning
# there. The golden of these int8 models is LiteRT's reference kernels (BUILTIN_REF: the
# same int8 arithmetic as TFLM, the padding right); models.json records how many outputs
# TFLM gets otherwise.
LITERT_REF_INT8 = {"conv_dilated_nobias", "depthwise_dilated", "space_batch_2d", "space_batch_1d"}


def litert_ref_run(data, x):
    """LiteRT's reference kernels: the output and the CRC-32 of every operator output."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    outs = sorted({t for op in it._get_ops_details() for t in op["outputs"]})
    crcs = {str(t): zlib.crc32(np.ascontiguousarray(it.get_tensor(t)).tobytes()) for t in outs}
    return it.get_tensor(it.get_output_details()[0]["index"]), crcs


# Values kept per float32 layer: the largest magnitude and this many elements at most.
SAMPLES = 64


def litert_layer_samples(data, x):
    """Every float32 operator output in LiteRT's builtin kernels (XNNPACK keeps none of its
    intermediates) as tensor index -> {max_abs, samples}: of the n flattened values, the
    k = min(n, SAMPLES) at positions (i * n) // k, for the layer-by-layer comparison of the
    float32 models. Each as the shortest decimal that reads back as the same float32."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    f32 = lambda v: float(str(np.float32(v)))
    layers = {}
    for t in sorted({t for op in it._get_ops_details() for t in op["outputs"]}):
        v = it.get_tensor(t)
        if v.dtype != np.float32:
            continue
        v = v.reshape(-1)
        n = v.size
        k = min(n, SAMPLES)
        assert np.all(np.isfinite(v)), f"tensor {t} is not finite"
        layers[str(t)] = {"max_abs": f32(np.max(np.abs(v))) if n else 0.0,
                          "samples": [f32(v[(i * n) // k]) for i in range(k)]}
    return layers


def float_layers(only):
    """--float-layers: adds or replaces `tensor_samples` of every committed float32 model
    (golden ai-edge-litert) from its NAME.tflite and NAME.input.npy; nothing else changes."""
    path = os.path.join(OUT, "models.json")
    meta = json.load(open(path))
    for full in sorted(meta):
        if not full.endswith("_f32") or meta[full].get("golden") != "ai-edge-litert" or (only and full not in only):
            continue
        data = open(os.path.join(OUT, full + ".tflite"), "rb").read()
        x = np.load(os.path.join(OUT, full + ".input.npy"))
        meta[full]["tensor_samples"] = litert_layer_samples(data, x)
        print(full, len(meta[full]["tensor_samples"]), "float32 layers", flush=True)
    json.dump(meta, open(path, "w"), indent=1, sort_keys=True)


def main():
    if sys.argv[1:2] == ["--float-layers"]:
        return float_layers(set(sys.argv[2:]))
    only = set(sys.argv[1:])
    meta = {}
    jobs = [(name, build, kind) for name, (build, do_int8, do_f32) in MODELS.items()
            for kind, wanted in (("i8", do_int8), ("f32", do_f32)) if wanted or EXTRA]
    jobs += [(name, build, "hybrid") for name, build in HYBRID.items()]
    jobs += [(name, build, "raw") for name, build in RAW.items()]
    jobs += [(name, build, "raw_i8") for name, build in RAW_I8.items()]
    for name, build, suffix in jobs:
        raw_i8 = suffix == "raw_i8"
        int8, hybrid, raw = suffix == "i8" or raw_i8, suffix == "hybrid", suffix in ("raw", "raw_i8")
        full = f"{name}_{'i8' if int8 else 'f32' if raw else suffix}"
        if only and full not in only:
            continue
        rng = np.random.default_rng(SEED)
        tf.keras.utils.set_random_seed(SEED)
        if raw:
            data, shape = build(rng)
            if raw_i8:
                data = quantize_raw(data, shape, rng)
        else:
            model = build()
            randomize(model, rng, np.sqrt(2) if name.startswith("mobilenet") else 0.5)
            data = convert(model, int8, rng, hybrid)
            shape = [model.input_shape[0] or 1] + list(model.input_shape[1:])
        x = rng.normal(0, 1, shape).astype(np.float32)
        if hybrid:
            y, ops = litert_builtin_run(data, x)
            meta[full] = {"golden": "ai-edge-litert builtin (no XNNPACK)", "hybrid_ops": ops}
        elif int8:
            from ai_edge_litert.interpreter import Interpreter
            d = Interpreter(model_content=data).get_input_details()[0]
            s, z = d["quantization"]
            x = np.clip(np.round(x / s) + z, -128, 127).astype(np.int8)
            if raw_i8:
                y, crcs = litert_ref_run(data, x)
                assert np.array_equal(y, litert_run(data, x)), "LiteRT's optimized kernels differ"
                meta[full] = {"golden": "ai-edge-litert reference kernels (BUILTIN_REF); TFLite Micro runs no "
                              "int8 LSTM variant", "tensor_crc32": crcs}
            else:
                y, arena = tflm_run(data, x)
                sat = float(np.mean((y == 127) | (y == -128)))
                meta[full] = {"golden": "tflite-micro", "tflm_arena": arena, "saturated": sat,
                              "tensor_crc32": tflm_intermediates(data, x)}
                if name in LITERT_REF_INT8:
                    tflm_y = y
                    y, crcs = litert_ref_run(data, x)
                    meta[full].update({"golden": "ai-edge-litert reference kernels (BUILTIN_REF)", "tensor_crc32": crcs,
                                       "tflm_outputs_differing": int(np.sum(tflm_y != y))})
        else:
            y = litert_run(data, x)
            meta[full] = {"golden": "ai-edge-litert", "tensor_samples": litert_layer_samples(data, x)}
        os.makedirs(OUT, exist_ok=True)
        open(os.path.join(OUT, full + ".tflite"), "wb").write(data)
        np.save(os.path.join(OUT, full + ".input.npy"), x)
        np.save(os.path.join(OUT, full + ".output.npy"), y)
        print(full, len(data), "bytes", {k: v for k, v in meta[full].items() if k != "tensor_samples"}, flush=True)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "models.json")
    old = json.load(open(path)) if only and os.path.exists(path) else {}
    old.update(meta)
    json.dump(old, open(path, "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
