#!/usr/bin/env bash
# Regenerates import/tests/models (TensorFlow Lite test models and their goldens) in a
# virtual environment with TensorFlow, tflite-micro and ai-edge-litert. By hand; CI only
# reads the committed files. Usage: bash scripts/make_tflite_models.sh [MODEL_NAME ...]
# With --float-layers [MODEL_NAME ...]: only the float32 models' per-layer samples in
# models.json, from the committed models and inputs (nothing rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HOSTRT_TF_VENV:-/opt/tflenv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q tensorflow-cpu tflite-micro ai-edge-litert numpy
    # Keras 2, whose LSTM converts to UNIDIRECTIONAL_SEQUENCE_LSTM (Keras 3's becomes a WHILE loop).
    "$venv/bin/pip" install -q --no-deps tf-keras==2.21.0
fi
TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" import/tests/models/make_models.py "$@"
