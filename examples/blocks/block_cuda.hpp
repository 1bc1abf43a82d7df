#pragma once
// The CUDA half of a block example's training step, compiled by nvcc only:
// the forward and backward plans on one stream with their workspaces
// allocated up front (a step allocates nothing), timed with events, and
// their results against the reference executor's.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fusex/fusex.hpp>

namespace blocks {

namespace fx = fusex;

inline void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}

// Device allocations of one step, freed together.
struct device_memory {
  std::vector<void*> ptrs;
  device_memory() = default;
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  ~device_memory() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* bytes(std::size_t n) {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, n > 0 ? n : 1), "cudaMalloc");
    ptrs.push_back(p);
    return p;
  }
  template <class H>  // an uninitialised device tensor shaped like host tensor h
  fx::view<typename H::value_type, H::rank> like(const H& h) {
    using T = typename H::value_type;
    return {static_cast<T*>(bytes(h.values().size() * sizeof(T))), h.extents()};
  }
  template <class X>  // host tensors are copied; indices and numbers pass as they are
  auto upload(const X& x) {
    if constexpr (requires { x.values(); }) {
      auto d = like(x);
      cuda_check(cudaMemcpy(d.data(), x.data(), x.values().size() * sizeof(typename X::value_type), cudaMemcpyHostToDevice),
                 "cudaMemcpy (to the device)");
      return fx::view<const typename X::value_type, X::rank>(d);
    } else {
      return x;
    }
  }
};

template <class H, class V>
void download(H& h, const V& d) {
  cuda_check(cudaMemcpy(h.data(), d.data(), h.values().size() * sizeof(typename H::value_type), cudaMemcpyDeviceToHost),
             "cudaMemcpy (to the host)");
}

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Runs block vjp G forward then backward on a stream, `steps` times. `fwd`
// and `grads` are host results of the same step: their shapes size the
// device outputs, and they are overwritten with what the GPU computed.
// Prints the median step time; returns false when no GPU is present.
template <const auto& G, class Args, class Dy, class Fwd, class Grads>
bool cuda_step(const Args& args, const Dy& dy, Fwd& fwd, Grads& grads, int steps) {
  using V = std::remove_cvref_t<decltype(G)>;
  if (!have_gpu()) {
    std::printf("  CUDA step: no GPU on this machine, not run\n");
    return false;
  }
  constexpr auto fwd_plan = fx::partition(V::forward);
  constexpr auto bwd_plan = fx::partition(V::backward);
  device_memory mem;
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const auto d_args = std::apply([&](const auto&... a) { return std::tuple{mem.upload(a)...}; }, args);
  const auto d_dy = mem.upload(dy);
  const auto d_fwd = std::apply([&](const auto&... o) { return std::tuple{mem.like(o)...}; }, fwd);
  const auto d_grads = std::apply([&](const auto&... o) { return std::tuple{mem.like(o)...}; }, grads);
  const auto fwd_in = std::apply([](const auto&... a) { return fx::inputs(a...); }, d_args);
  const auto bwd_in = std::apply(
      [&](const auto&... a) {
        return std::apply([&](const auto&... r) { return fx::inputs(a..., fx::view<const typename std::remove_cvref_t<decltype(r)>::value_type, std::remove_cvref_t<decltype(r)>::rank>(r)..., d_dy); }, d_fwd);
      },
      d_args);
  fx::cuda_context ctx(stream);
  fx::cuda_stream fs{stream, nullptr, fx::workspace_bytes(fwd_plan, fwd_in), &ctx};
  fx::cuda_stream bs{stream, nullptr, fx::workspace_bytes(bwd_plan, bwd_in), &ctx};
  fs.workspace = mem.bytes(fs.workspace_size);
  bs.workspace = mem.bytes(bs.workspace_size);
  auto step = [&] {
    std::apply([&](const auto&... o) { fx::run(fwd_plan, fs, fwd_in, fx::outputs(o...)); }, d_fwd);
    std::apply([&](const auto&... o) { fx::run(bwd_plan, bs, bwd_in, fx::outputs(o...)); }, d_grads);
  };
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  step();  // warm-up: cuBLAS heuristics, first touch
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warm-up step)");
  std::vector<double> ms;
  for (int s = 0; s < steps; ++s) {
    cuda_check(cudaEventRecord(e0, stream), "cudaEventRecord");
    step();
    cuda_check(cudaEventRecord(e1, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize (step)");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  std::apply([&](auto&... h) { std::apply([&](const auto&... d) { (download(h, d), ...); }, d_fwd); }, fwd);
  std::apply([&](auto&... h) { std::apply([&](const auto&... d) { (download(h, d), ...); }, d_grads); }, grads);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);
  std::sort(ms.begin(), ms.end());
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("  CUDA step (forward + backward) on %s: median %.3f ms over %d steps\n", prop.name, ms[ms.size() / 2], steps);
  return true;
}

}  // namespace blocks
