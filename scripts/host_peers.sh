#!/usr/bin/env bash
# The host executor beside its peers, side by side in one run: rounds of
# bench_host_peers (fusex fused, Eigen Tensor, memcpy) alternating with
# tools/host_peers_torch.py (PyTorch eager, torch.compile), then the table
# of medians (tools/host_peers_report.py) into OUT_DIR/report.md. Installs
# torch and litgpt from PyPI when they do not import.
#   bash scripts/host_peers.sh OUT_DIR [--rounds=7] [--threads=2] [--quick] [--no-torch]
set -euo pipefail
out=${1:?usage: bash scripts/host_peers.sh OUT_DIR [--rounds=N] [--threads=N] [--quick] [--no-torch]}
shift
cd "$(dirname "$0")/.."
rounds=7 threads=2 quick=() torch=1 min_time=0.5
for a in "$@"; do
  case "$a" in
    --rounds=*) rounds=${a#--rounds=} ;;
    --threads=*) threads=${a#--threads=} ;;
    --quick) quick=(--quick); min_time=0.05 ;;
    --no-torch) torch=0 ;;
    *) echo "host_peers.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
source scripts/env.sh
if [ "$torch" = 1 ] && ! python3 -c "import torch, litgpt" 2>/dev/null; then
  echo "host_peers: installing torch and litgpt (PyPI)"
  pip_user=""
  if [ "$(id -u)" -ne 0 ]; then pip_user="--user"; fi
  python3 -m pip install -q $pip_user torch litgpt || python3 -m pip install -q $pip_user --break-system-packages torch litgpt
fi
mkdir -p "$out"
cmake -S . -B "$FUSEX_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$FUSEX_BUILD_DIR" -j "$FUSEX_JOBS" --target bench_host_peers
lscpu >"$out/machine.txt" 2>/dev/null || true
files=()
for r in $(seq 1 "$rounds"); do
  "$FUSEX_BUILD_DIR/bench/bench_host_peers" "${quick[@]}" --threads="$threads" --benchmark_min_time="$min_time" \
    --benchmark_out="$out/fusex-$r.json" --benchmark_out_format=json >"$out/fusex-$r.log"
  files+=("$out/fusex-$r.json")
  if [ "$torch" = 1 ]; then
    python3 tools/host_peers_torch.py "${quick[@]}" --threads "$threads" --min-time "$min_time" \
      --out "$out/torch-$r.json" 2>"$out/torch-$r.log"
    files+=("$out/torch-$r.json")
  fi
  echo "host_peers: round $r of $rounds done"
done
python3 tools/host_peers_report.py --out "$out" "${files[@]}"
