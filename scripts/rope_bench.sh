#!/usr/bin/env bash
# The seed's benchmark, whole: the fusex rows (bench_rope), the PyTorch rows
# (tools/rope_bench_torch.py, when torch and litgpt import) and the report,
# into OUT_DIR. Extra arguments go to both drivers' common flags:
#   bash scripts/rope_bench.sh OUT_DIR [--quick] [--t-cap=N] [--layout=grouped]
set -euo pipefail
out=${1:?usage: bash scripts/rope_bench.sh OUT_DIR [--quick] [--t-cap=N] [--layout=blocks|grouped]}
shift
cd "$(dirname "$0")/.."
source scripts/env.sh
mkdir -p "$out"
fx_args=() py_args=()
for a in "$@"; do
  case "$a" in
    --quick) fx_args+=(--quick); py_args+=(--quick) ;;
    --t-cap=*) fx_args+=("$a"); py_args+=(--t-cap "${a#--t-cap=}") ;;
    --layout=*) fx_args+=("$a"); py_args+=(--layout "${a#--layout=}") ;;
    *) echo "rope_bench.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS" --target bench_rope
t0=$SECONDS
"$FUSEX_BUILD_DIR/bench/bench_rope" "${fx_args[@]}" --benchmark_min_time=0.05 \
  --benchmark_out="$out/fusex.json" --benchmark_out_format=json >"$out/fusex.log"
echo "rope_bench: fusex rows in $((SECONDS - t0)) s"
files=("$out/fusex.json")
if python3 -c "import torch, litgpt" 2>/dev/null; then
  t0=$SECONDS
  python3 tools/rope_bench_torch.py "${py_args[@]}" --min-time 0.05 --out "$out/torch.json" 2>"$out/torch.log"
  echo "rope_bench: torch rows in $((SECONDS - t0)) s"
  files+=("$out/torch.json")
else
  echo "rope_bench: torch or litgpt does not import; no PyTorch rows (pip install torch litgpt)"
fi
python3 scripts/rope_report.py --out "$out/report" "${files[@]}"
