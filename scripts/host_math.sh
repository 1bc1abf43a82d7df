#!/usr/bin/env bash
# The host's vector math beside xsimd and Highway (Debian: libxsimd-dev,
# libhwy-dev, installed here when missing) and the C
# library: bench_host_math, JSON into OUT_DIR/math.json.
#   bash scripts/host_math.sh OUT_DIR
set -euo pipefail
out=${1:?usage: bash scripts/host_math.sh OUT_DIR}
cd "$(dirname "$0")/.."
bash scripts/setup.sh libxsimd-dev libhwy-dev
source scripts/env.sh
mkdir -p "$out"
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS" --target bench_host_math
lscpu >"$out/machine.txt" 2>/dev/null || true
"$FUSEX_BUILD_DIR/bench/bench_host_math" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/math.json" --benchmark_out_format=json
