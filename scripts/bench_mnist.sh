#!/usr/bin/env bash
# Times the same MNIST-shaped MLP (TFRT's bm_mnist shape: [100, 784] f32 input, dense
# 784->512 + bias + ReLU, dense 512->10 + bias) in hostrt, onnxruntime and tract, with
# the same seeded weights and input batch, one thread each, and prints the median time per
# batch of 100, the ratio to onnxruntime and the GFLOP/s reached. Run by hand on an
# otherwise idle machine; CI never runs it. Idempotent: it reuses the virtual environment
# (target/bench-venv, pinned numpy/onnx/onnxruntime) and regenerates target/bench-mnist/.
#
# Usage: scripts/bench_mnist.sh [RUNS]   (timed runs for onnxruntime and tract; 1000)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-1000}
venv=target/bench-venv
out=target/bench-mnist
py=$venv/bin/python
tract_dir=benches/mnist/tract
# FLOP per batch: 2*100*784*512 + 2*100*512*10 (the two matmuls) + 100*512 + 100*10
# (bias adds) + 100*512 (ReLU) = 81,409,000.
flop=81409000

if [ ! -x "$py" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check numpy==2.4.6 onnx==1.23.2 onnxruntime==1.32.0

echo "== generating the model and input into $out"
"$py" benches/mnist/gen.py "$out"

echo "== building hostrt and the tract runner (release)"
cargo build --release -q -p hostrt
cargo build --release -q --manifest-path "$tract_dir/Cargo.toml"
hostrt=target/release/hostrt
tract=$tract_dir/target/release/mnist-tract

echo "== checking hostrt's output against expected.bin"
"$hostrt" run "$out/mnist.mlir" --functions=check_mnist_mlp | "$py" benches/mnist/compare.py "$out"

echo "== timing (in sequence; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
hostrt_log=$("$hostrt" run "$out/mnist.mlir" --functions=BM_mnist_mlp)
echo "$hostrt_log"
ort_log=$("$py" benches/mnist/ort.py "$out" "$runs")
echo "$ort_log"
tract_log=$("$tract" "$out" "$runs")
echo "$tract_log"

median() { sed -n "s/^BM:$1:Time 50%(ns): //p" <<<"$2"; }
hostrt_ns=$(median BM_mnist_mlp "$hostrt_log")
ort_ns=$(median onnxruntime "$ort_log")
tract_ns=$(median tract "$tract_log")
ort_version=$("$py" -c 'import onnxruntime; print(onnxruntime.__version__)')
tract_version=$(sed -n 's/^tract-onnx = { version = "=\([^"]*\)".*/\1/p' "$tract_dir/Cargo.toml")

echo
echo "MNIST MLP, batch 100, one thread, median wall time per batch ($flop FLOP per batch)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
awk -v flop="$flop" -v ort="$ort_ns" \
    -v h="$hostrt_ns" -v o="$ort_ns" -v t="$tract_ns" \
    -v ov="$ort_version" -v tv="$tract_version" 'BEGIN {
    printf "%-22s %12s %12s %10s\n", "runtime", "median ms", "vs ort", "GFLOP/s"
    split("hostrt|onnxruntime " ov "|tract " tv, name, "|")
    split(h " " o " " t, ns, " ")
    for (i = 1; i <= 3; i++)
        printf "%-22s %12.3f %11.2fx %10.1f\n", name[i], ns[i] / 1e6, ns[i] / ort, flop / ns[i]
}'
