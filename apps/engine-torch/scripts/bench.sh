#!/usr/bin/env bash
# `npm run bench`: the GPU benchmark when CUDA is available; elsewhere bench.py's refusal message
# and then its --cpu-smoke run (so the script passes without a GPU and still checks the code path).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${TROUPE_PYTHON:-/usr/bin/python3}
if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  exec bash scripts/python.sh bench/bench.py "$@"
fi
bash scripts/python.sh bench/bench.py "$@"
echo "bench: falling back to --cpu-smoke" >&2
exec bash scripts/python.sh bench/bench.py --cpu-smoke
