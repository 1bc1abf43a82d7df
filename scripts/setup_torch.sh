#!/usr/bin/env bash
# Installs what the torch tests (ctest -L torch) need from PyPI when it is not
# importable: torch (CPU use; the PyPI wheel, about 3 GB with its CUDA
# libraries, 1.5 min here) and litgpt, at the versions examples/torch is
# tested with (fusex_torch.litgpt subclasses litgpt 0.5.13's modules).
# Idempotent.
set -euo pipefail
if python3 -c "import torch, litgpt" 2>/dev/null; then exit 0; fi
echo "fusex setup: installing torch 2.15.0 and litgpt 0.5.13 (PyPI)"
pip_user=""
if [ "$(id -u)" -ne 0 ]; then pip_user="--user"; fi
python3 -m pip install -q $pip_user torch==2.15.0 litgpt==0.5.13 ||
  python3 -m pip install -q $pip_user --break-system-packages torch==2.15.0 litgpt==0.5.13
