#!/usr/bin/env bash
# The hostrt command line as a 32-bit program: built for armv7 Linux and run under qemu-arm,
# with the arguments given, from the current directory. Its use: arena figures for 32-bit
# firmware (docs/bef.md, "Arena sizes"), which a 64-bit hostrt cannot record:
#   bash scripts/hostrt32.sh compile prog.mlir -o prog.bef --arena-bound   (derived bounds)
#   bash scripts/hostrt32.sh run prog.bef --record-arena-peak=prog.arena.bef (measured)
# The first call builds it (a few minutes); later ones start at once.
set -euo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh" >&2
linux_cargo armv7-unknown-linux-gnueabihf run --release -p hostrt --bin hostrt -- "$@"
