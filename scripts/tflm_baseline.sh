#!/usr/bin/env bash
# Baseline for the imported-model firmware images: TensorFlow Lite Micro (TFLM) on QEMU
# mps2-an386 (Cortex-M4F), once with Arm's CMSIS-NN kernels and once with TFLM's reference
# kernels, on the same five int8 .tflite models and inputs the hostrt images run
# (import/tests/models/*), counting instructions per inference the way hostrt does
# (targets/mps2-an386/instructions.rs: SysTick on the core clock, `-icount shift=0`,
# calibrated on a 2,000,000-instruction subs/bne loop). Prints one table.
#
# Nothing third-party is vendored here: TFLM and its dependencies are built from source
# trees passed in, in a work directory outside the repository. Our own sources (main,
# startup, linker script, the model-to-C converter) are in scripts/tflm-baseline/.
#
# Usage:
#   TFLM_SRC=/path/to/tflite-micro TFLM_DEPS=/path/to/deps scripts/tflm_baseline.sh [all|libs|images|run]
# Source trees (plain directories, no .git needed), each settable on its own; the default
# of each is $TFLM_DEPS/<name>. Versions pinned by TFLM 90b983c2's download scripts:
#   TFLM_SRC         tensorflow/tflite-micro       90b983c2
#   FLATBUFFERS_SRC  google/flatbuffers            v25.9.23    ($TFLM_DEPS/flatbuffers)
#   GEMMLOWP_SRC     google/gemmlowp               719139ce    ($TFLM_DEPS/gemmlowp)
#   RUY_SRC          google/ruy                    d3712831    ($TFLM_DEPS/ruy)
#   CMSIS_SRC        ARM-software/CMSIS_6          5782d6f8    ($TFLM_DEPS/CMSIS_6)
#   CORTEX_DFP_SRC   ARM-software/Cortex_DFP       c2c70a97    ($TFLM_DEPS/Cortex_DFP)
#   CMSIS_NN_SRC     ARM-software/CMSIS-NN         4ab83cc3    ($TFLM_DEPS/CMSIS-NN)
#   KISSFFT_SRC      mborgerding/kissfft           v130        ($TFLM_DEPS/kissfft)
# Other settings: TFLM_BASELINE_WORK (work directory, default /work/tflm-baseline/work),
# JOBS (make -j, default 2), KERNELS (default "cmsis_nn reference"), MODELS (default the
# five models), QEMU_TIMEOUT (seconds per run, default 600).
# One way to get the trees (TFLM's makefiles would download the same archives):
#   git -C <clone> archive <commit-or-tag> | tar x -C "$TFLM_DEPS/<name>"
# Needs: gcc-arm-none-eabi, libnewlib-arm-none-eabi and libstdc++-arm-none-eabi-newlib (the
# C++ headers), qemu-system-arm, make, patch, python3 (TFLM's makefiles import numpy and
# pillow while parsing: a venv is made in the work directory when they are missing).
# Steps: `libs` builds libtensorflow-microlite.a per kernel set (7-8 min each at -j2 on a
# 2-core machine; make skips what is up to date), `images` links one ELF per model and
# kernel set, `run` runs them on QEMU and prints the table; `all` (default) does all three.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
HERE=$REPO/scripts/tflm-baseline
WORK=${TFLM_BASELINE_WORK:-/work/tflm-baseline/work}
JOBS=${JOBS:-2}
KERNELS=${KERNELS:-"cmsis_nn reference"}
MODELS=${MODELS:-"ds_cnn_i8 mobilenet_v1_vww_i8 resnet8_i8 autoencoder_i8 mobilenet_v1_person_i8"}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-600}
MODEL_DIR=$REPO/import/tests/models
STEP=${1:-all}
case $STEP in all | libs | images | run) ;; *)
    echo "usage: $0 [all|libs|images|run]" >&2
    exit 2
    ;;
esac

die() {
    echo "tflm_baseline: $*" >&2
    exit 1
}

for tool in arm-none-eabi-gcc arm-none-eabi-g++ arm-none-eabi-size qemu-system-arm python3 make patch; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm make patch)"
done
echo '#include <cstddef>' | arm-none-eabi-g++ -mcpu=cortex-m4 -x c++ -fsyntax-only - 2>/dev/null ||
    die "arm-none-eabi-g++ has no C++ headers (apt-get install -y --no-install-recommends libstdc++-arm-none-eabi-newlib)"
