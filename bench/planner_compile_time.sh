#!/usr/bin/env bash
# Measures the compile-time cost of planning a 500-node graph with g++: the
# same translation unit compiled with and without the plan; the difference
# is the partitioner's time. Usage: bash bench/planner_compile_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-std=c++20 -O0 -fsyntax-only -fconstexpr-ops-limit=4294967296 -Iinclude -Itests)
t0=$(date +%s.%N)
g++ "${flags[@]}" -DFUSEX_SCALE_BASELINE tests/test_planner_scale.cpp
t1=$(date +%s.%N)
g++ "${flags[@]}" tests/test_planner_scale.cpp
t2=$(date +%s.%N)
python3 - "$t0" "$t1" "$t2" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:])
print(f"graph capture and parsing: {t1 - t0:.2f} s")
print(f"with the plan:             {t2 - t1:.2f} s")
print(f"partitioning 500 nodes:    {(t2 - t1) - (t1 - t0):.2f} s (g++ {__import__('subprocess').run(['g++','-dumpfullversion'],capture_output=True,text=True).stdout.strip()})")
PY
