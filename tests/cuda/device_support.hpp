#pragma once
// Shared by the CUDA tests (Catch2): device copies of host tensors, views
// with any layout on the device, and run_on_device(), which runs a plan on a
// stream and brings its outputs back, so that tests compare them with the
// reference executor through tests/executor_check.hpp.
#include <cuda_runtime.h>

#include <tuple>
#include <vector>

#include "../executor_check.hpp"

namespace fxt::cuda {

#define CUDA_REQUIRE(call)                                                               \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    INFO(#call << ": " << cudaGetErrorString(e_));                                       \
    REQUIRE(e_ == cudaSuccess);                                                          \
  } while (0)

inline int device_sms() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

// Device memory freed with the arena.
struct arena {
  std::vector<void*> ptrs;
  arena() = default;
  arena(const arena&) = delete;
  ~arena() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* bytes(std::size_t n) {
    void* p = nullptr;
    CUDA_REQUIRE(cudaMalloc(&p, n > 0 ? n : 1));
    ptrs.push_back(p);
    return p;
  }
  template <class T, int R>
  fx::view<T, R> copy(const fx::host_tensor<T, R>& h) {
    T* p = static_cast<T*>(bytes(static_cast<std::size_t>(h.size()) * sizeof(T)));
    CUDA_REQUIRE(cudaMemcpy(p, h.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyHostToDevice));
    return fx::view<T, R>(p, h.extents());
  }
  // A device copy of h laid out with the given element strides, `offset`
  // elements past a 256-byte boundary (a misaligned base when odd).
  template <class T, int R>
  fx::view<const T, R> copy_strided(const fx::host_tensor<T, R>& h, const fx::extents_array<R>& str, int offset = 0) {
    fx::index_t span = 1;
    for (int i = 0; i < R; ++i) span += (h.extent(i) > 0 ? h.extent(i) - 1 : 0) * str[i];
    std::vector<T> buf(static_cast<std::size_t>(span + offset));
    const fx::view<const T, R> hv = h.as_view();
    fx::index_t idx[R > 0 ? R : 1] = {};
    for (fx::index_t e = 0; e < h.size(); ++e) {
      fx::index_t rem = e, off = 0, src = 0;
      for (int i = R - 1; i >= 0; --i) {
        idx[i] = rem % h.extent(i);
        rem /= h.extent(i);
        off += idx[i] * str[i];
        src += idx[i] * hv.stride(i);
      }
      buf[static_cast<std::size_t>(offset + off)] = h.data()[src];
    }
    T* p = static_cast<T*>(bytes(buf.size() * sizeof(T)));
    CUDA_REQUIRE(cudaMemcpy(p, buf.data(), buf.size() * sizeof(T), cudaMemcpyHostToDevice));
    return fx::view<const T, R>(p + offset, h.extents(), str);
  }
  template <class T, int R>
  void back(fx::host_tensor<T, R>& h, fx::view<T, R> d) {
    CUDA_REQUIRE(cudaMemcpy(h.data(), d.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyDeviceToHost));
  }
};

template <class X>
auto to_device(arena& a, const X& x) {
  if constexpr (requires { x.as_view(); }) {
    auto v = a.copy(x);
    return fx::view<const typename decltype(v)::value_type, decltype(v)::rank>(v);
  } else {
    return x;  // scalars, indices, and views already on the device
  }
}

// Runs `plan` on `stream` with the given arguments (host tensors are copied
// to the device; device views are used as they are) and returns its outputs
// on the host, shaped like the reference's.
template <class Plan, class Prog, class... Args>
auto run_on_device(Plan plan, Prog prog, cudaStream_t stream, const fx::cuda_stream& how, const Args&... args) {
  auto outs = fx::evaluate(prog, fx::reference, args...);  // shapes (and a reference run)
  arena a;
  auto device_outs = [&](auto&... h) { return std::make_tuple(a.copy(h)...); };
  auto run = [&](auto&... h) {
    auto d = device_outs(h...);
    fx::cuda_stream s = how;
    s.stream = stream;
    std::apply([&](auto&... dv) { fx::run(plan, s, fx::inputs(to_device(a, args)...), fx::outputs(dv...)); }, d);
    CUDA_REQUIRE(cudaStreamSynchronize(stream));
    std::apply([&](auto&... dv) { (a.back(h, dv), ...); }, d);
  };
  if constexpr (requires { outs.values(); }) {
    for (auto& v : outs.values()) v = {};
    run(outs);
  } else {
    std::apply([&](auto&... o) {
      ((std::fill(o.values().begin(), o.values().end(), typename std::decay_t<decltype(o)>::value_type{})), ...);
      run(o...);
    }, outs);
  }
  return outs;
}

// A stream for one test case.
struct stream_guard {
  cudaStream_t s = nullptr;
  stream_guard() { CUDA_REQUIRE(cudaStreamCreate(&s)); }
  ~stream_guard() { cudaStreamDestroy(s); }
  operator cudaStream_t() const { return s; }
};

// Plan on the device vs the reference executor.
template <class Plan, class Prog, class... Args>
void check_device(const char* what, Plan plan, Prog prog, const Args&... args) {
  stream_guard s;
  const auto got = run_on_device(plan, prog, s, fx::cuda_stream{}, args...);
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  require_all_close(got, ref, what);
}

}  // namespace fxt::cuda
