#!/usr/bin/env bash
# hostrt against LiteRT on the TensorFlow Lite test models, one thread, same machine, same
# run: criterion times hostrt (import/benches/tflite.rs), import/benches/litert.py times
# LiteRT with XNNPACK and with its builtin kernels right after it, model by model, in
# rounds, and the table gives each side's best median and the ratio hostrt / LiteRT (below
# 1.0: hostrt is faster). By hand; needs the venv of scripts/make_tflite_models.sh.
# `ROUNDS=5 bash scripts/bench_tflite.sh` for more rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOSTRT_TF_VENV:-/opt/tflenv}
# Float32 whole models too large to commit (about 1.9 MB), made once into target/.
if [ ! -f target/bench-models/mobilenet_v1_vww_f32.tflite ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models bash scripts/make_tflite_models.sh \
        resnet8_f32 mobilenet_v1_vww_f32 autoencoder_f32 >&2
fi
cargo bench -q -p hostrt-import --bench tflite -- --noplot "^import/" "$@" >&2
# Model by model, hostrt then LiteRT right after it, in $ROUNDS rounds (default 3): some
# machines' speed moves by 10-20% over minutes, or jumps by 2x between two levels, and both
# sides of a ratio should see the same. The table takes each side's best round (the lowest
# median), and prints the rounds' spread. Extra arguments go to criterion.
rounds=${ROUNDS:-3}
models="ds_cnn_i8 ds_cnn_f32 resnet8_i8 mobilenet_v1_vww_i8 mobilenet_v1_person_i8 autoencoder_i8
    resnet8_f32 mobilenet_v1_vww_f32 autoencoder_f32"
rm -rf target/bench-rounds && mkdir -p target/bench-rounds
for round in $(seq "$rounds"); do
    for name in $models; do
        cargo bench -q -p hostrt-import --bench tflite -- --noplot "^infer/$name\$" "$@" >&2
        cp "target/criterion/infer_$name/new/estimates.json" "target/bench-rounds/hostrt.$name.$round.json"
        TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" import/benches/litert.py "$name" \
            > "target/bench-rounds/litert.$name.$round.json"
    done
done
"$venv/bin/python" - "$rounds" $models <<'PY'
import json, statistics, sys
rounds, names = int(sys.argv[1]), sys.argv[2:]
def hostrt_us(name, r):
    est = json.load(open(f"target/bench-rounds/hostrt.{name}.{r}.json"))
    return est["median"]["point_estimate"] / 1e3
def litert_us(name, r):
    return json.load(open(f"target/bench-rounds/litert.{name}.{r}.json"))[name]
est = json.load(open("target/criterion/import_mobilenet_v1_vww_i8/new/estimates.json"))
print(f"import of mobilenet_v1_vww_i8 (307 KB): {est['median']['point_estimate'] / 1e6:.2f} ms")
print(f"best of {rounds} round(s) per side; 'per round': the median of the rounds' own ratios;")
print("the spread is the slowest round over the fastest, hostrt / XNNPACK")
print(f"{'model':<26}{'hostrt us':>11}{'LiteRT XNNPACK':>16}{'ratio':>7}{'per round':>11}"
      f"{'LiteRT builtin':>16}{'ratio':>7}{'spread':>11}")
for name in names:
    h = [hostrt_us(name, r) for r in range(1, rounds + 1)]
    x = [litert_us(name, r)["xnnpack"] for r in range(1, rounds + 1)]
    b = [litert_us(name, r)["builtin"] for r in range(1, rounds + 1)]
    per_round = statistics.median(a / c for a, c in zip(h, x))
    spread = f"{max(h) / min(h):.2f}/{max(x) / min(x):.2f}"
    print(f"{name:<26}{min(h):>11.1f}{min(x):>16.1f}{min(h) / min(x):>7.2f}{per_round:>11.2f}"
          f"{min(b):>16.1f}{min(h) / min(b):>7.2f}{spread:>11}")
PY
