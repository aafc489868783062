#!/usr/bin/env bash
# Runs every test of the project. This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Steps run fast to slow: format and lints, the workspace's tests, the command line and
# conformance, then cross builds and QEMU, phone libraries and fuzzing, while the loom model
# checks and Miri run in the background from the no_std builds on.
# Each prints its name when it starts and its time when it ends; a table of steps and times
# ends the run (also when a step fails, which it names).
step_names=()
step_times=()
current=""
started=$SECONDS
end_step() {
    [ -n "$current" ] || return 0
    local took=$((SECONDS - started))
    step_names+=("$current")
    step_times+=("$took")
    printf '    done: %s (%dm%02ds)\n' "$current" $((took / 60)) $((took % 60))
    current=""
}
step() {
    end_step
    current=$1
    started=$SECONDS
    printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*"
}
summary() {
    local rc=$?
    # A run stopped early stops the background steps too.
    if [ -n "${background_pid:-}" ]; then kill -- "-$background_pid" 2>/dev/null || true; fi
    if [ -n "$current" ]; then
        if [ "$rc" -ne 0 ]; then current="$current (FAILED)"; fi
        end_step
    fi
    printf '\n%-60s %8s\n' "step" "time"
    local total=0
    for i in "${!step_names[@]}"; do
        printf '%-60.60s %4dm%02ds\n' "${step_names[$i]}" $((step_times[i] / 60)) $((step_times[i] % 60))
        total=$((total + step_times[i]))
    done
    printf '%-60s %4dm%02ds\n' "total" $((total / 60)) $((total % 60))
    if [ "$rc" -ne 0 ]; then
        echo "FAILED (exit status $rc); installer output, if any, is in target/setup.log"
    fi
}
trap summary EXIT

step "set-up: what the tests need, installed where missing (scripts/setup.sh)"
source scripts/setup.sh

# On CI (a fresh checkout, built once), a build directory that no later step uses is removed
# once its step is done, so the run fits a small disk (paths from the repository root).
done_with() {
    if [ -n "${CI:-}" ]; then
        for d in "$@"; do rm -rf "$d"; done
    fi
}
# Nor does a build made once gain from incremental caches (1.4 GB of the dev profile's alone).
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

step "format"
cargo fmt --all -- --check

step "lints"
cargo clippy -q --workspace --all-targets -- -D warnings
# The core's defmt output (firmware only: an image links it with its global logger), and the
# core as bare metal compiles it (code under cfg(target_os = "none")).
cargo clippy -q -p hostrt-core --no-default-features --features defmt -- -D warnings
if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
    cargo clippy -q -p hostrt-core --no-default-features --target thumbv7em-none-eabihf -- -D warnings
fi
# The Rust example plugin is its own workspace (built by tools/tests/plugins.rs).
cargo fmt --manifest-path examples/plugins/rust/Cargo.toml -- --check
cargo clippy -q --manifest-path examples/plugins/rust/Cargo.toml --target-dir target/plugins-rust -- -D warnings

step "unit, integration and doc tests"
# The libraries the C, C++ and Java tests link against (cargo test builds only rlibs).
cargo build -q -p hostrt-c -p hostrt-c-shared
# Where lavapipe is installed (scripts/setup.sh), the Vulkan tests must run, not skip.
if [ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ]; then
    export HOSTRT_REQUIRE_VULKAN=1 XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
fi
# ONNX's backend node tests, generated from the onnx package that scripts/setup.sh installs.
rm -rf target/onnx-node
python3 scripts/onnx_node_tests.py target/onnx-node
export HOSTRT_REQUIRE_ONNX_NODE_TESTS=1
cargo test --workspace

step "examples: the quickstart, and every command of the example READMEs as written"
cargo run -q -p hostrt-core --example quickstart
bash scripts/example_readmes.sh

