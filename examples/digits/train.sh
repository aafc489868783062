#!/usr/bin/env bash
# Regenerates examples/firmware/programs/digits.mlir, digits_q8.mlir (int8) and
# examples/app-c/digits.mlir from examples/digits/train.py in a virtual environment with
# pinned numpy and scikit-learn (target/digits-venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/digits-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q numpy==2.4.6 scikit-learn==1.9.1
"$venv/bin/python" examples/digits/train.py >examples/firmware/programs/digits.mlir
"$venv/bin/python" examples/digits/train.py --app >examples/app-c/digits.mlir
"$venv/bin/python" examples/digits/train.py --int8 >examples/firmware/programs/digits_q8.mlir
