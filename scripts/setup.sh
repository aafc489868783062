#!/usr/bin/env bash
# Installs what the tests need, idempotently: it says what it will install first, installs only
# what is missing, and never removes, downgrades or upgrades what is installed. Sourced by
# scripts/test.sh; safe to run alone.
#
# Cross targets: prefer rustup's prebuilt ones; when rustup cannot download them, fall back to
# Debian's rustc-web toolchain with its library source and build `core` from source
# (`-Zbuild-std=core`, which also proves no `alloc` is needed). Exports HOSTRT_TOOLCHAIN.
set -euo pipefail

# riscv32imc has no atomic instructions (ESP32-C3): the core's atomics take portable-atomic's
# critical-section fallback there.
HOSTRT_NOSTD_TARGETS="thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imac-unknown-none-elf riscv32imc-unknown-none-elf"
export HOSTRT_NOSTD_TARGETS
# Linux targets whose tests run under qemu-user (scripts/qemu.sh).
HOSTRT_LINUX_TARGETS="aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf"
export HOSTRT_LINUX_TARGETS

have_targets() {
    local installed
    installed=$(rustup target list --installed 2>/dev/null) || return 1
    for t in $HOSTRT_NOSTD_TARGETS $HOSTRT_LINUX_TARGETS; do
        grep -qx "$t" <<<"$installed" || return 1
    done
}

# Installer output goes to this log (shown when a step fails), not to the terminal.
HOSTRT_SETUP_LOG=${HOSTRT_SETUP_LOG:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/setup.log}
mkdir -p "$(dirname "$HOSTRT_SETUP_LOG")"
export HOSTRT_SETUP_LOG

# Debian packages to install: only those missing (a package, or a command any package of the
# user's already provides, is left alone). `apt_release` picks another suite for one group.
apt_missing=()
apt_release=()
backports_list=/etc/apt/sources.list.d/hostrt-bookworm-backports.sources
want_packages() {
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || apt_missing+=("$p"); done
}
# `want_command CMD PACKAGE`: PACKAGE only where no CMD is on PATH.
want_command() {
    command -v "$1" >/dev/null 2>&1 || want_packages "$2"
}

