"""onnxruntime on the models of import/benches/onnx.rs, same inputs: the median latency in
microseconds of 200 runs after 20 warm-up runs, with one and with two intra-op threads
(sequential execution, all graph optimizations on: its defaults). Prints JSON
{model: {"threads1": us, "threads2": us}} for scripts/bench_onnx.sh, of the models named as
arguments, else of all."""
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort

MODELS = [
    ("cnn_small", "import/tests/models/onnx"),
    ("cnn_small_qdq_s8", "import/tests/models/onnx"),
    ("mobilenet_v2_96", "target/bench-models"),
    ("transformer_4x128", "target/bench-models"),
]


def median_us(path, x, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    for _ in range(20):
        session.run(None, feed)
    times = []
    for _ in range(200):
        t = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e6)


result = {}
# Named models only (scripts/bench_onnx.sh times one at a time, right after hostrt).
wanted = sys.argv[1:]
for name, folder in MODELS:
    if wanted and name not in wanted:
        continue
    path = os.path.join(folder, f"{name}.onnx")
    if not os.path.exists(path):
        continue
    x = np.load(os.path.join(folder, f"{name}.input.npy"))
    result[name] = {"threads1": median_us(path, x, 1), "threads2": median_us(path, x, 2)}
print(json.dumps(result))
