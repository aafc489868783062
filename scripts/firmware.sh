#!/usr/bin/env bash
# Runs examples/firmware under QEMU (Cortex-M4F) and checks that its output equals what
# `hostrt run` prints on the host for the same programs (the example's decoded from defmt
# frames by `cargo xtask defmt`). Sourced helpers: scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build -q -p hostrt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
firmware_cargo examples/firmware run -q --release --bin minimal --no-default-features || {
    echo "firmware: the minimal image (fib, result checked by exit status) failed"
    exit 1
}
# The example prints defmt frames (binary, on semihosting's stdout); the decoder writes the
# driver's and print kernels' text to stdout and the diagnostics and reports to stderr.
firmware_cargo examples/firmware run -q --release --bin hostrt-firmware-example >"$out/fw.defmt" 2>"$out/fw.qemu" || {
    cargo xtask defmt examples/firmware/target/thumbv7em-none-eabihf/release/hostrt-firmware-example "$out/fw.defmt" || true
    cat "$out/fw.qemu"
    echo "firmware: run failed"
    exit 1
}
cargo xtask defmt examples/firmware/target/thumbv7em-none-eabihf/release/hostrt-firmware-example \
    "$out/fw.defmt" >"$out/fw.out" 2>"$out/fw.err"
(
    cd examples/firmware
    for p in fib errors loops; do
        echo "=== $p"
        # The same BEF the firmware embeds (build.rs: one stream per call, depth-first).
        ../../target/debug/hostrt compile --single-stream "programs/$p.mlir" -o "$out/$p.bef"
        ../../target/debug/hostrt run "$out/$p.bef" 2>>"$out/host.err" | tail -n +3 || true
    done
) >"$out/host.out"
diff -u "$out/host.out" "$out/fw.out"
# The same diagnostics: the host's without the command line's `hostrt: error: ` prefix and
# the source lines it quotes (the image has no source text).
sed -n 's/^hostrt: error: //p' "$out/host.err" >"$out/host.diag"
grep -v '^arena:\|^stack:' "$out/fw.err" | diff -u "$out/host.diag" -
# The digits model: weights and test images in flash (Program::load_static), predictions
# and accuracy compared with the host's.
firmware_cargo examples/firmware run -q --release --bin digits >"$out/digits.fw" 2>"$out/digits.err" || {
    cat "$out/digits.fw" "$out/digits.err"
    echo "firmware: the digits model failed"
    exit 1
}
(
    cd examples/firmware
    ../../target/debug/hostrt compile --single-stream programs/digits.mlir -o "$out/digits.bef"
    ../../target/debug/hostrt run "$out/digits.bef" | tail -n +3
) >"$out/digits.host"
diff -u "$out/digits.host" "$out/digits.fw"
# The int8 digits model on the dsp.* kernels (release: the size profile, kernels at -O3),
# compared with `hostrt run --functions digits`; the image also counts instructions.
firmware_cargo examples/firmware run -q --release --bin digits_q8 >"$out/q8.fw" 2>"$out/q8.err" || {
    cat "$out/q8.fw" "$out/q8.err"
    echo "firmware: the int8 digits model failed"
    exit 1
}
(
    cd examples/firmware
    ../../target/debug/hostrt compile --single-stream programs/digits_q8.mlir -o "$out/digits_q8.bef"
    ../../target/debug/hostrt run --functions digits "$out/digits_q8.bef" | tail -n +3
) >"$out/q8.host"
diff -u "$out/q8.host" "$out/q8.fw"
# The imported TensorFlow Lite models (src/bin/{ds_cnn,...}.rs): each image checks its output
# against the host's (TFLite Micro's golden) bit for bit and fails otherwise.
# They report in defmt frames (binary, on semihosting's stdout), which `cargo xtask defmt`
# decodes with the image's ELF: the figures on standard error.
decode() { # ELF FRAMES TEXT: the decoded report in TEXT (stdout) and TEXT.err (stderr)
    cargo xtask defmt "$1" "$2" >"$3" 2>"$3.err"
}
for image in ds_cnn mobilenet_vww resnet8 autoencoder mobilenet_person; do
    elf="examples/firmware/target/thumbv7em-none-eabihf/release/$image"
    firmware_cargo examples/firmware run -q --release --bin "$image" >"$out/$image.defmt" 2>"$out/$image.qemu" || {
        decode "$elf" "$out/$image.defmt" "$out/$image.fw" || true
        cat "$out/$image.fw" "$out/$image.fw.err" "$out/$image.qemu"
        echo "firmware: the imported model image $image failed"
        exit 1
    }
    decode "$elf" "$out/$image.defmt" "$out/$image.fw"
    mv "$out/$image.fw.err" "$out/$image.err"
    grep -q "output equals the host's" "$out/$image.err"
    echo "$image on QEMU Cortex-M4F: $(head -1 "$out/$image.err" | sed 's/^[^:]*: //'); $(grep '^instructions:' "$out/$image.err"); $(grep '^arena:' "$out/$image.err" | cut -d';' -f2)"
done
# The same thumbv7em images on QEMU's Cortex-M7 board (mps2-an500: the same memory map).
for image in ds_cnn mobilenet_vww resnet8 autoencoder mobilenet_person; do
    elf="examples/firmware/target/thumbv7em-none-eabihf/release/$image"
    qemu-system-arm -machine mps2-an500 -cpu cortex-m7 -nographic -semihosting-config enable=on,target=native \
        -icount shift=0 -kernel "$elf" >"$out/$image.m7.defmt" 2>"$out/$image.m7.qemu" || {
        decode "$elf" "$out/$image.m7.defmt" "$out/$image.m7" || true
        cat "$out/$image.m7" "$out/$image.m7.err" "$out/$image.m7.qemu"
        echo "firmware: the imported model image $image failed on the Cortex-M7 board"
        exit 1
    }
    decode "$elf" "$out/$image.m7.defmt" "$out/$image.m7"
    grep -q "output equals the host's" "$out/$image.m7.err"
