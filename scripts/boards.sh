#!/usr/bin/env bash
# Builds the firmware images for the build-only boards of targets/ (no QEMU model for them):
# the link proves the image fits the board's memory map (cortex-m-rt and riscv-rt check it).
#   nrf52840, stm32f411   examples/firmware's minimal and example images (thumbv7em)
#   esp32c3               qemu-tests/riscv's image for riscv32imc, the instruction set with
#                         no atomics (the same image runs under QEMU in scripts/qemu.sh)
# Each image's own target directory: switching boards re-runs only its build script and the
# final link (the dependencies are the same), so this adds seconds, not a build, to CI.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

show() {
    local board=$1 elf=$2
    if command -v size >/dev/null 2>&1; then
        size -A "$elf" | awk -v b="$board" -v e="$(basename "$elf")" '
            /^\.(vector_table|text|rodata|data|init\.rust|eh_frame)[ ]/ { flash += $2 }
            /^\.(data|bss)[ ]/ { ram += $2 }
            END { printf "  %-10s %-26s flash %6d bytes, static RAM %6d bytes\n", b, e, flash, ram }'
    else
        echo "  $board $(basename "$elf"): linked"
    fi
}
for board in nrf52840 stm32f411; do
    firmware_cargo examples/firmware build -q --release --bin hostrt-firmware-example \
        --config "$PWD/targets/$board/cargo.toml"
    firmware_cargo examples/firmware build -q --release --bin minimal --no-default-features \
        --config "$PWD/targets/$board/cargo.toml"
    for bin in minimal hostrt-firmware-example; do
        show "$board" "examples/firmware/target/thumbv7em-none-eabihf/release/$bin"
    done
done
firmware_cargo qemu-tests/riscv build -q --release --config "$PWD/targets/esp32c3/cargo.toml"
show esp32c3 "qemu-tests/riscv/target/riscv32imc-unknown-none-elf/release/hostrt-qemu-riscv"
# Leave the example built for its QEMU board again (a later `cargo run` would relink anyway).
firmware_cargo examples/firmware build -q --release --bin hostrt-firmware-example
firmware_cargo examples/firmware build -q --release --bin minimal --no-default-features
