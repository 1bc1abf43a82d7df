// Host benchmarks of the seed's cases under the fused, greedy-claim and
// unfused policies, next to a memcpy of the same minimum bytes (the host's
// physical limit measured in the same run). Counters: kernels, the modelled
// bytes and their ratio to the minimum; bytes_per_second counts the minimum.
#include <benchmark/benchmark.h>

#include "bench_cases.hpp"
#include "host_timing.hpp"

namespace fx = fusex;

namespace {

using bench::copy_limit;
using bench::run_plan;

template <class... Claimants, class Prog, class... Args>
void register_case(const char* name, Prog prog, const Args&... args) {
  const double min = fx::modelled_traffic(fx::partition(prog), fx::inputs(args...)).min_bytes;
  benchmark::RegisterBenchmark((std::string(name) + "/copy_limit").c_str(), copy_limit, min)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark((std::string(name) + "/fused").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog, fx::policy::fused<Claimants...>{}), args...);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark((std::string(name) + "/greedy").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), args...);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark((std::string(name) + "/unfused").c_str(), [=](benchmark::State& st) {
    run_plan(st, fx::partition(prog, fx::policy::unfused<Claimants...>{}), args...);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  using bench::random_tensor;
  const auto x = random_tensor<fx::bf16, 2>({2048, 4096}), dy = random_tensor<fx::bf16, 2>({2048, 4096});
  register_case("dgelu_bf16_2048x4096", seed::dgelu, x, dy);
  const auto lx = random_tensor<fx::bf16, 2>({4096, 2048});
  const auto lw = random_tensor<fx::bf16, 1>({2048}), lb = random_tensor<fx::bf16, 1>({2048});
  register_case("layer_norm_bf16_4096x2048", seed::layer_norm, lx, lw, lb, 1e-5f);
  const auto s = bench::partial;
  const auto qkv = random_tensor<fx::bf16, 3>({s.B, s.T, s.C()});
  const auto cos = random_tensor<fx::bf16, 2>({s.T, s.n_elem}), sin = random_tensor<fx::bf16, 2>({s.T, s.n_elem});
  register_case("rope_forward_partial_gqa", seed::rope_forward, qkv, cos, sin, s.n_head, s.groups, s.head_size, s.n_elem);
  const auto dq = random_tensor<fx::bf16, 4>({s.B, s.n_head, s.T, s.head_size});
  const auto dk = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.head_size});
  const auto dv = random_tensor<fx::bf16, 4>({s.B, s.groups, s.T, s.head_size});
  register_case("rope_backward_partial_gqa", seed::rope_backward, dq, dk, dv, cos, sin, s.n_head, s.groups, s.head_size,
                s.n_elem);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