TOOLCHAIN_ROOT=$(dirname "$(command -v arm-none-eabi-gcc)")/
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
TREE=$WORK/tflite-micro
MAKEDIR=$TREE/tensorflow/lite/micro/tools/make
DL=$MAKEDIR/downloads

# --- Python with numpy and pillow, for TFLM's makefiles ---------------------------------
if ! python3 -c 'import numpy, PIL' 2>/dev/null; then
    if [ ! -x "$WORK/venv/bin/python3" ] || ! "$WORK/venv/bin/python3" -c 'import numpy, PIL' 2>/dev/null; then
        python3 -m venv "$WORK/venv"
        "$WORK/venv/bin/pip" install -q numpy pillow
    fi
    export PATH=$WORK/venv/bin:$PATH
fi

# --- The source tree and its downloads folder ---------------------------------------------
src_var() { # name of the variable, default subfolder of $TFLM_DEPS
    local var=$1 sub=$2 val=${!1:-}
    if [ -z "$val" ] && [ -n "${TFLM_DEPS:-}" ]; then val=$TFLM_DEPS/$sub; fi
    [ -n "$val" ] || die "set $var (or TFLM_DEPS with a $sub folder in it)"
    [ -d "$val" ] || die "$var=$val is not a directory"
    (cd "$val" && pwd)
}

copy_tree() { # src dest: a copy without .git
    rm -rf "$2"
    mkdir -p "$2"
    tar -C "$1" --exclude=.git -cf - . | tar -C "$2" -xf -
}

# A folder of downloads/ is (re)made only when its stamp (the source path) differs, then
# its mtime is set back: every TFLM object depends on these folders.
OLD_TIME=200001010000
prepare_dep() { # folder-under-downloads source [patch]
    local dest=$DL/$1 src=$2 patchfile=${3:-}
    if [ "$(cat "$dest/.tflm-baseline-src" 2>/dev/null)" != "$src${patchfile:+ + $patchfile}" ]; then
        echo "tflm_baseline: downloads/$1 <- $src${patchfile:+ (patched: ${patchfile#"$TREE"/})}"
        copy_tree "$src" "$dest"
        if [ "$1" = flatbuffers ]; then # as flatbuffers_download.sh does
            find "$dest" \( -name BUILD -o -name BUILD.bazel \) -delete
        fi
        if [ -n "$patchfile" ]; then
            patch -s -p1 -l -d "$dest" <"$patchfile"
        fi
        echo "$src${patchfile:+ + $patchfile}" >"$dest/.tflm-baseline-src"
    fi
    touch -t $OLD_TIME "$dest"
}

prepare_tree() {
    local tflm
    tflm=$(src_var TFLM_SRC tflite-micro)
    [ -f "$tflm/tensorflow/lite/micro/tools/make/Makefile" ] || die "TFLM_SRC=$tflm is not a tflite-micro tree"
    if [ "$(cat "$TREE/.tflm-baseline-src" 2>/dev/null)" != "$tflm" ]; then
        echo "tflm_baseline: copying $tflm to $TREE"
        copy_tree "$tflm" "$TREE"
        echo "$tflm" >"$TREE/.tflm-baseline-src"
    fi
    mkdir -p "$DL/pigweed" # an existing folder skips pigweed_download.sh's git clone
    touch -t $OLD_TIME "$DL/pigweed"
    prepare_dep gemmlowp "$(src_var GEMMLOWP_SRC gemmlowp)"
    prepare_dep ruy "$(src_var RUY_SRC ruy)"
    prepare_dep flatbuffers "$(src_var FLATBUFFERS_SRC flatbuffers)" "$MAKEDIR/flatbuffers.patch"
    prepare_dep kissfft "$(src_var KISSFFT_SRC kissfft)" "$TREE/third_party/kissfft/kissfft.patch"
    prepare_dep cmsis "$(src_var CMSIS_SRC CMSIS_6)"
    prepare_dep cmsis/Cortex_DFP "$(src_var CORTEX_DFP_SRC Cortex_DFP)"
    touch -t $OLD_TIME "$DL/cmsis"
    prepare_dep cmsis_nn "$(src_var CMSIS_NN_SRC CMSIS-NN)"
    touch -t $OLD_TIME "$DL"
}

