#pragma once
// What one launch costs on each executor, in the planner's unit: the bytes
// that executor streams in the time one group launch takes (launch time x
// streaming rate). The run-time choice among candidate plans (choice.hpp)
// weighs launches with the cost of the executor it runs on; plans made at
// compile time use cost_model{}.launch_bytes.
//
// Every value here was measured; each says on what and with which command.
// A value not yet measured is marked so and falls back to the cost model's.

namespace fusex {

struct launch_cost {
  double seconds = 0;            // one group launch, as the executor sees it back to back
  double bytes_per_second = 0;   // a large pointwise group's modelled bytes per second
  bool measured = false;
  constexpr double bytes() const { return seconds * bytes_per_second; }
};

namespace launch_costs {
// The host executor (fusex::host, OpenMP, all threads): 2026-12-02, a
// 2-vCPU Intel Xeon VM (AVX-512, 2 MiB L2 per core), 2 threads, g++ 12.2
// -O3 -march=native:
// `build/bench/bench_launch_host` gave launch_us 3.92-4.00, stream_GBps
// 22.8-23.2 over four runs: 4.0 us x 22.9 GB/s = 91.6 kB.
inline constexpr launch_cost host{4.0e-6, 22.9e9, true};
// The CUDA executor (fusex::cuda_stream): not measured yet, no GPU has been
// lent to this project; `scripts/gpu_check.sh` runs
// `build-gpu/bench/bench_launch_cuda` (launch_us, stream_GBps, launch_bytes)
// on one. Until then the cost model's default applies.
inline constexpr launch_cost cuda{0, 0, false};
}  // namespace launch_costs

}  // namespace fusex
