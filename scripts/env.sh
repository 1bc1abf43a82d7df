# Sourced by the build scripts: puts the CUDA toolkit's nvcc on PATH if it is
# installed in the default place but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
FUSEX_BUILD_DIR="${FUSEX_BUILD_DIR:-build}"
FUSEX_JOBS="${FUSEX_JOBS:-$(nproc)}"
