#!/usr/bin/env bash
# hostrt against onnxruntime on ONNX models, same machine, same run: criterion times hostrt
# (import/benches/onnx.rs, one thread and two workers), import/benches/ort_times.py times
# onnxruntime with one and two intra-op threads right after it, model by model, and the
# table gives each median and the ratio hostrt / onnxruntime at the same thread count (below
# 1.0: hostrt is faster). By hand; needs `onnx`, `onnxruntime`, `numpy`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The larger float models (about 4.7 MB), made once into target/.
if [ ! -f target/bench-models/transformer_4x128.onnx ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models python3 scripts/make_onnx_models.py >&2
fi
# Model by model, hostrt then onnxruntime right after it: this machine's speed drifts by
# 10-20% over minutes, and both sides of a ratio should see the same. Extra arguments go to
# criterion.
models="cnn_small cnn_small_qdq_s8 mobilenet_v2_96 transformer_4x128"
rm -f target/onnxruntime_bench.*.json
for name in $models; do
    cargo bench -q -p hostrt-import --bench onnx -- --noplot "^onnx/${name}(_2t)?\$" "$@" >&2
    python3 import/benches/ort_times.py "$name" > "target/onnxruntime_bench.$name.json"
done
python3 - $models <<'PY'
import json, sys
ort = {}
for name in sys.argv[1:]:
    ort.update(json.load(open(f"target/onnxruntime_bench.{name}.json")))
def median_us(name):
    est = json.load(open(f"target/criterion/onnx_{name}/new/estimates.json"))
    return est["median"]["point_estimate"] / 1e3
print(f"{'model':<20}{'hostrt 1t':>10}{'ORT 1t':>9}{'ratio':>7}{'hostrt 2t':>11}{'ORT 2t':>9}{'ratio':>7}")
for name, row in ort.items():
    h1, h2 = median_us(name), median_us(name + "_2t")
    o1, o2 = row["threads1"], row["threads2"]
    print(f"{name:<20}{h1:>10.1f}{o1:>9.1f}{h1 / o1:>7.2f}{h2:>11.1f}{o2:>9.1f}{h2 / o2:>7.2f}")
PY
