#pragma once
// CUDA timing for the benchmarks: a plan (fusex::run on a stream, on a
// workspace of fx::workspace_bytes, so runs allocate nothing) and a
// device-to-device copy of given bytes, the physical limit measured in the
// same run. Each sample times `launches_per_sample` back-to-back launches
// between one pair of events, after the L2 cache has been flushed by
// writing a buffer larger than it; the stream-ordered memory pool keeps
// what it has (release threshold at its maximum).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fusex/fusex.hpp>

namespace bench::gpu {

namespace fx = fusex;

inline constexpr int launches_per_sample = 20;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Writing this many bytes evicts the L2 (50 MB on an H200).
inline void flush_l2(cudaStream_t s) {
  static void* buf = nullptr;
  static const std::size_t bytes = std::size_t{256} << 20;
  if (!buf) check(cudaMalloc(&buf, bytes), "cudaMalloc (L2 flush buffer)");
  check(cudaMemsetAsync(buf, 0, bytes, s), "cudaMemsetAsync (L2 flush)");
}

inline void keep_pool_warm() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaMemPool_t pool;
  check(cudaDeviceGetDefaultMemPool(&pool, dev), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
}

// Times `launch` (a callable enqueuing work on s): one sample per benchmark
// iteration.
template <class Launch>
void time_samples(benchmark::State& st, cudaStream_t s, Launch&& launch) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) launch();  // warm-up: first-touch, caches, the pool
  for (auto _ : st) {
    flush_l2(s);
    check(cudaEventRecord(e0, s), "cudaEventRecord");
    for (int i = 0; i < launches_per_sample; ++i) launch();
    check(cudaEventRecord(e1, s), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    st.SetIterationTime(ms / 1e3 / launches_per_sample);
  }
  check(cudaGetLastError(), "kernels");
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

struct device_arena {
  std::vector<void*> ptrs;
  ~device_arena() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* bytes(std::size_t n) {
    void* p = nullptr;
    check(cudaMalloc(&p, n > 0 ? n : 1), "cudaMalloc");
    ptrs.push_back(p);
    return p;
  }
  template <class T, int R>
  fx::view<T, R> upload(const fx::host_tensor<T, R>& h) {
    T* p = static_cast<T*>(bytes(static_cast<std::size_t>(h.size()) * sizeof(T)));
    check(cudaMemcpy(p, h.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    return fx::view<T, R>(p, h.extents());
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
  keep_pool_warm();
  device_arena arena;
  const auto host_outs = fx::evaluate(plan, fx::host{}, args...);  // output shapes
  const fx::traffic t = fx::modelled_traffic(plan, fx::inputs(args...));
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  {
    fx::cuda_context ctx(s);
    auto time = [&](auto... outs) {
      const auto in = fx::inputs(device_input(arena, args)...);
      const std::size_t ws = fx::workspace_bytes(plan, in);
      const fx::cuda_stream on{s, ws ? arena.bytes(ws) : nullptr, ws, &ctx};
      time_samples(st, s, [&] { fx::run(plan, on, in, fx::outputs(outs...)); });
    };
    if constexpr (requires { host_outs.values(); }) {
      time(arena.upload(host_outs));
    } else {
      std::apply([&](const auto&... o) { time(arena.upload(o)...); }, host_outs);
    }
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(t.min_bytes));
  st.counters["kernels"] = plan.kernels();
  st.counters["modelled_bytes"] = t.bytes;
  st.counters["min_bytes"] = t.min_bytes;
  st.counters["bytes_over_min"] = t.bytes / t.min_bytes;
  cudaStreamDestroy(s);
}

// A device-to-device copy moving `bytes` in all (half read, half written).
inline void copy_limit(benchmark::State& st, double bytes) {
  const std::size_t n = static_cast<std::size_t>(bytes / 2);
  device_arena arena;
  void* a = arena.bytes(n);
  void* b = arena.bytes(n);
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  time_samples(st, s, [&] { check(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync"); });
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(2 * n));
  st.counters["min_bytes"] = static_cast<double>(2 * n);
  cudaStreamDestroy(s);
}

}  // namespace bench::gpu
