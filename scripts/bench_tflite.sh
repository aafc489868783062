#!/usr/bin/env bash
# hostrt against LiteRT on the TensorFlow Lite test models, one thread, same machine, same
# run: criterion times hostrt (import/benches/tflite.rs), import/benches/litert.py times
# LiteRT with XNNPACK and with its builtin kernels, and the table gives each median and the
# ratio hostrt / LiteRT (below 1.0: hostrt is faster). By hand; needs the venv of
# scripts/make_tflite_models.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOSTRT_TF_VENV:-/opt/tflenv}
# Float32 whole models too large to commit (about 1.9 MB), made once into target/.
if [ ! -f target/bench-models/mobilenet_v1_vww_f32.tflite ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models bash scripts/make_tflite_models.sh \
        resnet8_f32 mobilenet_v1_vww_f32 autoencoder_f32 >&2
fi
cargo bench -q -p hostrt-import --bench tflite -- --noplot "$@" >&2
TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" import/benches/litert.py > target/litert_bench.json
"$venv/bin/python" - <<'PY'
import json
litert = json.load(open("target/litert_bench.json"))
def median_us(group, name):
    est = json.load(open(f"target/criterion/{group}_{name}/new/estimates.json"))
    return est["median"]["point_estimate"] / 1e3
print(f"import of mobilenet_v1_vww_i8 (307 KB): {median_us('import', 'mobilenet_v1_vww_i8') / 1e3:.2f} ms")
print(f"{'model':<26}{'hostrt us':>11}{'LiteRT XNNPACK':>16}{'ratio':>7}{'LiteRT builtin':>16}{'ratio':>7}")
for name, row in litert.items():
    h = median_us("infer", name)
    print(f"{name:<26}{h:>11.1f}{row['xnnpack']:>16.1f}{h / row['xnnpack']:>7.2f}{row['builtin']:>16.1f}{h / row['builtin']:>7.2f}")
PY