step "command line: every conformance program compiles, and disassembles back to the same BEF"
cargo build -q -p hostrt
conf=../shared/conformance/tfrt
if [ -d "$conf" ]; then
    out=$(mktemp -d)
    for f in "$conf"/*.mlir; do
        b=$(basename "$f" .mlir)
        target/debug/hostrt compile "$f" -o "$out/$b.bef"
        target/debug/hostrt dis "$out/$b.bef" > "$out/$b.dis.mlir"
        target/debug/hostrt compile "$out/$b.dis.mlir" -o "$out/$b.2.bef"
        cmp "$out/$b.bef" "$out/$b.2.bef"
        echo "$b.mlir: $(stat -c %s "$out/$b.bef") bytes, round trip identical"
    done
    rm -rf "$out"
else
    echo "skipped: $conf not found"
fi

step "TFRT conformance programs (hostrt check): every file passes"
if [ -d "$conf" ]; then
    target/debug/hostrt check "$conf"
else
    echo "skipped: $conf not found"
fi

step "benchmarks (one quick pass each, checking they run)"
cargo test -q --workspace --benches

# The loom model checks, then Miri (scripts/miri.sh), run in the background from here,
# alongside the firmware and QEMU steps, which leave a core idle while QEMU runs: each builds
# in a directory no other step uses (target/loom; target/miri with the nightly toolchain).
# They run in a process group of their own; the last step waits for them and prints their
# output.
background_started=$SECONDS
export -f done_with
setsid bash -c '
    set -euo pipefail
    echo "==> loom model checks"
    RUSTFLAGS="--cfg loom" cargo test -q -p hostrt-core-loom --release --target-dir target/loom
    echo "loom model checks: $SECONDS s"
    done_with target/loom
    echo "==> Miri (scripts/miri.sh)"
    bash scripts/miri.sh
    echo "loom and Miri: $SECONDS s"
' >target/background.log 2>&1 &
background_pid=$!

step "no_std builds of hostrt-core and hostrt-dsp with its kernels (no alloc, no global allocator): $HOSTRT_NOSTD_TARGETS"
for t in $HOSTRT_NOSTD_TARGETS; do
    cross_build hostrt-core "$t"
    cross_build hostrt-dsp "$t" --features kernels
    echo "built for $t"
done

step "firmware image linked with no global allocator (thumbv6m, thumbv7em); run on QEMU Cortex-M4F"
firmware_cargo qemu-tests/cortex-m build -q --target thumbv6m-none-eabi
echo "linked for thumbv6m-none-eabi"
cargo fmt --manifest-path qemu-tests/cortex-m/Cargo.toml -- --check
cargo fmt --manifest-path qemu-tests/checks/Cargo.toml -- --check
if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
    firmware_cargo qemu-tests/cortex-m clippy -q -- -D warnings
    firmware_cargo qemu-tests/checks clippy -q --target thumbv7em-none-eabihf -- -D warnings
fi
firmware_cargo qemu-tests/cortex-m run -q

step "DSP int8 kernels on QEMU Cortex-M4F: SMLAD path bit-exact with the portable one; instruction counts"
cargo fmt --manifest-path qemu-tests/dsp/Cargo.toml -- --check
firmware_cargo qemu-tests/dsp run -q --release

step "firmware example: BEF programs on QEMU Cortex-M4F, compared with the host; size gate; layer diff"
cargo fmt --manifest-path examples/firmware/Cargo.toml -- --check
if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
    firmware_cargo examples/firmware clippy -q -- -D warnings
    firmware_cargo examples/firmware clippy -q --bin minimal --no-default-features -- -D warnings
fi
bash scripts/firmware.sh
cargo xtask size
# Layer by layer, device against desktop: an off-by-one in the firmware's int8 average pool is
# named (docs/profiling.md, "Layer by layer").
HOSTRT=target/debug/hostrt bash scripts/compare_layers_selftest.sh mcu

step "build-only boards of targets/ (nRF52840, STM32F411, ESP32-C3): the images link in their memory maps"
bash scripts/boards.sh

step "QEMU: RISC-V image, harness self-test, armv7 Linux tests under qemu-user"
bash scripts/qemu.sh riscv selftest linux
done_with target/qemu-linux target/qemu-linux-debian target/cross \
    target/cross-debian examples/firmware/target qemu-tests/cortex-m/target qemu-tests/dsp/target \
    qemu-tests/riscv/target qemu-tests/checks/target

step "static libraries for phones (Android, iOS): symbols checked, linked size (cargo xtask libs); the C app on aarch64 Linux under qemu-user"
# Android x86_64 (the emulator's ABI: the host's architecture, Android's code of aarch64) is
# left to `cargo xtask libs` by hand.
cargo xtask libs aarch64-linux-android armv7-linux-androideabi aarch64-apple-ios
# The example app with the release archive `cargo xtask libs` built for its linked size
# (scripts/qemu.sh builds a debug one when there is none).
HOSTRT_APP_LIB=target/phone/aarch64-unknown-linux-gnu/release/libhostrt.a bash scripts/qemu.sh app
done_with target/qemu-app target/qemu-linux

step "Vulkan device crate for Android (ash loads libvulkan at run time: no NDK needed to build)"
if [ "$HOSTRT_TOOLCHAIN" = rustup ] && rustup target list --installed | grep -qx aarch64-linux-android; then
    # A library crate links nothing: type-checking it for the target proves as much.
    cargo check -q -p hostrt-vulkan --target aarch64-linux-android
    echo "checked hostrt-vulkan for aarch64-linux-android"
else
    echo "skipped: the aarch64-linux-android target is not installed"
fi
done_with target/phone target/aarch64-linux-android

step "fuzz smoke (5 s per target; the long runs are scripts/fuzz.sh)"
if cargo +nightly --version >/dev/null 2>&1 && command -v cargo-fuzz >/dev/null 2>&1; then
    cargo fmt --manifest-path fuzz/Cargo.toml -- --check
    bash scripts/fuzz.sh 5
else
    echo "skipped: needs a nightly toolchain and cargo-fuzz"
fi

step "loom model checks, then Miri (undefined-behaviour check of the core's unit tests and of programs run by the executor), in the background since the no_std builds"
background_rc=0
wait "$background_pid" || background_rc=$?
background_pid=""
cat target/background.log
echo "waited for them $((SECONDS - started)) s at the end, $((SECONDS - background_started)) s after their start"
[ "$background_rc" -eq 0 ]
