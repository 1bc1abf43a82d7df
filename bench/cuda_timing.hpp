#pragma once
// CUDA timing of a plan (fusex::run on a stream, timed with CUDA events) and
// of a device-to-device copy of given bytes, the physical limit measured in
// the same run, for the CUDA benchmarks.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fusex/fusex.hpp>

namespace bench {

namespace fx = fusex;


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

}  // namespace bench
