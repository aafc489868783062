#!/usr/bin/env bash
# hostrt against onnxruntime on ONNX models, same machine, same run: criterion times hostrt
# (import/benches/onnx.rs, one thread and two workers), import/benches/ort_times.py times
# onnxruntime with one and two intra-op threads right after it, model by model, in rounds,
# and the table gives each side's best median and the ratio hostrt / onnxruntime at the same
# thread count (below 1.0: hostrt is faster). By hand; needs `onnx`, `onnxruntime`, `numpy`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The larger float models (about 4.7 MB), made once into target/.
if [ ! -f target/bench-models/transformer_4x128.onnx ]; then
    HOSTRT_MODELS_OUT=$PWD/target/bench-models python3 scripts/make_onnx_models.py >&2
fi
# Model by model, hostrt then onnxruntime right after it, in $ROUNDS rounds (default 3):
# some machines' speed moves by 10-20% over minutes, or jumps by 2x between two levels, and
# both sides of a ratio should see the same. The table takes each side's best round (the
# lowest median). Extra arguments go to criterion.
rounds=${ROUNDS:-3}
models="cnn_small cnn_small_qdq_s8 mobilenet_v2_96 transformer_4x128"
rm -rf target/bench-rounds-onnx && mkdir -p target/bench-rounds-onnx
for round in $(seq "$rounds"); do
    for name in $models; do
        cargo bench -q -p hostrt-import --bench onnx -- --noplot "^onnx/${name}(_2t)?\$" "$@" >&2
        for t in "" _2t; do
            cp "target/criterion/onnx_$name$t/new/estimates.json" \
                "target/bench-rounds-onnx/hostrt.$name$t.$round.json"
        done
        python3 import/benches/ort_times.py "$name" > "target/bench-rounds-onnx/ort.$name.$round.json"
    done
done
python3 - "$rounds" $models <<'PY'
import json, statistics, sys
rounds, names = int(sys.argv[1]), sys.argv[2:]
def hostrt_us(name, r):
    est = json.load(open(f"target/bench-rounds-onnx/hostrt.{name}.{r}.json"))
    return est["median"]["point_estimate"] / 1e3
def ort_us(name, r, key):
    return json.load(open(f"target/bench-rounds-onnx/ort.{name}.{r}.json"))[name][key]
print(f"best of {rounds} round(s) per side; 'per round': the median of the rounds' own ratios")
print(f"{'model':<20}{'hostrt 1t':>10}{'ORT 1t':>9}{'ratio':>7}{'per round':>11}"
      f"{'hostrt 2t':>11}{'ORT 2t':>9}{'ratio':>7}{'per round':>11}")
for name in names:
    rs = range(1, rounds + 1)
    h1, h2 = [hostrt_us(name, r) for r in rs], [hostrt_us(name + "_2t", r) for r in rs]
    o1, o2 = [ort_us(name, r, "threads1") for r in rs], [ort_us(name, r, "threads2") for r in rs]
    p1, p2 = (statistics.median(a / b for a, b in zip(h, o)) for h, o in ((h1, o1), (h2, o2)))
    print(f"{name:<20}{min(h1):>10.1f}{min(o1):>9.1f}{min(h1) / min(o1):>7.2f}{p1:>11.2f}"
          f"{min(h2):>11.1f}{min(o2):>9.1f}{min(h2) / min(o2):>7.2f}{p2:>11.2f}")
PY
