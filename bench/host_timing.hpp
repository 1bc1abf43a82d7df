#pragma once
// Host timing of a plan (fusex::run into preallocated outputs) and of a
// memcpy of given bytes, the host's physical limit, for the host benchmarks.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include <fusex/fusex.hpp>

namespace bench {

namespace fx = fusex;


template <class Plan, class... Args>
void run_plan(benchmark::State& st, Plan plan, const Args&... args) {
  auto outs = fx::evaluate(plan, fx::host{}, args...);  // allocates and warms up
  const fx::traffic t = fx::modelled_traffic(plan, fx::inputs(args...));
  for (auto _ : st) {
    if constexpr (requires { outs.values(); }) fx::run(plan, fx::host{}, fx::inputs(args...), fx::outputs(outs));
    else std::apply([&](auto&... o) { fx::run(plan, fx::host{}, fx::inputs(args...), fx::outputs(o...)); }, outs);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(t.min_bytes));
  st.counters["kernels"] = plan.kernels();
  st.counters["modelled_bytes"] = t.bytes;
  st.counters["bytes_over_min"] = t.bytes / t.min_bytes;
}

void copy_limit(benchmark::State& st, double bytes) {
  std::vector<char> a(static_cast<std::size_t>(bytes / 2)), b(a.size());
  std::memset(a.data(), 1, a.size());
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(2 * a.size()));
}

}  // namespace bench
