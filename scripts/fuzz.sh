#!/usr/bin/env bash
# Fuzz every target for SECONDS each (default 600): bash scripts/fuzz.sh [SECONDS] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz. Corpora live in target/fuzz-corpus (not in git);
# the conformance programs seed them at run time when ../shared/conformance is present.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(bef_load bef_mutate mlir_parse mlir_run btf_read)
corpus=$PWD/target/fuzz-corpus
mkdir -p "$corpus"/{bef_load,bef_mutate,mlir_parse,mlir_run,btf_read}
conf=../shared/conformance/tfrt
if [ -d "$conf" ]; then
    cargo build -q -p hostrt
    for f in "$conf"/*.mlir; do
        b=$(basename "$f" .mlir)
        cp "$f" "$corpus/mlir_parse/$b.mlir"
        cp "$f" "$corpus/mlir_run/$b.mlir"
        target/debug/hostrt compile "$f" -o "$corpus/bef_load/$b.bef"
    done
else
    echo "fuzz: $conf not found; starting from empty corpora"
fi
# TFRT's BTF files seed the BTF reader.
tensors=../shared/conformance/tfrt-tensor
if [ -d "$tensors" ]; then
    find "$tensors" -name '*.btf' -exec cp {} "$corpus/btf_read/" \;
fi
# The project's own programs seed the run target too (recursion, streams, natives).
cp examples/firmware/programs/*.mlir tools/tests/programs/*.mlir "$corpus/mlir_run/"
for t in "${targets[@]}"; do
    echo "==> fuzzing $t for ${secs}s"
    log=$(mktemp)
    if ! (cd fuzz && cargo +nightly fuzz run -O "$t" "$corpus/$t" -- -max_total_time="$secs" -print_final_stats=1) >"$log" 2>&1; then
        tail -40 "$log"
        echo "fuzz: $t failed (artifact in fuzz/artifacts/$t)"
        exit 1
    fi
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|Done)" "$log" || true
    rm -f "$log"
done
