// CUDA benchmarks of the seed's cases under the fused, greedy-claim and
// unfused policies, timed with CUDA events, next to a device-to-device copy
// of the same minimum bytes measured in the same run (the physical limit).
// bytes_per_second counts the minimum bytes; counters give kernels and the
// modelled bytes. Without a GPU it prints a note and runs nothing.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "bench_cases.hpp"

namespace fx = fusex;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct device_arena {
  std::vector<void*> ptrs;
  ~device_arena() {
    for (void* p : ptrs) cudaFree(p);
  }
  template <class T, int R>
  fx::view<T, R> upload(const fx::host_tensor<T, R>& h) {
    void* p = nullptr;
    check(cudaMalloc(&p, static_cast<std::size_t>(h.size() > 0 ? h.size() : 1) * sizeof(T)), "cudaMalloc");
    check(cudaMemcpy(p, h.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    ptrs.push_back(p);
    return fx::view<T, R>(static_cast<T*>(p), h.extents());
  }
};

template <class X>
auto device_input(device_arena& a, const X& x) {
  if constexpr (requires { x.as_view(); }) {
    auto v = a.upload(x);
    return fx::view<const typename decltype(v)::value_type, decltype(v)::rank>(v);
  } else {
    return x;
  }
}

template <class Plan, class... Args>
void run_plan(benchmark::State& st, Plan plan, const Args&... args) {
  device_arena arena;
  const auto host_outs = fx::evaluate(plan, fx::host{}, args...);  // output shapes (and a host warm-up)
  const fx::traffic t = fx::modelled_traffic(plan, fx::inputs(args...));
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  auto run_once = [&](auto&... outs) {
    fx::run(plan, fx::cuda_stream{s}, fx::inputs(device_input(arena, args)...), fx::outputs(outs...));
  };
  auto time = [&](auto... outs) {
    const auto in = fx::inputs(device_input(arena, args)...);
    for (int i = 0; i < 3; ++i) fx::run(plan, fx::cuda_stream{s}, in, fx::outputs(outs...));
    for (auto _ : st) {
      check(cudaEventRecord(e0, s), "cudaEventRecord");
      fx::run(plan, fx::cuda_stream{s}, in, fx::outputs(outs...));
      check(cudaEventRecord(e1, s), "cudaEventRecord");
      check(cudaEventSynchronize(e1), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
      st.SetIterationTime(ms / 1e3);
    }
  };
  (void)run_once;
  if constexpr (requires { host_outs.values(); }) {
    time(arena.upload(host_outs));
  } else {
    std::apply([&](const auto&... o) { time(arena.upload(o)...); }, host_outs);
  }
  check(cudaGetLastError(), "kernels");
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(t.min_bytes));
  st.counters["kernels"] = plan.kernels();
  st.counters["modelled_bytes"] = t.bytes;
  st.counters["bytes_over_min"] = t.bytes / t.min_bytes;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
}

void copy_limit(benchmark::State& st, double bytes) {
  const std::size_t n = static_cast<std::size_t>(bytes / 2);
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, n), "cudaMalloc");
  check(cudaMalloc(&b, n), "cudaMalloc");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice);
  for (auto _ : st) {
    cudaEventRecord(e0);
    cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    st.SetIterationTime(ms / 1e3);
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(2 * n));
  cudaFree(a);
  cudaFree(b);
}

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
