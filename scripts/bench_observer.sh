#!/usr/bin/env bash
# What the observer hook costs (docs/profiling.md), by hand, in one run:
# 1. hostrt-core's executor benchmark (TFRT's bef_perf graphs, the executor rows) with the
#    hook compiled in and no observer installed, against the same benchmark with the hook
#    compiled out (`--cfg hostrt_no_observer_hook`, its own target directory), then the
#    first again, so the table shows the noise beside the difference;
# 2. a Recorder profiling and tracing, per kernel (std-shim/benches/observer.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
filter='hostrt executor'
bench() { cargo bench -q -p hostrt-core --bench executor -- --noplot "$@" "$filter" >&2; }
bench --save-baseline hook
RUSTFLAGS="--cfg hostrt_no_observer_hook" CARGO_TARGET_DIR="$PWD/target/no-observer-hook" bench --save-baseline none
bench --save-baseline hook_again
python3 - <<'PY'
import glob, json, os
def median(path):
    return json.load(open(path))["median"]["point_estimate"]
print(f"{'benchmark':<72}{'no hook':>10}{'hook':>10}{'again':>10}{'ratios':>14}")
for path in sorted(glob.glob("target/criterion/*/*/hook/estimates.json")):
    bench = os.path.relpath(os.path.dirname(os.path.dirname(path)), "target/criterion")
    none = os.path.join("target/no-observer-hook/criterion", bench, "none/estimates.json")
    again = os.path.join("target/criterion", bench, "hook_again/estimates.json")
    if not (os.path.exists(none) and os.path.exists(again)):
        continue
    a, b, c = median(none) / 1e3, median(path) / 1e3, median(again) / 1e3
    print(f"{bench:<72}{a:>9.2f}u{b:>9.2f}u{c:>9.2f}u{b / a:>7.3f}{c / a:>7.3f}")
PY
cargo bench -q -p hostrt-std --bench observer -- --noplot 2>&1 | grep -E "^observer|time:"