done
echo "the five model images on QEMU Cortex-M7 (mps2-an500): outputs equal the host's"
# Instructions per kernel through the executor's observer (`--features layer-profile`,
# docs/profiling.md): the host's `--profile` table, one row per layer of the model. Built
# after the Cortex-M7 runs, which use the plain images.
elf=examples/firmware/target/thumbv7em-none-eabihf/release/ds_cnn
firmware_cargo examples/firmware run -q --release --bin ds_cnn --features layer-profile >"$out/profile.defmt" \
    2>"$out/profile.qemu" || { cat "$out/profile.qemu"; echo "firmware: the profiled ds_cnn image failed"; exit 1; }
decode "$elf" "$out/profile.defmt" "$out/profile"
grep -q '^location  kernel  calls  self instructions  mean instructions  share$' "$out/profile.err"
layers=$(grep -c '^op#[0-9]* [A-Z_0-9]*:.*  nn\.[a-z_0-9.]*  1  [0-9]*  [0-9]*  [0-9.]*%$' "$out/profile.err")
[ "$layers" -ge 10 ] || { cat "$out/profile.err"; echo "firmware: $layers layer rows in the profile"; exit 1; }
echo "ds_cnn on QEMU Cortex-M4F, per kernel through the observer: $layers layers, $(grep 'instructions in kernels' "$out/profile.err")"
# The same images for Armv6-M (thumbv6m: Cortex-M0/M0+, the portable kernels), run on the
# same board (Armv6-M code runs unchanged on an Armv7-M core), so the instructions counted
# are the M0's.
for image in ds_cnn mobilenet_vww resnet8 autoencoder mobilenet_person; do
    elf="examples/firmware/target/thumbv6m-none-eabi/release/$image"
    firmware_cargo examples/firmware run -q --release --target thumbv6m-none-eabi --bin "$image" \
        >"$out/$image.v6m.defmt" 2>"$out/$image.v6m.qemu" || {
        decode "$elf" "$out/$image.v6m.defmt" "$out/$image.v6m" || true
        cat "$out/$image.v6m" "$out/$image.v6m.err" "$out/$image.v6m.qemu"
        echo "firmware: the imported model image $image (thumbv6m) failed"
        exit 1
    }
    decode "$elf" "$out/$image.v6m.defmt" "$out/$image.v6m"
    grep -q "output equals the host's" "$out/$image.v6m.err"
    echo "$image on QEMU, thumbv6m code: $(grep '^instructions:' "$out/$image.v6m.err")"
done
# `cargo xtask mcu` on a model given by path: its out0.npy equals the host's `hostrt infer`.
m=import/tests/models/autoencoder_i8
cargo xtask mcu "$m.tflite" --input "$m.input.npy" --output-dir "$out/mcu" >"$out/mcu.txt" 2>"$out/mcu.err" || {
    cat "$out/mcu.txt" "$out/mcu.err"
    echo "firmware: cargo xtask mcu failed"
    exit 1
}
target/debug/hostrt infer "$m.tflite" --input "$m.input.npy" --output-dir "$out/host-infer" >/dev/null
cmp "$out/mcu/out0.npy" "$out/host-infer/out0.npy"
echo "cargo xtask mcu on QEMU Cortex-M4F: out0.npy identical to hostrt infer's; $(grep '^instructions' "$out/mcu.txt"); $(grep '^flash' "$out/mcu.txt")"
# The same for an ONNX model quantized by onnxruntime (QDQ, int8 kernels; embed_onnx).
m=import/tests/models/onnx/cnn_small_qdq_s8
cargo xtask mcu "$m.onnx" --input "$m.input.npy" --output-dir "$out/mcu-onnx" >"$out/mcu-onnx.txt" 2>"$out/mcu-onnx.err" || {
    cat "$out/mcu-onnx.txt" "$out/mcu-onnx.err"
    echo "firmware: cargo xtask mcu of an ONNX model failed"
    exit 1
}
target/debug/hostrt infer "$m.onnx" --input "$m.input.npy" --output-dir "$out/host-infer-onnx" >/dev/null
cmp "$out/mcu-onnx/out0.npy" "$out/host-infer-onnx/out0.npy"
echo "cargo xtask mcu of a QDQ ONNX model on QEMU Cortex-M4F: out0.npy identical to hostrt infer's; $(grep '^instructions' "$out/mcu-onnx.txt")"
echo "int8 digits model on QEMU Cortex-M4F: output identical to the host's; $(grep '^classify' "$out/q8.err"); $(grep '^arena:' "$out/q8.err")"
echo "digits model on QEMU Cortex-M4F: 360 predictions and the accuracy identical to the host's ($(tail -1 "$out/digits.fw" | sed 's/.*values = //')); $(grep '^arena:' "$out/digits.err")"
echo "minimal image on QEMU Cortex-M4F: fib results correct"
echo "firmware on QEMU Cortex-M4F: defmt output ($(stat -c %s "$out/fw.defmt") bytes of frames) decoded identical to the host's ($(wc -l <"$out/fw.out") lines); $(grep '^arena:' "$out/fw.err"); $(grep '^stack:' "$out/fw.err")"
