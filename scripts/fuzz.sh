#!/usr/bin/env bash
# Fuzz every target for SECONDS each (default 600): bash scripts/fuzz.sh [SECONDS] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz. Corpora live in target/fuzz-corpus (not in git);
# the conformance programs seed them at run time when ../shared/conformance is present.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(bef_load bef_mutate bef_run mlir_parse mlir_run btf_read dense_attr capi_register embed_call tflite_import onnx_import)
corpus=$PWD/target/fuzz-corpus
mkdir -p "$corpus"/{bef_load,bef_mutate,bef_run,mlir_parse,mlir_run,btf_read,dense_attr,capi_register,embed_call,tflite_import,onnx_import}
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
# Each literal form seeds the dense attribute target (the first byte picks the tensor type:
# fuzz/fuzz_targets/dense_attr.rs).
printf '\0001.5' >"$corpus/dense_attr/splat"
printf '\002[[1.0, 2.0], [3.0, -4.5e-3]]' >"$corpus/dense_attr/nested"
printf '\003[true, false, 1, 0]' >"$corpus/dense_attr/bools"
printf '\004[0.1, 0x7C00]' >"$corpus/dense_attr/f16"
printf '\006[(1.0, 2.0), (-0.5, 0x7FC00000)]' >"$corpus/dense_attr/complex"
printf '\010' >"$corpus/dense_attr/empty"
printf '\001"0x01000000FFFFFFFF7F000000"' >"$corpus/dense_attr/hex"
printf '\01318446744073709551615' >"$corpus/dense_attr/ui64"
# Op definitions of every spec form seed the C API registration target.
printf 'a T: {float, int32}\ni x: T\no y: T\n' >"$corpus/capi_register/typed"
printf 'a N: int >= 1 = 2\na T: type = DT_FLOAT\ni values: N * T\no sum: T\n' >"$corpus/capi_register/list"
printf "a padding: {'SAME', 'VALID'} = 'SAME'\na ksize: list(int) >= 4\ni x: Ref(float)\no y: float\n" >"$corpus/capi_register/strings"
printf 'a Tin: list(type) >= 0 = []\ni args: Tin\no out: int64\n' >"$corpus/capi_register/typelist"
# Calls of the embedding target's fixed program: divmod(i32, i32), a tensor through same(),
# and a relu+argmax over a 2-D f32 tensor (fuzz/fuzz_targets/embed_call.rs reads the bytes).
printf '\001\000\000\002\002\005\002\003' >"$corpus/embed_call/divmod"
printf '\001\000\001\001\017\000\000\000\001\003\001' >"$corpus/embed_call/same"
printf '\001\000\003\002\017\000\000\000\002\004\003\001\007' >"$corpus/embed_call/classify"
# The project's own programs seed the run target too (recursion, streams, natives), named by
# their folder so that files of the same name in two folders both get in.
for f in examples/firmware/programs/*.mlir tools/tests/programs/*.mlir; do
    cp "$f" "$corpus/mlir_run/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"
done
# The TensorFlow Lite test models seed the importer.
cp import/tests/models/*.tflite "$corpus/tflite_import/"
# The ONNX test models seed the ONNX importer.
cp import/tests/models/onnx/*.onnx "$corpus/onnx_import/"
# -a: with debug assertions, so that a wrong load-time type proof panics instead of reading a
# value as the wrong type (docs/execution.md, "Types checked at load").
# Built first (cargo-fuzz's flags: optimised, debug assertions, AddressSanitizer), then run as
# plain libFuzzer binaries, HOSTRT_FUZZ_JOBS at a time (default: one per core; each run is one
# process on one core).
if [ $# -eq 0 ]; then
    (cd fuzz && cargo +nightly fuzz build -O -a)
else
    for t in "${targets[@]}"; do (cd fuzz && cargo +nightly fuzz build -O -a "$t"); done
fi
bin=fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# run_target T: fuzzes T for $secs seconds; its output goes to $logs/T.
run_target() {
    mkdir -p "fuzz/artifacts/$1"
    "$bin/$1" -artifact_prefix="fuzz/artifacts/$1/" -max_total_time="$secs" -print_final_stats=1 \
        "$corpus/$1" >"$logs/$1" 2>&1
}
# report T STATUS: prints T's statistics, or the end of its log and fails.
report() {
    echo "==> fuzzed $1 for ${secs}s"
    if [ "$2" -ne 0 ]; then
        tail -40 "$logs/$1"
        echo "fuzz: $1 failed (artifact in fuzz/artifacts/$1)"
        exit 1
    fi
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|Done)" "$logs/$1" || true
}
jobs=${HOSTRT_FUZZ_JOBS:-$(nproc)}
running=() # "TARGET:PID" of the runs started and not yet reported, oldest first
# finish_oldest: waits for the oldest run and reports it.
finish_oldest() {
    local rc=0
    wait "${running[0]#*:}" || rc=$?
    report "${running[0]%%:*}" "$rc"
    running=("${running[@]:1}")
}
for t in "${targets[@]}"; do
    run_target "$t" &
    running+=("$t:$!")
    if [ ${#running[@]} -ge "$jobs" ]; then finish_oldest; fi
done
while [ ${#running[@]} -gt 0 ]; do finish_oldest; done