# Installs what `want_*` collected, saying so first. Never removes, downgrades or upgrades an
# installed package (`--no-remove` makes apt stop rather than remove one; `--no-upgrade`
# leaves installed versions as they are). Without root (and without password-less sudo) it
# prints the command to run and stops.
install_missing() {
    [ ${#apt_missing[@]} -eq 0 ] && return 0
    local cmd=(apt-get install -y -q --no-install-recommends --no-upgrade --no-remove "${apt_release[@]}"
        "${apt_missing[@]}")
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if sudo -n true 2>/dev/null; then
            sudo=(sudo)
        else
            echo "setup: these Debian packages are missing: ${apt_missing[*]}" >&2
            echo "setup: run as root, then run this command again:" >&2
            echo "    apt-get update && ${cmd[*]}" >&2
            exit 1
        fi
    fi
    echo "setup: installing with apt-get (log: $HOSTRT_SETUP_LOG): ${apt_missing[*]} ${apt_release[*]}"
    if [ ${#apt_release[@]} -gt 0 ] && [ ! -e "$backports_list" ]; then
        printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            | "${sudo[@]}" tee "$backports_list" >/dev/null
    fi
    if ! { "${sudo[@]}" apt-get update -q && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" "${cmd[@]}"; } \
        >>"$HOSTRT_SETUP_LOG" 2>&1; then
        tail -n 20 "$HOSTRT_SETUP_LOG" >&2
        echo "setup: apt-get failed (above, and $HOSTRT_SETUP_LOG); nothing was removed" >&2
        exit 1
    fi
    apt_missing=()
}

# HOSTRT_FORCE_DEBIAN=1 exercises the fallback route on a machine where rustup works.
if [ "${HOSTRT_FORCE_DEBIAN:-0}" != 1 ] && command -v rustup >/dev/null 2>&1 \
    && { have_targets || { echo "setup: adding rustup targets: $HOSTRT_NOSTD_TARGETS $HOSTRT_LINUX_TARGETS" \
        && timeout 300 rustup target add $HOSTRT_NOSTD_TARGETS $HOSTRT_LINUX_TARGETS >>"$HOSTRT_SETUP_LOG" 2>&1; }; }; then
    HOSTRT_TOOLCHAIN=rustup
else
    echo "setup: rustup targets unavailable; using Debian rustc-web with -Zbuild-std" >&2
    want_packages rustc-web cargo-web rust-web-src lld
    HOSTRT_TOOLCHAIN=debian
fi
export HOSTRT_TOOLCHAIN

# QEMU for firmware images (Cortex-M under qemu-system-arm, RISC-V under qemu-system-riscv32)
# and user-mode QEMU for the aarch64/armv7 tests (scripts/qemu.sh); Linux cross linkers and
# target libc.
want_command qemu-system-arm qemu-system-arm
want_command qemu-system-riscv32 qemu-system-misc
want_command qemu-aarch64 qemu-user
# Where the machine's qemu-utils comes from Debian's backports, bookworm's QEMU 7.2 emulators
# cannot join it (their qemu-system-common is one that qemu-utils 10 breaks), so QEMU comes
# from the same backports suite (added as its own apt source).
if dpkg-query -W -f='${Version}' qemu-utils 2>/dev/null | grep -q '~bpo12'; then
    apt_release=(-t bookworm-backports)
    install_missing
    apt_release=()
fi
want_command aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
want_command arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf
want_packages libc6-dev-arm64-cross libc6-dev-armhf-cross
# clang compiles the Swift/Objective-C header as C, C++ and Objective-C (capi/tests/header.rs);
# a JDK runs the Android binding's Java classes on the host (capi/shared/tests/jni.rs).
want_command clang clang
want_command javac default-jdk-headless
# Vulkan on the CPU (lavapipe) for devices/vulkan's tests, and spirv-val for its shaders.
want_packages libvulkan1 mesa-vulkan-drivers
want_command spirv-val spirv-tools
install_missing

# ONNX's backend node tests are generated from the onnx package (scripts/onnx_node_tests.py);
# the version is pinned because import/tests/onnx_node_failures.txt names its cases.
if ! python3 -c 'import onnx, sys; sys.exit(onnx.__version__ != "1.23.2")' 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore onnx==1.23.2
fi

# Run cargo in a bare-metal firmware workspace (its own Cargo.toml and .cargo/config.toml).
firmware_cargo() {
    local dir=$1
    shift
    if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
        (cd "$dir" && cargo "$@")
    else
        # Debian's older cargo reads the `include` of the images' configs (targets/) only
        # behind -Zconfig-include (stable since cargo 1.94).
        local config=$PWD/targets/debian-toolchain.toml
        (cd "$dir" && PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 cargo --config "$config" -Zconfig-include "$@")
    fi
}

# Build a crate for a bare-metal target with the chosen toolchain.
cross_build() {
    local crate=$1 target=$2
    shift 2
    if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
        cargo build -q -p "$crate" --target "$target" --target-dir target/cross "$@"
    else
        PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 cargo build -q -Zbuild-std=core -p "$crate" --target "$target" \
            --target-dir target/cross-debian "$@"
    fi
}

# Run cargo for a Linux cross target (one of HOSTRT_LINUX_TARGETS) with the chosen toolchain:
# `linux_cargo TARGET SUBCOMMAND [args...]`. Its binaries run under qemu-user (cargo's runner),
# so `test` and `run` work as on the host. Build output goes to target/qemu-linux[-debian]
# of the repository, wherever it is called from.
linux_cargo() {
    local target=$1 sub=$2
    shift 2
    local var linker runner root
    var=$(tr 'a-z-' 'A-Z_' <<<"$target")
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    case $target in
        aarch64-unknown-linux-gnu) linker=aarch64-linux-gnu-gcc runner="qemu-aarch64 -L /usr/aarch64-linux-gnu" ;;
        armv7-unknown-linux-gnueabihf) linker=arm-linux-gnueabihf-gcc runner="qemu-arm -L /usr/arm-linux-gnueabihf" ;;
        *) echo "setup: no linker/runner known for $target" >&2; return 1 ;;
    esac
    if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
        env "CARGO_TARGET_${var}_LINKER=$linker" "CARGO_TARGET_${var}_RUNNER=$runner" \
            cargo "$sub" -q --manifest-path "$root/Cargo.toml" --target "$target" \
            --target-dir "$root/target/qemu-linux" "$@"
    else
        # std, panic_unwind and test built from Debian's rust-web-src.
        env "CARGO_TARGET_${var}_LINKER=$linker" "CARGO_TARGET_${var}_RUNNER=$runner" \
            PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 \
            cargo "$sub" -q -Zbuild-std --manifest-path "$root/Cargo.toml" --target "$target" \
            --target-dir "$root/target/qemu-linux-debian" "$@"
    fi
}

# Phone targets for the static libraries (cargo xtask libs): best effort; a target that
# cannot be installed is skipped by that step with a message.
HOSTRT_PHONE_TARGETS="aarch64-linux-android armv7-linux-androideabi x86_64-linux-android aarch64-apple-ios"
export HOSTRT_PHONE_TARGETS
if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
    missing_phone=$(comm -23 <(tr ' ' '\n' <<<"$HOSTRT_PHONE_TARGETS" | sort) <(rustup target list --installed | sort))
    if [ -n "$missing_phone" ]; then
        # shellcheck disable=SC2086
        echo "setup: adding rustup targets for the phone libraries: $missing_phone"
        timeout 300 rustup target add $missing_phone >>"$HOSTRT_SETUP_LOG" 2>&1 \
            || echo "setup: could not install the phone targets (cargo xtask libs skips them)" >&2
    fi
fi

# Nightly tools for the Miri and fuzz-smoke steps of scripts/test.sh. Best effort: when they
# cannot be installed (offline, Debian route) those steps say they are skipped.
if [ "$HOSTRT_TOOLCHAIN" = rustup ]; then
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        echo "setup: installing a nightly toolchain with Miri (for the Miri step)"
        timeout 600 rustup toolchain install nightly --profile minimal --component miri,rust-src \
            >>"$HOSTRT_SETUP_LOG" 2>&1 || echo "setup: could not install nightly with miri (Miri step will be skipped)" >&2
    fi
    if ! command -v cargo-fuzz >/dev/null 2>&1; then
        echo "setup: installing cargo-fuzz (for the fuzz smoke step)"
        timeout 900 cargo install -q --locked cargo-fuzz >>"$HOSTRT_SETUP_LOG" 2>&1 \
            || echo "setup: could not install cargo-fuzz (fuzz smoke will be skipped)" >&2
    fi
fi
