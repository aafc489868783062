#!/usr/bin/env python3
"""Writes one model's C++ source for the TFLM baseline image (scripts/tflm_baseline.sh).

    gen_model.py NAME MODEL.tflite INPUT.npy OUTPUT.npy OUT.cc

The source holds the .tflite bytes (in .rodata, 16-byte aligned), the int8 test input and
the expected int8 output (in section .testdata, so that they are not counted as runtime
flash), and `RegisterOps`, which registers exactly the builtin operators the model uses
with TFLM's int8-only kernel variants where TFLM has them. Only the standard library is
used: the .npy files and the flatbuffer are read by hand.
"""
import ast
import struct
import sys

# Builtin operator code -> (name, MicroMutableOpResolver method, registration). The int8-only
# registrations (Register_*_INT8) keep the kernels of other types out of the image.
OPS = {
    0: ("ADD", "AddAdd", "tflite::Register_ADD_INT8()"),
    1: ("AVERAGE_POOL_2D", "AddAveragePool2D", "tflite::Register_AVERAGE_POOL_2D_INT8()"),
    2: ("CONCATENATION", "AddConcatenation", "tflite::Register_CONCATENATION()"),
    3: ("CONV_2D", "AddConv2D", "tflite::Register_CONV_2D_INT8()"),
    4: ("DEPTHWISE_CONV_2D", "AddDepthwiseConv2D", "tflite::Register_DEPTHWISE_CONV_2D_INT8()"),
    6: ("DEQUANTIZE", "AddDequantize", "tflite::Register_DEQUANTIZE()"),
    9: ("FULLY_CONNECTED", "AddFullyConnected", "tflite::Register_FULLY_CONNECTED_INT8()"),
    14: ("LOGISTIC", "AddLogistic", "tflite::Register_LOGISTIC()"),
    17: ("MAX_POOL_2D", "AddMaxPool2D", "tflite::Register_MAX_POOL_2D_INT8()"),
    18: ("MUL", "AddMul", "tflite::Register_MUL_INT8()"),
    19: ("RELU", "AddRelu", "tflite::Register_RELU()"),
    21: ("RELU6", "AddRelu6", "tflite::Register_RELU6()"),
    22: ("RESHAPE", "AddReshape", "tflite::Register_RESHAPE()"),
    25: ("SOFTMAX", "AddSoftmax", "tflite::Register_SOFTMAX_INT8()"),
    28: ("TANH", "AddTanh", "tflite::Register_TANH()"),
    34: ("PAD", "AddPad", "tflite::Register_PAD_INT8()"),
    39: ("TRANSPOSE", "AddTranspose", "tflite::Register_TRANSPOSE_INT8()"),
    40: ("MEAN", "AddMean", "tflite::Register_MEAN()"),
    41: ("SUB", "AddSub", "tflite::Register_SUB()"),
    43: ("SQUEEZE", "AddSqueeze", "tflite::Register_SQUEEZE()"),
    45: ("STRIDED_SLICE", "AddStridedSlice", "tflite::Register_STRIDED_SLICE()"),
    55: ("MAXIMUM", "AddMaximum", "tflite::Register_MAXIMUM_INT8()"),
    57: ("MINIMUM", "AddMinimum", "tflite::Register_MINIMUM_INT8()"),
    77: ("SHAPE", "AddShape", "tflite::Register_SHAPE()"),
    83: ("PACK", "AddPack", "tflite::Register_PACK()"),
    114: ("QUANTIZE", "AddQuantize", "tflite::Register_QUANTIZE()"),
    117: ("HARD_SWISH", "AddHardSwish", "tflite::Register_HARD_SWISH()"),
}
MAX_OPS = 16  # kMaxOps in model_glue.h
TENSOR_INT8 = 9


