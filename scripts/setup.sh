#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for building fusex (idempotent);
# packages named as arguments too (scripts/host_math.sh: xsimd, Highway).
# The CUDA toolkit is optional; when /usr/local/cuda exists its nvcc is used.
set -euo pipefail

# clang-19 with libc++ and its runtimes: the sanitizer and fuzzing step
# (scripts/sanitize.sh).
packages=(g++ cmake ninja-build catch2 libopenblas-dev libbenchmark-dev libeigen3-dev pkg-config
          clang-19 libclang-rt-19-dev libc++-19-dev libc++abi-19-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  echo "fusex setup: installing ${missing[*]}"
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The benchmark report (scripts/rope_report.py, tested in --quick mode)
# reads JSON with pandas and plots with matplotlib, both from PyPI.
if ! python3 -c "import pandas, matplotlib" 2>/dev/null; then
  echo "fusex setup: installing pandas and matplotlib (PyPI)"
  pip_user=""
  if [ "$(id -u)" -ne 0 ]; then pip_user="--user"; fi
  python3 -m pip install -q $pip_user pandas matplotlib || python3 -m pip install -q $pip_user --break-system-packages pandas matplotlib
fi

# The machine-code gate (ctest -L sass) reads SASS with nvdisasm, which the
# toolkit's nvcc package may lack; the PyPI wheel carries it.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if ! command -v nvdisasm >/dev/null 2>&1 && ! python3 -c "import nvidia, os, sys; sys.exit(0 if any(os.path.exists(os.path.join(p, 'cu13', 'bin', 'nvdisasm')) for p in nvidia.__path__) else 1)" 2>/dev/null; then
    echo "fusex setup: installing nvdisasm (PyPI nvidia-cuda-nvdisasm)"
    pip_user=""
    if [ "$(id -u)" -ne 0 ]; then pip_user="--user"; fi
    python3 -m pip install -q $pip_user nvidia-cuda-nvdisasm
  fi
fi
