"""Time the MNIST-shaped MLP (mnist.onnx from gen.py) in onnxruntime, one thread.

onnxruntime is the reference point of scripts/bench_mnist.sh: CPU execution provider,
all graph optimizations, one intra-op and one inter-op thread, sequential execution, so
that it does the same single-threaded work as hostrt and tract. The output is checked
against expected.bin first; then 20 warm-up runs and RUNS timed runs of one batch of 100.
Prints the median wall time per run in the form hostrt's benchmark kernel uses:

  BM:onnxruntime:Time 50%(ns): N

Usage: python ort.py OUT_DIR [RUNS]
"""

import os
import pathlib
import re
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS pool: not needed here.

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from compare import check  # noqa: E402

WARMUP = 20


def session(model_path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) == 3 else 1000
    sess = session(out / "mnist.onnx")
    feed = {"X": np.fromfile(out / "x.bin", "<f4").reshape(100, 784)}
    check(f"onnxruntime {ort.__version__}", sess.run(["Y"], feed)[0], out)
    for _ in range(WARMUP):
        sess.run(["Y"], feed)
    times = []
    cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
    for _ in range(runs):
        start = time.perf_counter_ns()
        sess.run(["Y"], feed)
        times.append(time.perf_counter_ns() - start)
    cpu, wall = time.process_time_ns() - cpu0, time.perf_counter_ns() - wall0
    times.sort()
    # The same percentile indices as hostrt's benchmark kernel: floor(n * p).
    print(f"BM:onnxruntime:Count: {runs}")
    print(f"BM:onnxruntime:Time Min(ns): {times[0]}")
    print(f"BM:onnxruntime:Time 50%(ns): {times[runs // 2]}")
    print(f"BM:onnxruntime:Time 95%(ns): {times[int(runs * 0.95)]}")
    print(f"BM:onnxruntime:CPU utilization(percent): {100 * cpu / wall:.1f}")
    threads = re.search(r"^Threads:\s*(\d+)", pathlib.Path("/proc/self/status").read_text(), re.M)
    print(f"BM:onnxruntime:Threads: {threads.group(1) if threads else '?'}")


if __name__ == "__main__":
    main()
