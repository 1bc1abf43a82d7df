#!/usr/bin/env bash
# Builds and runs the main job: the quickstart example and the seed's cases.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS" --target quickstart seed_cases
"$FUSEX_BUILD_DIR/examples/quickstart"
"$FUSEX_BUILD_DIR/examples/seed_cases"
