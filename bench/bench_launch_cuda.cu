// The CUDA executor's launch cost, the value plan/launch_cost.hpp records.
// As bench_launch_host.cpp: a chain of K elementwise ops on 4096 elements run
// as K kernels and as one, back to back on a stream between CUDA events (the
// difference over K - 1 is one launch, as the GPU sees it when launches
// queue), times the streaming rate of a large pointwise kernel (y = x * 2 + 1,
// f32, 256 MiB in and out). Without a GPU it prints a note and runs nothing.
//
//   build/bench/bench_launch_cuda --benchmark_out=launch_cuda.json --benchmark_out_format=json
#include <cstdio>

#include "cuda_timing.hpp"
#include "launch_cases.hpp"

namespace fx = fusex;

namespace {

using bench::gpu::check;

using namespace bench::launch;

// Seconds per run of `plan`, `reps` runs queued back to back.
template <class Plan>
double seconds_per_run(Plan plan, const fx::cuda_stream& on, fx::view<const float, 1> x, fx::view<float, 1> y,
                       int reps) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  check(cudaEventRecord(e0, on.stream), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) fx::run(plan, on, fx::inputs(x), fx::outputs(y));
  check(cudaEventRecord(e1, on.stream), "cudaEventRecord");
  check(cudaEventSynchronize(e1), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms / 1e3 / reps;
}

void launch_cost(benchmark::State& st) {
  constexpr auto unfused = chain_unfused;
  constexpr auto fused = chain_fused;
  bench::gpu::device_arena arena;
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  double launch_s = 0, rate = 0;
  {
    fx::cuda_context ctx(s);
    const fx::cuda_stream on{s, nullptr, 0, &ctx};
    fx::host_tensor<float, 1> hx({chain_elements});
    for (auto& v : hx.values()) v = 1.5f;
    const fx::view<const float, 1> x = arena.upload(hx);
    const fx::view<float, 1> y(static_cast<float*>(arena.bytes(chain_elements * sizeof(float))), {chain_elements});
    seconds_per_run(unfused, on, x, y, 100);  // warm-up: module load, first launches
    seconds_per_run(fused, on, x, y, 100);
    double t_unfused = 0, t_fused = 0;
    long runs = 0;
    for (auto _ : st) {
      t_unfused += seconds_per_run(unfused, on, x, y, 200);
      t_fused += seconds_per_run(fused, on, x, y, 200);
      ++runs;
      st.SetIterationTime(t_unfused / runs);
    }
    launch_s = launch_seconds(t_unfused / runs, t_fused / runs);

    constexpr auto big = fx::partition(stream);
    constexpr fx::index_t n = fx::index_t{1} << 26;
    float* bx_data = static_cast<float*>(arena.bytes(n * sizeof(float)));
    check(cudaMemsetAsync(bx_data, 0, n * sizeof(float), s), "cudaMemsetAsync");
    const fx::view<const float, 1> bx(bx_data, {n});
    const fx::view<float, 1> by(static_cast<float*>(arena.bytes(n * sizeof(float))), {n});
    seconds_per_run(big, on, bx, by, 3);
    const double stream_s = seconds_per_run(big, on, bx, by, 20);
    rate = 2.0 * static_cast<double>(n) * sizeof(float) / stream_s;
  }
  check(cudaStreamDestroy(s), "cudaStreamDestroy");
  st.counters["launch_us"] = launch_s * 1e6;
  st.counters["stream_GBps"] = rate / 1e9;
  st.counters["launch_bytes"] = launch_s * rate;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: the CUDA launch benchmark did not run\n");
    return 0;
  }
  benchmark::RegisterBenchmark("launch_cost", launch_cost)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(1.0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
