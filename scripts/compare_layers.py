#!/usr/bin/env python3
"""Layer by layer: runs a .tflite model in hostrt (`hostrt infer --dump-tensors`) and in a
reference runtime on the same input, compares every operator's output, and names the first
layer whose output differs and by how much (docs/profiling.md, "Layer by layer").

    python3 scripts/compare_layers.py MODEL.tflite --input x.npy [--reference tflm|litert]
        [--hostrt target/release/hostrt] [--tolerance T]

The reference: `tflm` (TensorFlow Lite Micro's Python interpreter, the default for int8
models, whose results hostrt matches bit for bit) or `litert` (LiteRT's builtin kernels, the
default for float models). int8 outputs must be equal; float ones within `--tolerance` of
the reference's magnitude (default 1e-5). Exit status 0 when every layer agrees, 1 when one
differs, 2 when something could not run. Needs numpy and the reference's package
(`tflite-micro`, `ai-edge-litert`: the venv of scripts/make_tflite_models.sh).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def reference_outputs(model, x, which):
    """{tensor index: array} of every operator output in the reference runtime, and the
    operators in execution order as (index, name, [output tensor indices])."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    plain = Interpreter(model_content=model)
    ops = [(op["index"], op["op_name"], list(op["outputs"])) for op in plain._get_ops_details()]
    outs = sorted({t for _, _, ts in ops for t in ts})
    if which == "tflm":
        from tflite_micro.python.tflite_micro import runtime
        it = runtime.Interpreter.from_bytes(model, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
        it.set_input(x, 0)
        it.invoke()
        return {t: np.array(it.GetTensor(t, 0)["tensor_data"]) for t in outs}, ops
    it = Interpreter(model_content=model, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {t: it.get_tensor(t) for t in outs}, ops


def hostrt_outputs(hostrt, model_path, input_path, outputs):
    """{tensor index: array} of every operator output hostrt wrote with --dump-tensors, and
    the model's outputs (`outputs`: their tensor indices, in order)."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        layers, results = os.path.join(d, "layers"), os.path.join(d, "out")
        command = [hostrt, "infer", model_path, "--input", input_path, "--dump-tensors", layers, "--output-dir", results]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"hostrt infer failed ({run.returncode}):\n{run.stderr}{run.stdout}")
        for f in os.listdir(layers):
            m = re.match(r"(\d+)_.*\.npy$", f)
            if m:
                out[int(m[1])] = np.load(os.path.join(layers, f))
        for i, t in enumerate(outputs):
            path = os.path.join(results, f"out{i}.npy")
            if os.path.exists(path):
                out[t] = np.load(path)
    return out


def difference(a, b, tolerance):
    """(differs, largest difference, values that differ) of hostrt's `a` and the reference's `b`."""
    if a.shape != b.shape and a.size == b.size:
        a = a.reshape(b.shape)
    if a.shape != b.shape:
        return True, float("inf"), a.size
    if a.dtype.kind in "iub":
        d = np.abs(a.astype(np.int64) - b.astype(np.int64))
        return bool(d.any()), float(d.max(initial=0)), int((d != 0).sum())
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    bound = tolerance * max(float(np.abs(b).max(initial=0)), 1e-30)
    return bool((d > bound).any()), float(d.max(initial=0)), int((d > bound).sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--input", required=True)
    p.add_argument("--reference", choices=["tflm", "litert"])
    p.add_argument("--hostrt", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "hostrt"))
    p.add_argument("--tolerance", type=float, default=1e-5)
    args = p.parse_args()
    model = open(args.model, "rb").read()
    x = np.load(args.input)
    which = args.reference or ("tflm" if x.dtype == np.int8 else "litert")
    try:
        ref, ops = reference_outputs(model, x, which)
    except ImportError as e:
        print(f"the {which} reference is not installed: {e}", file=sys.stderr)
        return 2
    from ai_edge_litert.interpreter import Interpreter
    outputs = [d["index"] for d in Interpreter(model_content=model).get_output_details()]
    mine = hostrt_outputs(args.hostrt, args.model, args.input, outputs)
    first = None
    print(f"{'op':>4}  {'operator':<24} {'tensor':>6}  {'largest difference':>18}  {'differing':>10}  name")
    for index, name, tensors in ops:
        for t in tensors:
            if t not in mine or t not in ref:
                # Shape arithmetic (SHAPE, STRIDED_SLICE of a shape, PACK) is folded at import.
                print(f"{index:>4}  {name:<24} {t:>6}  {'(folded at import)':>18}")
                continue
            differs, largest, count = difference(mine[t], ref[t], args.tolerance)
            mark = "  <- first difference" if differs and first is None else ""
            print(f"{index:>4}  {name:<24} {t:>6}  {largest:>18.6g}  {count:>10}  {tensor_name(args.model, t)[:60]}{mark}")
            if differs and first is None:
                first = (index, name, t, largest, count, mine[t].size)
    if first is None:
        print(f"every layer agrees with {which}")
        return 0
    index, name, t, largest, count, size = first
    print(f"first differing layer: op#{index} {name} (tensor {t}, {tensor_name(args.model, t)}): "
          f"{count} of {size} values differ, by up to {largest:g}")
    return 1


_names = {}


def tensor_name(model_path, t):
    """Tensor `t`'s name in the model."""
    if model_path not in _names:
        from ai_edge_litert.interpreter import Interpreter
        it = Interpreter(model_path=model_path)
        _names[model_path] = {d["index"]: d["name"] for d in it.get_tensor_details()}
    return _names[model_path].get(t, "?")


if __name__ == "__main__":
    sys.exit(main())
