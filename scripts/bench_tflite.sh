#!/usr/bin/env bash
# hostrt against LiteRT on the TensorFlow Lite test models, one thread, same machine, same
# run: criterion times hostrt (import/benches/tflite.rs), import/benches/litert.py times
# LiteRT with XNNPACK and with its builtin kernels right after it, model by model, and the
# table gives each median and the ratio hostrt / LiteRT (below 1.0: hostrt is faster). By
# hand; needs the venv of scripts/make_tflite_models.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOSTRT_TF_VENV:-/opt/tflenv}
# Float32 whole models too large to commit (about 1.9 MB), made once into target/.
if [ ! -f target/bench-models/mobilenet_v1_vww_f32.tflite ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models bash scripts/make_tflite_models.sh \
        resnet8_f32 mobilenet_v1_vww_f32 autoencoder_f32 >&2
fi
cargo bench -q -p hostrt-import --bench tflite -- --noplot "^import/" "$@" >&2
# Model by model, hostrt then LiteRT right after it: this machine's speed drifts by 10-20%
# over minutes, and both sides of a ratio should see the same. Extra arguments go to
# criterion.
models="ds_cnn_i8 ds_cnn_f32 resnet8_i8 mobilenet_v1_vww_i8 mobilenet_v1_person_i8 autoencoder_i8
    resnet8_f32 mobilenet_v1_vww_f32 autoencoder_f32"
rm -f target/litert_bench.*.json
for name in $models; do
    cargo bench -q -p hostrt-import --bench tflite -- --noplot "^infer/$name\$" "$@" >&2
    TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" import/benches/litert.py "$name" > "target/litert_bench.$name.json"
done
"$venv/bin/python" - $models <<'PY'
import json, sys
litert = {}
for name in sys.argv[1:]:
    litert.update(json.load(open(f"target/litert_bench.{name}.json")))
def median_us(group, name):
    est = json.load(open(f"target/criterion/{group}_{name}/new/estimates.json"))
    return est["median"]["point_estimate"] / 1e3
print(f"import of mobilenet_v1_vww_i8 (307 KB): {median_us('import', 'mobilenet_v1_vww_i8') / 1e3:.2f} ms")
print(f"{'model':<26}{'hostrt us':>11}{'LiteRT XNNPACK':>16}{'ratio':>7}{'LiteRT builtin':>16}{'ratio':>7}")
for name, row in litert.items():
    h = median_us("infer", name)
    print(f"{name:<26}{h:>11.1f}{row['xnnpack']:>16.1f}{h / row['xnnpack']:>7.2f}{row['builtin']:>16.1f}{h / row['builtin']:>7.2f}")
PY
