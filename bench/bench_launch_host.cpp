// The host executor's launch cost, the value plan/launch_cost.hpp records.
//
// A launch is one group run by fx::run: argument binding, the group's loop
// set-up and its OpenMP parallel region. It is measured as the difference
// between a chain of K elementwise ops run as K groups (unfused) and as one
// group (fused), on a tensor small enough that the work is negligible but
// large enough (4096 elements) that each group takes the parallel path that
// real tensors take. The streaming rate is a large pointwise group's
// (y = x * 2 + 1, f32, 64 MiB in and out) modelled bytes per second. Their
// product, launch_bytes, is the bytes the executor would move in the time
// one launch costs.
//
//   build/bench/bench_launch_host --benchmark_out=launch.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <chrono>

#include "launch_cases.hpp"

namespace fx = fusex;

namespace {

using namespace bench::launch;

template <class Plan>
double seconds_per_run(Plan plan, const fx::host_tensor<float, 1>& x, fx::host_tensor<float, 1>& y, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) fx::run(plan, fx::host{}, fx::inputs(x), fx::outputs(y));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

void launch_cost(benchmark::State& st) {
  constexpr auto unfused = chain_unfused;
  constexpr auto fused = chain_fused;
  fx::host_tensor<float, 1> x({chain_elements}), y({chain_elements});
  for (auto& v : x.values()) v = 1.5f;
  double t_unfused = 0, t_fused = 0;
  long runs = 0;
  seconds_per_run(unfused, x, y, 100);  // warm up the thread pool
  for (auto _ : st) {
    // alternated, so that both see the same machine state
    t_unfused += seconds_per_run(unfused, x, y, 50);
    t_fused += seconds_per_run(fused, x, y, 50);
    ++runs;
  }
  const double launch_s = launch_seconds(t_unfused / runs, t_fused / runs);

  constexpr auto big = fx::partition(stream);
  fx::host_tensor<float, 1> bx({1 << 24}), by({1 << 24});
  for (auto& v : bx.values()) v = 0.25f;
  seconds_per_run(big, bx, by, 2);
  const double stream_s = seconds_per_run(big, bx, by, 20);
  const double stream_bytes = fx::modelled_traffic(big, fx::inputs(bx)).bytes;
  const double rate = stream_bytes / stream_s;

  st.counters["launch_us"] = launch_s * 1e6;
  st.counters["stream_GBps"] = rate / 1e9;
  st.counters["launch_bytes"] = launch_s * rate;
  st.counters["threads"] = fx::detail::exec::omp_default_threads();
}

}  // namespace

BENCHMARK(launch_cost)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

BENCHMARK_MAIN();