tflm_make() { # kernels make-args...
    local kernels=$1
    shift
    local opt=()
    [ "$kernels" = reference ] || opt=(OPTIMIZED_KERNEL_DIR="$kernels")
    make -s -C "$TREE" -f tensorflow/lite/micro/tools/make/Makefile TARGET=cortex_m_generic \
        TARGET_ARCH=cortex-m4+fp TOOLCHAIN=gcc TARGET_TOOLCHAIN_ROOT="$TOOLCHAIN_ROOT" \
        BUILD_TYPE=release MICROLITE_CC_SIGNAL_KERNEL_SRCS= "${opt[@]}" "$@"
}

make_var() { # kernels VARIABLE: its value in TFLM's makefile
    tflm_make "$1" "print-$2" | sed -n "s/^$2=//p" | head -1
}

# --- Step 1: the libraries ------------------------------------------------------------------
build_libs() {
    for k in $KERNELS; do
        echo "tflm_baseline: building libtensorflow-microlite.a ($k kernels, -j$JOBS)"
        local start=$SECONDS
        tflm_make "$k" -j"$JOBS" microlite
        echo "tflm_baseline: $(make_var "$k" MICROLITE_LIB_PATH) ($((SECONDS - start)) s)"
    done
}

# --- Step 2: one image per model and kernel set ---------------------------------------------
build_images() {
    local gen=$WORK/gen
    mkdir -p "$gen"
    for m in $MODELS; do
        [ -f "$MODEL_DIR/$m.tflite" ] || die "no $MODEL_DIR/$m.tflite"
        python3 "$HERE/gen_model.py" "$m" "$MODEL_DIR/$m.tflite" "$MODEL_DIR/$m.input.npy" \
            "$MODEL_DIR/$m.output.npy" "$gen/$m.cc"
    done
    for k in $KERNELS; do
        local lib cxxflags ccflags includes out=$WORK/images/$k
        lib=$TREE/$(make_var "$k" MICROLITE_LIB_PATH)
        [ -f "$lib" ] || die "$lib missing: run the libs step first"
        # The library's own flags (defines such as TF_LITE_STATIC_MEMORY change struct
        # layouts), with the include paths made absolute.
        # Words with quotes (the CMSIS device-header defines and include, which our sources
        # do not use) would reach the compiler with their quotes; -MD is dropped too.
        cxxflags=$(make_var "$k" CXXFLAGS | tr ' ' '\n' | grep -v '["]' | grep -vx -- -MD | tr '\n' ' ')
        ccflags=$(make_var "$k" CCFLAGS | tr ' ' '\n' | grep -v '["]' | grep -vx -- -MD | tr '\n' ' ')
        includes=$(make_var "$k" INCLUDES | tr ' ' '\n' | grep -v '["]' | sed "s#^-I\([^/]\)#-I$TREE/\1#" | tr '\n' ' ')
        mkdir -p "$out"
        # shellcheck disable=SC2086
        (
            cd "$TREE"
            arm-none-eabi-gcc $ccflags -O2 -c "$HERE/startup.c" -o "$out/startup.o"
            arm-none-eabi-g++ $cxxflags $includes -O2 -c "$HERE/main.cc" -o "$out/main.o"
            for m in $MODELS; do
                arm-none-eabi-g++ $cxxflags $includes -O2 -I"$HERE" -c "$gen/$m.cc" -o "$out/$m.o"
                arm-none-eabi-g++ -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 \
                    --specs=nano.specs -nostartfiles -Wl,--gc-sections -T "$HERE/mps2_an386.ld" \
                    -Wl,-Map="$out/$m.map" -o "$out/$m.elf" \
                    "$out/startup.o" "$out/main.o" "$out/$m.o" "$lib" -lm
            done
        )
        echo "tflm_baseline: linked $out/{$(echo $MODELS | tr ' ' ',')}.elf"
    done
}

