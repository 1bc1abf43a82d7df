#!/usr/bin/env bash
# litgpt.live: regenerate the reference data with the installed torch and
# litgpt, then run the block tests against it. Exit 77 (skipped) when torch
# or litgpt cannot be imported.
# usage: run_live.sh PYTHON SCRIPT OUT_DIR TEST_BINARY
set -euo pipefail
python=$1 script=$2 out=$3 test=$4
if ! "$python" -c "import torch, litgpt" >/dev/null 2>&1; then
  echo "litgpt.live: torch and litgpt are not importable here (pip install torch litgpt); skipped"
  exit 77
fi
"$python" "$script" --out "$out"
FUSEX_LITGPT_DATA=$out "$test"
