#!/usr/bin/env bash
# Runs the fuzz target for a bounded time, starting from the committed
# corpus (copied, so the source tree is not written to).
#   run_fuzz.sh FUZZER CORPUS WORK_DIR SECONDS
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 seconds=$4
rm -rf "$work" && mkdir -p "$work"
cp "$corpus"/* "$work"/ 2>/dev/null || true
# A single worker: the machine's cores go to the rest of the test run.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work"
