#!/usr/bin/env python3
"""The baseline of benches/tflite.rs: LiteRT (ai-edge-litert) on the same models and inputs,
one thread, with XNNPACK (LiteRT's default) and with the builtin kernels only. Prints one
JSON object: {model: {"xnnpack": median_us, "builtin": median_us}}, of the models named as
arguments, else of all. Run by scripts/bench_tflite.sh.
"""
import json, os, sys, time

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

MODELS = ["ds_cnn_i8", "ds_cnn_f32", "resnet8_i8", "mobilenet_v1_vww_i8", "mobilenet_v1_person_i8", "autoencoder_i8"]
DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models")
# Float32 whole models too large to commit, made by scripts/bench_tflite.sh.
EXTRA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "bench-models")
EXTRA = ["resnet8_f32", "mobilenet_v1_vww_f32", "autoencoder_f32"]


def median_us(it, x, seconds=2.0):
    inp = it.get_input_details()[0]["index"]
    it.set_tensor(inp, x)
    for _ in range(10):
        it.invoke()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 20:
        t = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e6


def main():
    out = {}
    models = [(DIR, name) for name in MODELS]
    models += [(EXTRA_DIR, name) for name in EXTRA if os.path.exists(os.path.join(EXTRA_DIR, name + ".tflite"))]
    # Named models only (scripts/bench_tflite.sh times one at a time, right after hostrt).
    if sys.argv[1:]:
        models = [(folder, name) for folder, name in models if name in sys.argv[1:]]
    for folder, name in models:
        data = open(os.path.join(folder, name + ".tflite"), "rb").read()
        x = np.load(os.path.join(folder, name + ".input.npy"))
        row = {}
        for key, resolver in (("xnnpack", OpResolverType.AUTO), ("builtin", OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)):
            it = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=resolver)
            it.allocate_tensors()
            row[key] = median_us(it, x)
        out[name] = row
        print(name, row, file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
