#!/usr/bin/env python3
"""Layer by layer: runs a model in hostrt with every operator's output dumped, on this machine
(`hostrt infer --dump-tensors`) or on a Cortex-M under QEMU (`cargo xtask mcu
--dump-tensors`), runs it in a reference on the same inputs, compares each operator's output
in execution order, and names the first layer whose output differs and by how much
(docs/profiling.md, "Layer by layer").

    python3 scripts/compare_layers.py MODEL.(tflite|onnx) --input x.npy [--input ...]
        [--on host|mcu] [--reference tflm|litert|onnxruntime|host]
        [--hostrt target/release/hostrt] [--tolerance T]

`--on mcu` runs hostrt in the firmware image of `cargo xtask mcu`; its default reference is
then `host`, hostrt on this machine: a device/desktop mismatch in one command, with nothing
but numpy installed. The other references: `tflm` (TensorFlow Lite Micro's Python
interpreter, the default for int8 .tflite models, whose results hostrt matches bit for bit),
`litert` (LiteRT's builtin kernels, the default for float ones), `onnxruntime` (for .onnx
models, matched by tensor name; hostrt's channels-last tensors are compared transposed).
Integer outputs must be equal (onnxruntime's within 1 step: it rounds requantized values
its own way, where hostrt follows TensorFlow Lite's integer arithmetic; `--int-tolerance`),
float ones within `--tolerance` of the reference's magnitude (default 1e-5). A uint8 ONNX
value, which hostrt holds as int8 less 128, is compared with 128 added back. Exit status 0 when every layer agrees, 1 when one differs, 2 when something
could not run. The references need their packages (`tflite-micro`, `ai-edge-litert`: the
venv of scripts/make_tflite_models.sh; `onnxruntime`).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def read_layers(d):
    """The rows of hostrt's `layers.txt` in `d` (execution order) as dicts, and each file's array."""
    with open(os.path.join(d, "layers.txt")) as f:
        header, *lines = f.read().splitlines()
    keys = header.split("\t")
    rows = [dict(zip(keys, line.split("\t", len(keys) - 1))) for line in lines]
    for r in rows:
        r["tensor"] = int(r["tensor"])
        r["array"] = np.load(os.path.join(d, r["file"]))
        if r["layout"] == "nhwc":  # an ONNX model's NCHW value, which hostrt holds as NHWC
            r["array"] = np.moveaxis(r["array"], -1, 1)
    return rows


def hostrt_layers(on, hostrt, model, inputs):
    """hostrt's every operator output, run on this machine (`host`) or under QEMU (`mcu`)."""
    with tempfile.TemporaryDirectory() as d:
        layers, results = os.path.join(d, "layers"), os.path.join(d, "out")
        flags = [a for x in inputs for a in ("--input", os.path.abspath(x))]
        flags += ["--dump-tensors", layers, "--output-dir", results]
        if on == "host":
            command, cwd = [hostrt, "infer", os.path.abspath(model)] + flags, None
        else:
            command, cwd = ["cargo", "xtask", "mcu", os.path.abspath(model)] + flags, ROOT
        run = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
        if run.returncode != 0:
            sys.exit(f"{' '.join(command[:3])} failed ({run.returncode}):\n{run.stderr}{run.stdout}")
        return read_layers(layers)