# --- Step 3: run and tabulate ----------------------------------------------------------------
section() { # elf section: its size from arm-none-eabi-size -A (0 when absent)
    arm-none-eabi-size -A "$1" | awk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print 0 }'
}

run_images() {
    local res=$WORK/results
    mkdir -p "$res"
    for k in $KERNELS; do
        for m in $MODELS; do
            local elf=$WORK/images/$k/$m.elf
            [ -f "$elf" ] || die "$elf missing: run the images step first"
            local rc=0
            timeout "$QEMU_TIMEOUT" qemu-system-arm -M mps2-an386 -cpu cortex-m4 -nographic \
                -semihosting-config enable=on,target=native -icount shift=0 -kernel "$elf" \
                >"$res/$k.$m.out" 2>&1 || rc=$? # semihosting's output comes on stderr
            echo "rc: $rc" >>"$res/$k.$m.out"
        done
    done
    echo
    echo "TFLM 90b983c2 on QEMU mps2-an386 (Cortex-M4F, -icount shift=0), BUILD_TYPE=release, int8-only kernels"
    echo "instructions: one Invoke() after AllocateTensors and a warm-up Invoke (SysTick, calibrated as hostrt)"
    echo "flash(runtime) = .text + .rodata - model bytes (test input/expected output are in .testdata, not counted)"
    echo "other = .ARM.exidx + .ARM.extab + .init_array (flash, not in runtime); .bss includes the fixed 256 KiB arena"
    echo "glue = this baseline's own code and constants in runtime (start-up, counting, printing, op registration)"
    echo "with_io = instructions of input copy + Invoke() + output comparison (what hostrt's images count per inference)"
    printf '%-24s %-9s %11s %11s %-7s %7s %7s %7s %5s %6s %5s %7s %7s %5s\n' model kernels instructions with_io output arena \
        .text .rodata .data .bss other model runtime glue
    for m in $MODELS; do
        for k in $KERNELS; do
            local elf=$WORK/images/$k/$m.elf out=$res/$k.$m.out
            local text rodata data bss other mbytes insns io ok arena glue
            io=$(sed -n 's/^instructions_with_io: //p' "$out")
            glue=$(python3 "$HERE/glue_size.py" "${elf%.elf}.map" "$m")
            other=$(($(section "$elf" .ARM.exidx) + $(section "$elf" .ARM.extab) + $(section "$elf" .init_array)))
            text=$(section "$elf" .text)
            rodata=$(section "$elf" .rodata)
            data=$(section "$elf" .data)
            bss=$(section "$elf" .bss)
            mbytes=$(stat -c %s "$MODEL_DIR/$m.tflite")
            insns=$(sed -n 's/^instructions: //p' "$out")
            arena=$(sed -n 's/^arena_used_bytes: //p' "$out")
            if grep -q '^output: equal' "$out"; then ok=equal; elif grep -q '^output: DIFFERENT' "$out"; then ok=DIFFERS; else ok=FAILED; fi
            printf '%-24s %-9s %11s %11s %-7s %7s %7s %7s %5s %6s %5s %7s %7s %5s\n' "$m" "$k" "${insns:--}" "${io:--}" "$ok" "${arena:--}" \
                "$text" "$rodata" "$data" "$bss" "$other" "$mbytes" $((text + rodata - mbytes)) "$glue"
        done
    done
    for k in $KERNELS; do
        for m in $MODELS; do
            echo
            echo "per operator, $m, $k kernels (op index, op, instructions; profiled run, total Invoke above excludes the probes):"
            grep '^op ' "$res/$k.$m.out" | awk '{ printf "  %3s %-20s %12s\n", $2, $3, $4 }' || true
            grep '^ops_sum:' "$res/$k.$m.out" | sed 's/^/  /' || true
        done
    done
    local failed=0
    for k in $KERNELS; do
        for m in $MODELS; do
            grep -q '^output: equal' "$res/$k.$m.out" || {
                echo "tflm_baseline: $m ($k): no matching output; see $res/$k.$m.out" >&2
                failed=1
            }
        done
    done
    return $failed
}

case $STEP in
all)
    prepare_tree
    build_libs
    build_images
    run_images
    ;;
libs)
    prepare_tree
    build_libs
    ;;
images)
    prepare_tree
    build_images
    ;;
run) run_images ;;
esac
