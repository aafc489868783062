#!/usr/bin/env bash
# hostrt against onnxruntime on ONNX models, same machine, same run: criterion times hostrt
# (import/benches/onnx.rs, one thread), import/benches/ort_times.py times onnxruntime with
# one and two intra-op threads, and the table gives each median and the ratio hostrt /
# onnxruntime (below 1.0: hostrt is faster). By hand; needs `onnx`, `onnxruntime`, `numpy`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The larger float models (about 4.7 MB), made once into target/.
if [ ! -f target/bench-models/transformer_4x128.onnx ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models python3 scripts/make_onnx_models.py >&2
fi
cargo bench -q -p hostrt-import --bench onnx -- --noplot "$@" >&2
python3 import/benches/ort_times.py > target/onnxruntime_bench.json
python3 - <<'PY'
import json
ort = json.load(open("target/onnxruntime_bench.json"))
def median_us(name):
    est = json.load(open(f"target/criterion/onnx_{name}/new/estimates.json"))
    return est["median"]["point_estimate"] / 1e3
print(f"{'model':<22}{'hostrt us':>11}{'ORT 1 thread':>14}{'ratio':>7}{'ORT 2 threads':>15}{'ratio':>7}")
for name, row in ort.items():
    h = median_us(name)
    print(f"{name:<22}{h:>11.1f}{row['threads1']:>14.1f}{h / row['threads1']:>7.2f}{row['threads2']:>15.1f}{h / row['threads2']:>7.2f}")
PY
