#!/usr/bin/env bash
# The torch tests (ctest -L torch): build the extension (examples/torch) into
# FUSEX_TORCH_BUILD, then run one test file. Exit 77 (skipped) when torch or
# litgpt cannot be imported; scripts/test.sh installs both first
# (scripts/setup_torch.sh), so CI never skips them.
# usage: run.sh PYTHON build|TEST_FILE [ARGS...]
set -euo pipefail
python=$1
shift
if ! "$python" -c "import torch, litgpt" >/dev/null 2>&1; then
  echo "torch tests: torch and litgpt are not importable here (bash scripts/setup_torch.sh); skipped"
  exit 77
fi
if [ "$1" = build ]; then
  exec "$python" -c "import fusex_torch, sys; print('fusex_torch built in', fusex_torch.build())"
fi
exec "$python" "$@"
