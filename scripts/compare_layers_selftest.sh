#!/usr/bin/env bash
# The layer-by-layer comparison's own test (scripts/compare_layers.py, docs/profiling.md).
# On the int8 DS-CNN, every layer agrees; then a build with a deliberate off-by-one in the
# int8 average pool (`--cfg hostrt_test_off_by_one`) is compared, and the script must name
# that pool, op#7, as the first layer that differs.
#
#   scripts/compare_layers_selftest.sh mcu    the firmware under QEMU against hostrt on this
#                                             machine (numpy and QEMU only; CI runs it)
#   scripts/compare_layers_selftest.sh tflm   hostrt on this machine against TensorFlow Lite
#                                             Micro (the venv of scripts/make_tflite_models.sh)
#
# HOSTRT names the host's hostrt binary (default target/release/hostrt, built here).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: compare_layers_selftest.sh mcu|tflm}
model=import/tests/models/ds_cnn_i8
hostrt=${HOSTRT:-target/release/hostrt}
[ -n "${HOSTRT:-}" ] || cargo build -q --release --bin hostrt
case $mode in
    mcu)
        python=python3
        flags=(--on mcu)
        # The off-by-one in the firmware only: the thumb target's flags (cargo keeps the two
        # builds apart, so neither rebuilds the other).
        broken() { CARGO_TARGET_THUMBV7EM_NONE_EABIHF_RUSTFLAGS="--cfg hostrt_test_off_by_one" "$@"; }
        ;;
    tflm)
        python=${HOSTRT_TF_VENV:-/opt/tflenv}/bin/python
        flags=(--reference tflm)
        RUSTFLAGS="--cfg hostrt_test_off_by_one" cargo build -q --release --bin hostrt --target-dir target/off-by-one
        broken() { "$@" --hostrt target/off-by-one/release/hostrt; }
        ;;
    *) echo "unknown mode $mode (mcu or tflm)" >&2; exit 2 ;;
esac
compare() {
    TF_CPP_MIN_LOG_LEVEL=3 "$python" scripts/compare_layers.py "$model.tflite" --input "$model.input.npy" \
        "${flags[@]}" --hostrt "$hostrt" "$@"
}
echo "== as built"
compare
echo "== with an off-by-one in nn.average_pool_2d.i8"
if out=$(broken compare); then
    echo "$out"
    echo "FAIL: the off-by-one was not found"
    exit 1
fi
echo "$out"
echo "$out" | grep -q "^first differing layer: op#7 AVERAGE_POOL_2D " || { echo "FAIL: another layer named"; exit 1; }
echo "ok: the injected off-by-one is named"
