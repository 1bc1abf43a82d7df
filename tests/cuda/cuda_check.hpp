#pragma once
// Shared by the CUDA tests: device copies of host tensors, and check(), which
// runs a plan on a stream and compares every output with the reference
// executor's, within the dtype's tolerance. Failures are counted, not thrown,
// so that one run reports every case.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fusex/fusex.hpp>

namespace fx = fusex;

namespace cuda_check {

inline int failures = 0, checks = 0;
inline std::mt19937 rng(7);

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                            \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>) return static_cast<float>(v);
  else return static_cast<double>(v);
}
template <class T>
double rtol() {
  if constexpr (std::is_same_v<T, fx::bf16>) return 1.6e-2;
  else if constexpr (std::is_same_v<T, fx::f16>) return 1e-3;
  else if constexpr (std::is_same_v<T, float>) return 1e-5;  // fp32 sums in a different order than the reference
  else return 1e-7;
}

template <class T, int R>
fx::host_tensor<T, R> random_tensor(const fx::extents_array<R>& e, double lo = -2, double hi = 2) {
  fx::host_tensor<T, R> t(e);
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& v : t.values()) v = T(static_cast<float>(d(rng)));
  return t;
}

// Device copy of a host tensor, freed at exit of the test.
struct device_buffers {
  std::vector<void*> ptrs;
  ~device_buffers() {
    for (void* p : ptrs) cudaFree(p);
  }
  template <class T, int R>
  fx::view<T, R> copy(const fx::host_tensor<T, R>& h) {
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, static_cast<std::size_t>(h.size() > 0 ? h.size() : 1) * sizeof(T)));
    CUDA_OK(cudaMemcpy(p, h.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyHostToDevice));
    ptrs.push_back(p);
    return fx::view<T, R>(static_cast<T*>(p), h.extents());
  }
};

template <class T>
auto to_device(device_buffers& db, const T& x) {
  if constexpr (requires { x.as_view(); }) {
    auto v = db.copy(x);
    return fx::view<const typename decltype(v)::value_type, decltype(v)::rank>(v);
  } else {
    return x;
  }
}

template <class T, int R>
void compare(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref, const std::string& what) {
  double worst = 0;
  fx::index_t bad = 0;
  for (fx::index_t i = 0; i < got.size(); ++i) {
    const double g = as_double(got.values()[i]), r = as_double(ref.values()[i]);
    if (std::isnan(r) && std::isnan(g)) continue;
    const double err = std::fabs(g - r);
    const bool ok = err <= 1e-5 + rtol<T>() * std::fabs(r);
    worst = std::max(worst, err / std::max(std::fabs(r), 1e-3));
    if (!ok && bad++ < 3) std::printf("  %s: element %lld is %g, reference %g\n", what.c_str(), static_cast<long long>(i), g, r);
  }
  ++checks;
  if (bad) ++failures;
  std::printf("%s %s: %lld elements, max rel err %.3g\n", bad ? "FAIL" : "ok  ", what.c_str(),
              static_cast<long long>(got.size()), worst);
}

// Runs plan on the device and compares every output with the reference.
template <class Plan, class Prog, class... Args>
void check(const std::string& name, Plan plan, Prog prog, const Args&... args) {
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  device_buffers db;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  auto outs_host = ref;  // same shapes; overwritten from the device
  auto run = [&](auto&... outs) {
    auto dev_outs = std::make_tuple(db.copy(outs)...);
    std::apply([&](auto&... dv) { fx::run(plan, fx::cuda_stream{s}, fx::inputs(to_device(db, args)...), fx::outputs(dv...)); },
               dev_outs);
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaGetLastError());
    auto back = [](auto& h, const auto& d) {
      CUDA_OK(cudaMemcpy(h.data(), d.data(), static_cast<std::size_t>(h.size()) * sizeof(*h.data()), cudaMemcpyDeviceToHost));
    };
    std::apply([&](auto&... dv) { (back(outs, dv), ...); }, dev_outs);
  };
  if constexpr (requires { outs_host.values(); }) {
    for (auto& v : outs_host.values()) v = {};
    run(outs_host);
    compare(outs_host, ref, name);
  } else {
    std::apply([&](auto&... o) { run(o...); }, outs_host);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (compare(std::get<I>(outs_host), std::get<I>(ref), name + " output " + std::to_string(I)), ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(ref)>>{});
  }
  CUDA_OK(cudaStreamDestroy(s));
}

template <class... Claimants, class Prog, class... Args>
void check_policies(const std::string& name, Prog prog, const Args&... args) {
  check(name + " [fused]", fx::partition(prog, fx::policy::fused<Claimants...>{}), prog, args...);
  check(name + " [greedy]", fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), prog, args...);
  check(name + " [unfused]", fx::partition(prog, fx::policy::unfused<Claimants...>{}), prog, args...);
}

template <class... Claimants, class Prog, class... Args>
void check_two(const std::string& name, Prog prog, const Args&... args) {
  check(name + " [fused]", fx::partition(prog, fx::policy::fused<Claimants...>{}), prog, args...);
  check(name + " [greedy]", fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), prog, args...);
}

}  // namespace cuda_check
