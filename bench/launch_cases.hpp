#pragma once
// The programs that measure an executor's launch cost (bench_launch_host,
// bench_launch_cuda): a chain of elementwise ops, run as one group per op and
// as one group, and a large pointwise group for the streaming rate.
#include <fusex/fusex.hpp>

namespace bench::launch {

namespace fx = fusex;

inline constexpr int chain_ops = 16;
inline constexpr fx::index_t chain_elements = 4096;  // above the host's serial cut-off (64)

inline constexpr auto chain = fx::trace([](fx::tensor<float, 1> x) {
  auto y = x;
  for (int i = 0; i < chain_ops / 2; ++i) y = (y + 1.0f) * 0.5f;
  return y;
});
inline constexpr auto stream = fx::trace([](fx::tensor<float, 1> x) { return x * 2.0f + 1.0f; });

inline constexpr auto chain_unfused = fx::partition(chain, fx::policy::unfused<>{});
inline constexpr auto chain_fused = fx::partition(chain);
static_assert(chain_unfused.kernels() == chain_ops && chain_fused.kernels() == 1);

// One launch: the chain's time as chain_ops groups less its time as one, per extra group.
inline double launch_seconds(double unfused_s, double fused_s) { return (unfused_s - fused_s) / (chain_ops - 1); }

}  // namespace bench::launch
