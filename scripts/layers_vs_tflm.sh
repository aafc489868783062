#!/usr/bin/env bash
# Instructions per layer of one imported model on QEMU Cortex-M4F, hostrt beside TensorFlow
# Lite Micro with CMSIS-NN: runs the model's firmware image with `--features layer-profile`,
# decodes its defmt frames (`cargo xtask defmt` prints the table on stderr), and joins each
# kernel with TFLM's operator of the same index from `scripts/tflm_baseline.sh`'s results.
# Prints a markdown table per layer and per operator type (ratio = hostrt / TFLM; an
# operator hostrt runs as no kernel, as RESHAPE, counts 0).
#
# Usage: scripts/layers_vs_tflm.sh IMAGE MODEL
#   e.g. scripts/layers_vs_tflm.sh resnet8 resnet8_i8
# Needs the results of `scripts/tflm_baseline.sh run` (TFLM_BASELINE_WORK, default
# /work/tflm-baseline/work) and the firmware tools of scripts/firmware.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:?usage: $0 IMAGE MODEL}
model=${2:?usage: $0 IMAGE MODEL}
tflm=${TFLM_BASELINE_WORK:-/work/tflm-baseline/work}/results/cmsis_nn.$model.out
[ -f "$tflm" ] || { echo "no TFLM results at $tflm: run scripts/tflm_baseline.sh first" >&2; exit 1; }
frames=$(mktemp)
trap 'rm -f "$frames"' EXIT
(cd examples/firmware && cargo run -q --release --bin "$image" --features layer-profile) >"$frames"
cargo xtask defmt "examples/firmware/target/thumbv7em-none-eabihf/release/$image" "$frames" 2>&1 |
    python3 scripts/layers_vs_tflm.py "$tflm"
