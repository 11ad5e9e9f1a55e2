#!/usr/bin/env bash
# Runs Debian's python (or $TROUPE_PYTHON) for the worker's scripts. Without an importable torch the
# scripts are skipped with a message, so a machine without torch still passes `npm test`.
set -uo pipefail
cd "$(dirname "$0")/.."
py=${TROUPE_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
  echo "engine-torch-worker: SKIPPED — '$py -c \"import torch\"' fails (install python3-torch, see tools/system-deps.sh)" >&2
  exit 0
fi
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" "$@"
