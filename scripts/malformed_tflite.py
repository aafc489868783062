#!/usr/bin/env python3
"""The malformed-model table of docs/models.md: each case edits a valid test model with
TensorFlow's own schema classes (or cuts its bytes), writes it to a temporary directory, runs
`hostrt import` on it and prints one Markdown row: the case, the exit status and the first
line of the error. A case that imports cleanly or crashes is a failure of the importer.

    bash scripts/make_tflite_models.sh   # once, for the venv
    cargo build -p hostrt && /opt/tflenv/bin/python scripts/malformed_tflite.py
"""
import copy, os, subprocess, sys, tempfile

import flatbuffers
from tensorflow.lite.python import schema_py_generated as schema

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HOSTRT = os.environ.get("HOSTRT", os.path.join(ROOT, "target", "debug", "hostrt"))
BASE = os.path.join(ROOT, "import", "tests", "models", "conv_same_relu_i8.tflite")


def load():
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(open(BASE, "rb").read(), 0))
    for op in m.subgraphs[0].operators:  # numpy views of the file: make them editable
        op.inputs, op.outputs = list(op.inputs), list(op.outputs)
    for t in m.subgraphs[0].tensors:
        t.shape = list(t.shape)
    return m


def save(m):
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def edit(f):
    def run():
        m = load()
        f(m)
        return save(m)
    return run


def conv(m):
    g = m.subgraphs[0]
    return next(op for op in g.operators if m.operatorCodes[op.opcodeIndex].builtinCode == 3)


def weights(m):
    return m.subgraphs[0].tensors[conv(m).inputs[1]]


def set_attr(path, value):
    def f(m):
        obj = m
        for p in path[:-1]:
            obj = p(obj) if callable(p) else getattr(obj, p)
        setattr(obj, path[-1], value)
    return f


raw = open(BASE, "rb").read()
CASES = [
    ("empty file", lambda: b""),
    ("random bytes", lambda: bytes(range(256)) * 4),
    ("cut in half", lambda: raw[: len(raw) // 2]),
    ("wrong file identifier", lambda: raw[:4] + b"XXXX" + raw[8:]),
    ("schema version 2", edit(set_attr(["version"], 2))),
    ("no subgraph", edit(set_attr(["subgraphs"], []))),
    ("operator input tensor index out of range", edit(lambda m: conv(m).inputs.__setitem__(0, 999))),
    ("operator input tensor index -2", edit(lambda m: conv(m).inputs.__setitem__(0, -2))),
    ("required input omitted (-1)", edit(lambda m: conv(m).inputs.__setitem__(1, -1))),
    ("operator code index out of range", edit(lambda m: setattr(conv(m), "opcodeIndex", 7))),
    ("tensor buffer index out of range", edit(lambda m: setattr(weights(m), "buffer", 999))),
    ("weights shape larger than their buffer", edit(lambda m: setattr(weights(m), "shape", [8, 3, 3, 30]))),
    ("negative dimension", edit(lambda m: setattr(weights(m), "shape", [8, -3, 3, 3]))),
    ("more scales than channels", edit(lambda m: setattr(weights(m).quantization, "scale", list(weights(m).quantization.scale) * 2))),
    ("quantized dimension out of range", edit(lambda m: setattr(weights(m).quantization, "quantizedDimension", 9))),
    ("graph input index out of range", edit(lambda m: setattr(m.subgraphs[0], "inputs", [77]))),
    ("unsupported operator (EXP)", edit(lambda m: setattr(m.operatorCodes[conv(m).opcodeIndex], "builtinCode", 47))),
    ("fused TANH activation", edit(lambda m: setattr(conv(m).builtinOptions, "fusedActivationFunction", 4))),
    ("options of another operator", edit(lambda m: (setattr(conv(m), "builtinOptionsType", 8), setattr(conv(m), "builtinOptions", schema.FullyConnectedOptionsT())))),
    ("stride 0", edit(lambda m: setattr(conv(m).builtinOptions, "strideH", 0))),
    ("filter channels differ from the input's", edit(lambda m: setattr(weights(m), "shape", [8, 3, 1, 9]))),
    ("int8 filter with a nonzero zero point", edit(lambda m: setattr(weights(m).quantization, "zeroPoint", [5] * len(weights(m).quantization.zeroPoint)))),
]


def main():
    failures = 0
    print("| case | exit | error |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for name, make in CASES:
            path = os.path.join(d, "model.tflite")
            open(path, "wb").write(make())
            r = subprocess.run([HOSTRT, "import", path, "-o", os.path.join(d, "out.bef")], capture_output=True, text=True)
            line = (r.stderr.strip().splitlines() or [""])[0].replace(path, "model.tflite")
            bad = r.returncode != 1 or "panicked" in r.stderr
            failures += bad
            print(f"| {name} | {r.returncode}{' FAIL' if bad else ''} | `{line}` |")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