def tflite_reference(model_path, xs, which, tensors):
    """{tensor index: array} of `tensors` of the .tflite model in TFLM or LiteRT."""
    model = open(model_path, "rb").read()
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    if which == "tflm":
        from tflite_micro.python.tflite_micro import runtime
        it = runtime.Interpreter.from_bytes(model, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
        for i, x in enumerate(xs):
            it.set_input(x, i)
        it.invoke()
        return {t: np.array(it.GetTensor(t, 0)["tensor_data"]) for t in tensors}
    it = Interpreter(model_content=model, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return {t: it.get_tensor(t) for t in tensors}


def onnx_reference(model_path, xs):
    """{value name: array} of every node output of the .onnx model in onnxruntime."""
    import onnx
    import onnxruntime
    m = onnx.load(model_path)
    known = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for name in node.output:
            if name and name not in known:
                m.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    s = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(s.get_inputs(), xs)}
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def difference(a, b, tolerance, int_tolerance):
    """(differs, largest difference, values that differ) of hostrt's `a` and the reference's `b`."""
    if a.dtype == np.int8 and b.dtype == np.uint8:
        a = a.astype(np.int16) + 128
    if a.shape != b.shape and a.size == b.size:
        a = a.reshape(b.shape)  # TFLM's flat tensor data
    if a.shape != b.shape:
        return True, float("inf"), b.size
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        d = np.abs(a.astype(np.int64) - b.astype(np.int64))
        return bool((d > int_tolerance).any()), float(d.max(initial=0)), int((d > int_tolerance).sum())
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    bound = tolerance * max(float(np.abs(b).max(initial=0)), 1e-30)
    return bool((d > bound).any()), float(d.max(initial=0)), int((d > bound).sum())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--input", required=True, action="append")
    p.add_argument("--on", choices=["host", "mcu"], default="host")
    p.add_argument("--reference", choices=["tflm", "litert", "onnxruntime", "host"])
    p.add_argument("--hostrt", default=os.path.join(ROOT, "target", "release", "hostrt"))
    p.add_argument("--tolerance", type=float, default=1e-5)
    p.add_argument("--int-tolerance", type=int)
    args = p.parse_args()
    xs = [np.load(x) for x in args.input]
    onnx_model = args.model.endswith(".onnx")
    which = args.reference
    if which is None:
        if args.on == "mcu":
            which = "host"
        elif onnx_model:
            which = "onnxruntime"
        else:
            which = "tflm" if xs[0].dtype == np.int8 else "litert"
    if which == "host" and args.on == "host":
        p.error("--reference host compares with hostrt on this machine: give --on mcu")
    if onnx_model and which in ("tflm", "litert"):
        p.error(f"--reference {which} runs .tflite models; for .onnx use onnxruntime or host")
    if not onnx_model and which == "onnxruntime":
        p.error("--reference onnxruntime runs .onnx models")
    mine = hostrt_layers(args.on, args.hostrt, args.model, args.input)
    try:
        if which == "host":
            ref, key = {r["file"]: r["array"] for r in hostrt_layers("host", args.hostrt, args.model, args.input)}, "file"
        elif which == "onnxruntime":
            ref, key = onnx_reference(args.model, xs), "name"
        else:
            ref, key = tflite_reference(args.model, xs, which, [r["tensor"] for r in mine]), "tensor"
    except ImportError as e:
        print(f"the {which} reference is not installed: {e}", file=sys.stderr)
        return 2
    where = "QEMU Cortex-M" if args.on == "mcu" else "this machine"
    print(f"hostrt on {where} against {which}")
    print(f"{'layer':<28} {'tensor':>6}  {'largest difference':>18}  {'differing':>10}  name")
    first = None
    int_tolerance = args.int_tolerance if args.int_tolerance is not None else int(which == "onnxruntime")
    for r in mine:
        if r[key] not in ref:
            # A tensor the importer added (an ONNX layout change, a split operator's part).
            print(f"{r['layer']:<28} {r['tensor']:>6}  {'(no reference)':>18}  {'':>10}  {r['name'][:60]}")
            continue
        differs, largest, count = difference(r["array"], ref[r[key]], args.tolerance, int_tolerance)
        mark = "  <- first difference" if differs and first is None else ""
        print(f"{r['layer']:<28} {r['tensor']:>6}  {largest:>18.6g}  {count:>10}  {r['name'][:60]}{mark}")
        if differs and first is None:
            first = (r, largest, count)
    if first is None:
        print(f"every layer agrees with {which}")
        return 0
    r, largest, count = first
    print(f"first differing layer: {r['layer']} (tensor {r['tensor']}, {r['name']}): "
          f"{count} of {r['array'].size} values differ, by up to {largest:g}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
