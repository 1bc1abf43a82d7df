// CUDA benchmarks of the seed's cases under the fused, greedy-claim and
// unfused policies, timed with CUDA events, next to a device-to-device copy
// of the same minimum bytes measured in the same run (the physical limit).
// bytes_per_second counts the minimum bytes; counters give kernels and the
// modelled bytes. Without a GPU it prints a note and runs nothing.
#include <cstdio>

#include "bench_cases.hpp"
#include "cuda_timing.hpp"

namespace fx = fusex;

namespace {

using bench::gpu::copy_limit;
using bench::gpu::run_plan;

template <class Prog, class... Args>
void register_case(const std::string& name, Prog prog, const Args&... args) {
  const double min = fx::modelled_traffic(fx::partition(prog), fx::inputs(args...)).min_bytes;
  benchmark::RegisterBenchmark((name + "/copy_limit").c_str(), copy_limit, min)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((name + "/fused").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog), args...);
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((name + "/greedy").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog, fx::policy::greedy_claim<>{}), args...);
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((name + "/unfused").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog, fx::policy::unfused<>{}), args...);
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: the CUDA benchmarks did not run\n");
    return 0;
  }
  using bench::random_tensor;
  const auto x = random_tensor<fx::bf16, 2>({8192, 8192}), dy = random_tensor<fx::bf16, 2>({8192, 8192});
  register_case("dgelu_bf16_8192x8192", seed::dgelu, x, dy);
  const auto lx = random_tensor<fx::bf16, 2>({16384, 4096});
  const auto lw = random_tensor<fx::bf16, 1>({4096}), lb = random_tensor<fx::bf16, 1>({4096});
  register_case("layer_norm_bf16_16384x4096", seed::layer_norm, lx, lw, lb, 1e-5f);
  for (const auto& [label, s] : {std::pair{"llama3_8b", bench::llama3_8b}, std::pair{"partial_gqa", bench::partial}}) {
    const auto qkv = random_tensor<fx::bf16, 3>({s.B, s.T, s.C()});
    const auto cos = random_tensor<fx::bf16, 2>({s.T, s.n_elem}), sin = random_tensor<fx::bf16, 2>({s.T, s.n_elem});
    register_case(std::string("rope_forward_") + label, seed::rope_forward, qkv, cos, sin, s.n_head, s.groups,
                  s.head_size, s.n_elem);
    const auto dq = random_tensor<fx::bf16, 4>({s.B, s.n_head, s.T, s.head_size});
    const auto dk = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.head_size});
    const auto dv = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.head_size});
    register_case(std::string("rope_backward_") + label, seed::rope_backward, dq, dk, dv, cos, sin, s.n_head, s.groups,
                  s.head_size, s.n_elem);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
