#!/usr/bin/env bash
# Builds and runs every test: host tests, negative-compile tests, and the
# CUDA translation units when nvcc is present (GPU tests skip without a GPU),
# then the sanitizer and fuzzing step (scripts/sanitize.sh, docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_torch.sh
source scripts/env.sh
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEX_BENCHMARKS_IN_ALL=OFF
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS"
ctest --test-dir "$FUSEX_BUILD_DIR" --output-on-failure -j "$FUSEX_JOBS"
bash scripts/sanitize.sh
