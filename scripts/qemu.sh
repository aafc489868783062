#!/usr/bin/env bash
# Runs hostrt under QEMU:
#   riscv     the RISC-V firmware image (qemu-tests/riscv, riscv32imac, no global allocator) on
#             qemu-system-riscv32 `virt`, debug and size-optimised release builds, and a debug
#             build for riscv32imc (no atomic instructions, like the ESP32-C3)
#   selftest  harness self-test: each firmware image (cortex-m, riscv) built once with the
#             `deliberately-fail` feature must print `N passed, 1 failed` and exit non-zero,
#             while the normal build prints `N passed, 0 failed` and exits 0
#   linux     `cargo test` of hostrt-core (unit + integration; not benches) and of
#             hostrt-compiler, cross-compiled for armv7 Linux (32-bit: the difference from the
#             host that matters to both) and run under qemu-user as cargo's runner;
#             HOSTRT_QEMU_LINUX=all adds hostrt-core on aarch64 Linux (its only code of its
#             own there is gemm-f32's NEON kernel, which `app` runs too)
#   app       the C example app (examples/app-c) linked with libhostrt.a built for aarch64
#             Linux, run under qemu-aarch64 on the digits model: its output must equal what
#             `hostrt run` prints on this machine; with HOSTRT_APP_LIB naming an archive built
#             already (scripts/test.sh passes the release one of `cargo xtask libs`), that one
#   arena32   (by hand, not part of the default run: ~10 min) 32-bit arena figures: the arena
#             tests of tools/tests/arena_figures.rs built for armv7 Linux under qemu-user, where
#             `hostrt run --record-arena-peak` is the 32-bit build (docs/bef.md, "Arena sizes")
# Usage: bash scripts/qemu.sh [riscv] [selftest] [linux] [app] [arena32]
#        (no argument: the first four)
#
# Works with both toolchain routes of scripts/setup.sh (HOSTRT_TOOLCHAIN): rustup's prebuilt
# targets, or Debian rustc-web with -Zbuild-std (HOSTRT_FORCE_DEBIAN=1 forces the latter).
# HOSTRT_QEMU_COMPILER=0 leaves hostrt-compiler out of the Linux step; =all runs its tests on
# every Linux target the step runs, not only the 32-bit one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(riscv selftest linux app)
want() {
    local p
    for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
    return 1
}

step() { printf '\n==> %s\n' "$*"; }
elapsed() { echo "($((SECONDS - $1)) s)"; }

echo "qemu.sh: toolchain route: $HOSTRT_TOOLCHAIN"

