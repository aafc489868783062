#!/usr/bin/env bash
# The layer-by-layer comparison's own test, by hand (needs the venv of
# scripts/make_tflite_models.sh): on the int8 DS-CNN, hostrt agrees with TensorFlow Lite
# Micro at every layer; a build with a deliberate off-by-one in the int8 average pool
# (`--cfg hostrt_test_off_by_one`, its own target directory) is caught, and the first
# differing layer named is that pool.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOSTRT_TF_VENV:-/opt/tflenv}
model=import/tests/models/ds_cnn_i8
cargo build -q --release --bin hostrt
RUSTFLAGS="--cfg hostrt_test_off_by_one" cargo build -q --release --bin hostrt --target-dir target/off-by-one
compare() { TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" scripts/compare_layers.py "$model.tflite" --input "$model.input.npy" --hostrt "$1"; }
echo "== the release build"
compare target/release/hostrt
echo "== the build with an off-by-one in nn.average_pool_2d.i8"
if out=$(compare target/off-by-one/release/hostrt); then
    echo "$out"
    echo "FAIL: the off-by-one was not found"
    exit 1
fi
echo "$out"
echo "$out" | grep -q "^first differing layer: op#[0-9]* AVERAGE_POOL_2D" || { echo "FAIL: another layer named"; exit 1; }
echo "ok: the injected off-by-one is named"
