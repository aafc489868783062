#!/usr/bin/env bash
# Miri: the undefined-behaviour check of hostrt-core's unit tests and of whole programs run by
# the executor. Needs a nightly toolchain with the miri component (scripts/setup.sh installs
# one); without it, says so and succeeds. scripts/test.sh runs it alongside its other steps:
# it builds in target/miri with the nightly toolchain, a build directory no other step uses.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "skipped: no nightly toolchain with the miri component on this machine"
    exit 0
fi
# Leaks are the tests' deliberately leaked 'static arenas; embedded-alloc's init takes an
# address as usize, so provenance stays permissive.
export MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-ignore-leaks"
cargo +nightly miri test -q -p hostrt-core --lib --target-dir target/miri -- --skip concurrent
# Whole programs through the executor: arguments and shared results, a non-strict call, and
# stream tasks that share one block (about a minute).
cargo +nightly miri test -q -p hostrt-core --test executor --target-dir target/miri -- \
    arguments_and_multiple non_strict stream_tasks
# Scalar registers: register words written and read in place of values, escaping results,
# cancellation (docs/execution.md, "Scalar registers").
cargo +nightly miri test -q -p hostrt-core --test scalar_registers --target-dir target/miri -- \
    scalar_programs_compute a_cancelled_request the_load_plans functions_sharing scalar_kernels_on_async
# Prepared state: the load's table of per-use blocks, read by the run and given back
# (docs/execution.md, "Prepared state").
cargo +nightly miri test -q -p hostrt-core --test prepared --target-dir target/miri
echo "miri: $SECONDS s"
