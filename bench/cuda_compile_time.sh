#!/usr/bin/env bash
# Measures nvcc's time and peak memory on a dGeLU translation unit
# (bench/compile/dgelu_cuda.cu), compiled as the fusex CMake target compiles
# CUDA (C++20, -O3, sm_90 machine code and compute_75 PTX), to an object file.
# Usage: bash bench/cuda_compile_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=c++20 -O3 -Iinclude "-gencode=arch=compute_90,code=sm_90" "-gencode=arch=compute_75,code=compute_75"
       -Xcudafe --max_cost_constexpr_call=1000000000 -Xcompiler -fconstexpr-ops-limit=4294967296 -c)
/usr/bin/time -f "nvcc: %e s wall, %M KiB peak resident" nvcc "${flags[@]}" bench/compile/dgelu_cuda.cu -o "$out/dgelu.o"
nvcc --version | tail -1
