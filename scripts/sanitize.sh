#!/usr/bin/env bash
# The sanitizer step of the tests: host tests under ASan + UBSan and the
# libFuzzer target over run-time binding (bounded time), built with clang and
# libc++ in their own build tree (tests/sanitize). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
dir="${FUSEX_SANITIZE_BUILD_DIR:-build-sanitize}"
cxx="${FUSEX_SANITIZE_CXX:-clang++-19}"
cmake -S tests/sanitize -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=
cmake --build "$dir" -j "$FUSEX_JOBS"
ctest --test-dir "$dir" --output-on-failure -j "$FUSEX_JOBS" -L sanitize
