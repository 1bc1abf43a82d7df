#!/usr/bin/env bash
# The GPU checks, one command for a machine with an NVIDIA GPU:
#   1. builds the CUDA tests and benchmarks with every core (sm_90 machine code);
#   2. runs the CUDA tests (Catch2, label gpu);
#   3. runs them under compute-sanitizer: memcheck on all (but the one over
#      2^31 elements), racecheck and synccheck on the row and column kernels;
#   4. runs the CUDA benchmarks with JSON output, each case beside a
#      device-to-device copy of its minimum bytes in the same run;
#   5. writes each fused kernel's time as a percentage of that copy, as
#      markdown and JSON (tools/gpu_report.py), into OUT_DIR;
#   6. measures the CUDA launch cost that plan/launch_cost.hpp records
#      (launch_cost.json);
#   7. builds and runs the block demos with their CUDA step (examples/*_cuda);
#   8. where torch is installed, the PyTorch extension's ops on CUDA tensors.
#
#   bash scripts/gpu_check.sh OUT_DIR
#
# Catch2 and Google Benchmark come from the system, or, on a machine that
# reaches no package registry, from Debian packages placed in .debs/ (for
# example `apt-get download catch2 libbenchmark-dev libbenchmark1debian`),
# unpacked into .deps/. Steps that fail are reported and the others still
# run; the exit status is that of the first failure.
set -uo pipefail
out=${1:?usage: bash scripts/gpu_check.sh OUT_DIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/env.sh
status=0
step() {  # step NAME COMMAND...: runs a step, logs it to OUT_DIR/NAME.log
  local name=$1
  shift
  echo "== $name"
  local t0=$SECONDS
  if "$@" >"$out/$name.log" 2>&1; then
    echo "   ok ($((SECONDS - t0)) s)"
  else
    local rc=$?
    echo "   FAILED with status $rc ($((SECONDS - t0)) s); the end of $out/$name.log:"
    tail -n 30 "$out/$name.log"
    [ "$status" -eq 0 ] && status=$rc
  fi
}

prefix=()
if [ -d .debs ]; then
  mkdir -p .deps
  for f in .debs/*.deb; do dpkg -x "$f" .deps; done
  prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
  export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
build=build-gpu
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$out/device.txt" 2>&1 || true
step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real \
  "${prefix[@]}"
step build cmake --build "$build" -j "$(nproc)" --target test_cuda_executor test_cuda_layouts test_cuda_streams test_cuda_conformance test_cuda_property \
  bench_seed_cuda bench_grad_cuda bench_rope_cuda bench_launch_cuda
step tests ctest --test-dir "$build" -L gpu --output-on-failure

sanitize() {  # sanitize TOOL TEST [FILTER]
  compute-sanitizer --tool "$1" --error-exitcode 1 "$build/tests/cuda/$2" ${3:+"$3"}
}
if command -v compute-sanitizer >/dev/null 2>&1; then
  step memcheck_executor sanitize memcheck test_cuda_executor
  step memcheck_layouts sanitize memcheck test_cuda_layouts "~[large]"
  step memcheck_streams sanitize memcheck test_cuda_streams
  step racecheck_rows sanitize racecheck test_cuda_executor "cuda: pointwise, row and column groups, matmul, remaps"
  step synccheck_rows sanitize synccheck test_cuda_executor "cuda: pointwise, row and column groups, matmul, remaps"
else
  echo "== compute-sanitizer is not on PATH: sanitizer steps not run" | tee "$out/sanitizer.log"
fi

step bench_seed "$build/bench/bench_seed_cuda" --benchmark_out="$out/bench_seed.json" --benchmark_out_format=json \
  --benchmark_min_time=0.05
step bench_grad "$build/bench/bench_grad_cuda" --benchmark_out="$out/bench_grad.json" --benchmark_out_format=json \
  --benchmark_min_time=0.05
# The seed's benchmark over the LitGPT configs (T capped at 2048 so that the
# float64 checks on the host stay within the budget), and its report.
step bench_rope timeout 300 "$build/bench/bench_rope_cuda" --device=cuda --t-cap=2048 \
  --benchmark_out="$out/bench_rope.json" --benchmark_out_format=json --benchmark_min_time=0.02
step rope_report python3 scripts/rope_report.py --out "$out/rope" "$out/bench_rope.json"
step report python3 tools/gpu_report.py --out "$out" "$out/bench_seed.json" "$out/bench_grad.json"
[ -f "$out/report.md" ] && cat "$out/report.md"
# What a launch costs here: copy launch_us, stream_GBps into plan/launch_cost.hpp.
step launch_cost "$build/bench/bench_launch_cuda" --benchmark_out="$out/launch_cost.json" --benchmark_out_format=json
grep -h "launch_cost" "$out/launch_cost.log" 2>/dev/null

# Last, as the slowest to build: the block demos on the GPU (a training
# step of a pythia-70m-sized and a LLaMA GQA block, timed, checked against
# the reference executor).
step build_blocks cmake --build "$build" -j "$(nproc)" --target pythia_block_cuda llama_block_cuda
step pythia_block "$build/examples/pythia_block_cuda"
step llama_block "$build/examples/llama_block_cuda"
grep -h "step\|CUDA" "$out/pythia_block.log" "$out/llama_block.log" 2>/dev/null

# The PyTorch extension's nvcc build on CUDA tensors (docs/torch.md), when
# this machine's Python has torch and litgpt (it reaches no registry to
# install them).
if python3 -c "import torch, litgpt; assert torch.cuda.is_available()" 2>/dev/null; then
  step torch_cuda env FUSEX_TORCH_CUDA=1 FUSEX_TORCH_BUILD="$build/torch-ext-cuda" PYTHONPATH=examples/torch \
    python3 tests/torch/test_ops.py OnCuda
else
  echo "== torch_cuda: torch with CUDA and litgpt are not importable here; not run" | tee "$out/torch_cuda.log"
fi
echo "gpu_check: done in $SECONDS s, status $status; files in $out"
exit "$status"
