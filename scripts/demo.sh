#!/usr/bin/env bash
# Builds and runs the main job: the quickstart, then the Pythia block demo (the
# seed's comparison at Pythia-6.9b shapes, plans only, and a pythia-70m-sized
# block forward and backward on the host), the seed's cases and a gradient example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS" --target quickstart pythia_block seed_cases grad_mlp
"$FUSEX_BUILD_DIR/examples/quickstart"
"$FUSEX_BUILD_DIR/examples/pythia_block"
"$FUSEX_BUILD_DIR/examples/seed_cases"
"$FUSEX_BUILD_DIR/examples/grad_mlp"