def read_npy(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    if data[6] == 1:
        (hlen,) = struct.unpack_from("<H", data, 8)
        start = 10
    else:
        (hlen,) = struct.unpack_from("<I", data, 8)
        start = 12
    header = ast.literal_eval(data[start : start + hlen].decode("latin1"))
    if header["descr"] not in ("|i1", "<i1", "i1") or header["fortran_order"]:
        sys.exit(f"{path}: expected C-ordered int8, got {header}")
    payload = data[start + hlen :]
    count = 1
    for d in header["shape"]:
        count *= d
    if len(payload) != count:
        sys.exit(f"{path}: {len(payload)} bytes for shape {header['shape']}")
    return header["shape"], payload


class Table:
    """A flatbuffer table at `pos` in `buf`."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        (soff,) = struct.unpack_from("<i", buf, pos)
        self.vt = pos - soff
        (self.vlen,) = struct.unpack_from("<H", buf, self.vt)

    def _field(self, i):
        o = 4 + 2 * i
        if o >= self.vlen:
            return None
        (off,) = struct.unpack_from("<H", self.buf, self.vt + o)
        return self.pos + off if off else None

    def scalar(self, i, fmt, default=0):
        p = self._field(i)
        return default if p is None else struct.unpack_from("<" + fmt, self.buf, p)[0]

    def _vector(self, i):
        p = self._field(i)
        if p is None:
            return None, 0
        p += struct.unpack_from("<I", self.buf, p)[0]
        (n,) = struct.unpack_from("<I", self.buf, p)
        return p + 4, n

    def tables(self, i):
        p, n = self._vector(i)
        out = []
        for k in range(n):
            q = p + 4 * k
            out.append(Table(self.buf, q + struct.unpack_from("<I", self.buf, q)[0]))
        return out

    def ints(self, i, fmt="i"):
        p, n = self._vector(i)
        size = struct.calcsize(fmt)
        return [struct.unpack_from("<" + fmt, self.buf, p + size * k)[0] for k in range(n)]


def c_bytes(data, signed=False):
    rows = []
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        cells = (str(b - 256 if b > 127 else b) for b in chunk) if signed else (f"0x{b:02x}" for b in chunk)
        rows.append("  " + ", ".join(cells) + ",")
    return "\n".join(rows)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    name, model_path, in_path, out_path, cc_path = sys.argv[1:]
    model = open(model_path, "rb").read()
    in_shape, in_data = read_npy(in_path)
    out_shape, out_data = read_npy(out_path)

    root = Table(model, struct.unpack_from("<I", model, 0)[0])
    # Model: 1 operator_codes, 2 subgraphs. OperatorCode: 0 deprecated_builtin_code (int8),
    # 3 builtin_code (int32). SubGraph: 0 tensors, 1 inputs, 2 outputs, 3 operators.
    # Operator: 0 opcode_index. Tensor: 0 shape, 1 type.
    codes = [max(c.scalar(0, "b"), c.scalar(3, "i")) for c in root.tables(1)]
    subgraphs = root.tables(2)
    if len(subgraphs) != 1:
        sys.exit(f"{model_path}: {len(subgraphs)} subgraphs, expected 1")
    sg = subgraphs[0]
    tensors = sg.tables(0)
    for role, idx, shape, data in (("input", sg.ints(1), in_shape, in_data), ("output", sg.ints(2), out_shape, out_data)):
        if len(idx) != 1:
            sys.exit(f"{model_path}: {len(idx)} {role}s, expected 1")
        t = tensors[idx[0]]
        tshape = t.ints(0)
        count = 1
        for d in tshape:
            count *= d
        if t.scalar(1, "b") != TENSOR_INT8 or count != len(data):
            sys.exit(f"{model_path}: {role} tensor type {t.scalar(1, 'b')} shape {tshape}, .npy {shape}")
    used = []
    for op in sg.tables(3):
        code = codes[op.scalar(0, "I")]
        if code not in OPS:
            sys.exit(f"{model_path}: builtin operator {code} not in gen_model.py's table")
        if code not in used:
            used.append(code)
    if len(used) > MAX_OPS:
        sys.exit(f"{model_path}: {len(used)} operator types, more than {MAX_OPS}")

    regs = "\n".join(
        f'  r.{OPS[c][1]}(Wrap<{k}>({OPS[c][2]}, "{OPS[c][0]}", profiled));' for k, c in enumerate(used)
    )
    src = f"""// Generated by scripts/tflm-baseline/gen_model.py from {name}.tflite and its .npy files.
#include "model_glue.h"

namespace {{
alignas(16) const unsigned char kModel[] = {{
{c_bytes(model)}
}};
__attribute__((section(".testdata"), aligned(16))) const int8_t kInput[] = {{
{c_bytes(in_data, signed=True)}
}};
__attribute__((section(".testdata"), aligned(16))) const int8_t kExpected[] = {{
{c_bytes(out_data, signed=True)}
}};

void RegisterOps(Resolver& r, bool profiled) {{
{regs}
}}
}}  // namespace

const ModelData g_model_data = {{
    "{name}", kModel, sizeof(kModel), kInput, sizeof(kInput), kExpected, sizeof(kExpected),
    RegisterOps, {len(used)},
}};
"""
    open(cc_path, "w").write(src)
    names = ", ".join(OPS[c][0] for c in used)
    print(f"gen_model: {name}: {len(model)} model bytes, {len(sg.tables(3))} operators ({names}), "
          f"input {list(in_shape)}, output {list(out_shape)}")


if __name__ == "__main__":
    main()
