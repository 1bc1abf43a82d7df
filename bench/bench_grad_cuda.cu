// CUDA benchmarks of the forward and backward of gelu, layer_norm, rms_norm
// and qkv split + rope (Llama-3-8B): fused and unfused plans of the
// hand-derived backward, the fused plan of the prim-VJP backward, and a
// device-to-device copy of each fused plan's minimum bytes in the same run.
// Without a GPU it prints a note and runs nothing.
#include <cstdio>

#include "cuda_timing.hpp"
#include "grad_cases.hpp"

namespace fx = fusex;

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: the CUDA benchmarks did not run\n");
    return 0;
  }
  const auto run = [](const std::string& name, auto plan, const auto& args) {
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      std::apply([&](const auto&... a) { bench::gpu::run_plan(st, plan, a...); }, args);
    })->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  const auto copy = [](const std::string& name, double bytes) {
    benchmark::RegisterBenchmark(name.c_str(), bench::gpu::copy_limit, bytes)->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  bench::grad_cases({8192, 8192, 16384, 4096, bench::llama3_8b}, run, copy);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