# run_image DIR WANT_FAILED [cargo args...]: `cargo run` of a firmware image (its runner is
# QEMU; semihosting carries the output and the exit status back). Shows the output and checks
# the exit status and the closing `N passed, F failed` line. Sets IMAGE_PASSED to N.
IMAGE_PASSED=0
run_image() {
    local dir=$1 want_failed=$2
    shift 2
    local out rc=0 summary passed failed
    out=$(firmware_cargo "$dir" run -q "$@" 2>&1) || rc=$?
    printf '%s\n' "$out" | sed 's/^/    | /'
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out" | tail -n 1) || true
    if [ -z "$summary" ]; then
        echo "qemu.sh: $dir: no 'N passed, N failed' line (exit status $rc)" >&2
        return 1
    fi
    passed=${summary%% *}
    failed=${summary#*, }
    failed=${failed%% *}
    if [ "$want_failed" = 0 ]; then
        if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
            echo "qemu.sh: $dir: expected a passing run, got '$summary', exit status $rc" >&2
            return 1
        fi
    else
        if [ "$rc" -eq 0 ] || [ "$failed" -ne "$want_failed" ]; then
            echo "qemu.sh: $dir: expected $want_failed failed check(s) and a non-zero exit," \
                "got '$summary', exit status $rc" >&2
            return 1
        fi
    fi
    IMAGE_PASSED=$passed
    echo "    -> '$summary', exit status $rc: as expected"
}

if want riscv; then
    step "RISC-V firmware image (riscv32imac, no global allocator) on qemu-system-riscv32 virt"
    t0=$SECONDS
    cargo fmt --manifest-path qemu-tests/riscv/Cargo.toml -- --check
    if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
        firmware_cargo qemu-tests/riscv clippy -q -- -D warnings
        firmware_cargo qemu-tests/riscv clippy -q --features deliberately-fail -- -D warnings
    fi
    run_image qemu-tests/riscv 0
    echo "debug build and run $(elapsed "$t0")"

    t0=$SECONDS
    firmware_cargo qemu-tests/riscv build -q --release
    elf=qemu-tests/riscv/target/riscv32imac-unknown-none-elf/release/hostrt-qemu-riscv
    if command -v size >/dev/null 2>&1; then size -A "$elf" | grep -E '^\.(text|rodata|data|bss) ' || true; fi
    run_image qemu-tests/riscv 0 --release
    echo "release (opt-level z, LTO) build and run $(elapsed "$t0")"

    # The ESP32-C3's instruction set: no atomic instructions, so every atomic in the core goes
    # through portable-atomic's critical-section fallback. Same machine, same checks.
    t0=$SECONDS
    run_image qemu-tests/riscv 0 --target riscv32imc-unknown-none-elf
    echo "riscv32imc (no atomics) build and run $(elapsed "$t0")"
fi

if want selftest; then
    # The failing build shares the image's target dir: only the image's own crate differs, and
    # cargo puts back the binary of whichever feature set the next `cargo run` asks for.
    for img in cortex-m riscv; do
        step "harness self-test: qemu-tests/$img with one deliberately failing check"
        t0=$SECONDS
        run_image "qemu-tests/$img" 0
        normal=$IMAGE_PASSED
        run_image "qemu-tests/$img" 1 --features deliberately-fail
        if [ "$IMAGE_PASSED" -ne "$normal" ]; then
            echo "qemu.sh: qemu-tests/$img: the real checks passed $normal times normally," \
                "$IMAGE_PASSED times with the injected failure" >&2
            exit 1
        fi
        echo "self-test ok: a failing check fails the QEMU run $(elapsed "$t0")"
    done
fi

# linux_test TARGET [cargo test args...]: cargo test for a Linux target, run under qemu-user.
linux_test() {
    local target=$1
    shift
    linux_cargo "$target" test "$@"
}

if want linux; then
    # hostrt-core's integration tests (the loom checks are a crate of their own).
    core_tests=()
    for f in core/tests/*.rs; do
        core_tests+=(--test "$(basename "$f" .rs)")
    done
    linux_targets=armv7-unknown-linux-gnueabihf
    if [ "${HOSTRT_QEMU_LINUX:-}" = all ]; then linux_targets=$HOSTRT_LINUX_TARGETS; fi
    for target in $linux_targets; do
        step "hostrt-core tests on $target under qemu-user"
        t0=$SECONDS
        linux_test "$target" -p hostrt-core --lib "${core_tests[@]}"
        echo "hostrt-core on $target $(elapsed "$t0")"
        compiler=${HOSTRT_QEMU_COMPILER:-1}
        if [ "$compiler" = all ] || { [ "$compiler" = 1 ] && [ "${target%%-*}" = armv7 ]; }; then
            step "hostrt-compiler tests on $target under qemu-user"
            t0=$SECONDS
            # Left out: the two exhaustive truncation/byte-flip parser loops of text_fuzz.rs
            # (~60 s under qemu-aarch64 in a debug build; target-independent, run on the host).
            linux_test "$target" -p hostrt-compiler --lib --tests -- \
                --skip truncations_never_panic --skip byte_flips_never_panic
            echo "hostrt-compiler on $target $(elapsed "$t0")"
        fi
    done
fi

if want arena32; then
    step "32-bit arena figures: recorded by hostrt for armv7 Linux, checked under qemu-user"
    t0=$SECONDS
    HOSTRT_EXEC_WRAPPER="qemu-arm -L /usr/arm-linux-gnueabihf" \
        linux_test armv7-unknown-linux-gnueabihf -p hostrt --test arena_figures -- --nocapture
    echo "32-bit arena figures $(elapsed "$t0")"
fi

if want app; then
    step "C app with libhostrt.a on aarch64-unknown-linux-gnu under qemu-user"
    t0=$SECONDS
    target=aarch64-unknown-linux-gnu
    out=target/qemu-app
    mkdir -p "$out"
    built=""
    if [ -n "${HOSTRT_APP_LIB:-}" ] && [ -f "$HOSTRT_APP_LIB" ]; then
        lib=$HOSTRT_APP_LIB
        echo "app: $lib, built already"
    elif [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
        # The cdylib of the same package needs the cross linker too.
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
            cargo build -q -p hostrt-c --target $target --target-dir target/qemu-linux
        built=target/qemu-linux/$target/debug
    else
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc PATH=/usr/bin:$PATH \
            RUSTC_BOOTSTRAP=1 cargo build -q -Zbuild-std -p hostrt-c --target $target \
            --target-dir target/qemu-linux-debian
        built=target/qemu-linux-debian/$target/debug
    fi
    if [ -n "$built" ]; then
        # Under the name apps link (docs/embedding.md); cargo names it after the crate.
        lib=$built/libhostrt.a
        cp "$built/libhostrt_c.a" "$lib"
    fi
    aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror -I capi/include examples/app-c/main.c "$lib" \
        -ldl -lpthread -lm -o "$out/app"
    cargo build -q -p hostrt
    target/debug/hostrt compile examples/app-c/digits.mlir -o "$out/digits.bef"
    target/debug/hostrt run examples/app-c/digits.mlir | grep '^DenseHostTensor' >"$out/expected.txt"
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/app" "$out/digits.bef" >"$out/printed.txt"
    cmp "$out/expected.txt" "$out/printed.txt"
    echo "app on $target: classes identical to hostrt run ($(wc -c <"$lib") bytes of libhostrt.a) $(elapsed "$t0")"
fi

echo
echo "qemu.sh: all QEMU runs passed ($HOSTRT_TOOLCHAIN route, ${SECONDS} s)"
