// Host benchmarks of the forward and backward of gelu, layer_norm, rms_norm
// and qkv split + rope: fused and unfused plans of the hand-derived backward,
// the fused plan of the prim-VJP backward, and a memcpy of each fused plan's
// minimum bytes measured in the same run. JSON with
// --benchmark_out=<file> --benchmark_out_format=json.
#include "grad_cases.hpp"
#include "host_timing.hpp"

namespace fx = fusex;

int main(int argc, char** argv) {
  const auto run = [](const std::string& name, auto plan, const auto& args) {
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      std::apply([&](const auto&... a) { bench::run_plan(st, plan, a...); }, args);
    })->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  const auto copy = [](const std::string& name, double bytes) {
    benchmark::RegisterBenchmark(name.c_str(), bench::copy_limit, bytes)->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  // Sizes that keep a host run short; partial rotary with GQA for rope.
  bench::grad_cases({2048, 4096, 4096, 2048, bench::partial}, run, copy);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
