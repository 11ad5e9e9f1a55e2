#!/usr/bin/env bash
# The GPU engine's device check: generation tok/s and % of the HBM roofline at batch 64 and
# 256 (eager vs static cache + CUDA graph, identical tokens), the static/graph tests, learner MFU at
# 0.5B and 1.5B (plain and compiled blocks), and the default recipe through the trainer when node is
# there. Prints one table; writes it to $OUT/device-check.md (+ .json) when OUT is set.
#
#   bash apps/engine-torch/bench/device-check.sh            # on the GPU machine, from the repo root
#   bash apps/engine-torch/bench/device-check.sh --cpu-smoke  # anywhere: tiny models on CPU (plumbing only)
#
# Extra arguments go to bench/device_check.py (--skip gen,pytest,learner,compiled,trainer; --budget S).
# Every part runs under its own timeout and the whole under DEVICE_CHECK_BUDGET_S (default 420 s).
set -uo pipefail
cd "$(dirname "$0")/.."
# the interpreter: $TROUPE_PYTHON, else the python3 on PATH if it has torch (the GPU image's), else Debian's
py=${TROUPE_PYTHON:-}
if [ -z "$py" ]; then
  if python3 -c 'import torch' >/dev/null 2>&1; then py=python3; else py=/usr/bin/python3; fi
fi
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
  echo "device-check: '$py' cannot import torch (set TROUPE_PYTHON)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
exec "$py" bench/device_check.py "$@"
