// A CUDA translation unit that includes the whole library. Compiling it with
// nvcc is the test; at run time it checks the host side and reports whether
// a GPU is present.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include <fusex/fusex.hpp>

namespace fx = fusex;

constexpr auto gelu = fx::trace([](fx::tensor<fx::bf16, 2> x) {
  auto xf = fx::convert<float>(x);
  return fx::convert<fx::bf16>(0.5f * xf * (1.0f + fx::erf(xf * 0.70710678f)));
});
static_assert(gelu.num_outputs() == 1);
// The candidate plans and the run-time choice compile under nvcc too.
constexpr auto softmax = fx::trace([](fx::tensor<float, 2> x) {
  auto e = fx::exp(x - fx::amax<1>(x, fx::keepdim));
  return std::tuple{e / fx::sum<1>(e, fx::keepdim), fx::sum<0>(x)};
});
constexpr auto softmax_plans = fx::candidates(softmax);
static_assert(softmax_plans.candidate<0>().kernels() == fx::partition(softmax).kernels());
static_assert(fx::launch_bytes_for<fx::cuda_stream>() > 0);

int main() {
  std::vector<fx::bf16> x(6);
  for (int i = 0; i < 6; ++i) x[i] = fx::bf16(static_cast<float>(i) - 2.5f);
  auto y = fx::evaluate(gelu, fx::reference, fx::view<const fx::bf16, 2>(x.data(), {2, 3}));
  for (int i = 0; i < 6; ++i) {
    const double xv = static_cast<float>(x[i]);
    const double e = 0.5 * xv * (1 + std::erf(xv / std::sqrt(2.0)));
    if (std::fabs(static_cast<float>(y.values()[i]) - e) > 1e-5 + 1.6e-2 * std::fabs(e)) {
      std::printf("FAIL: gelu(%g) = %g, expected %g\n", xv, static_cast<float>(y.values()[i]), e);
      return 1;
    }
  }
  {
    fx::host_tensor<float, 2> sx({3, 5});
    for (fx::index_t i = 0; i < sx.size(); ++i) sx.values()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    const auto [p, s] = fx::evaluate(softmax_plans, fx::host{}, sx);
    const auto [rp, rs] = fx::evaluate(softmax, fx::reference, sx);
    for (fx::index_t i = 0; i < p.size(); ++i)
      if (std::fabs(p.values()[i] - rp.values()[i]) > 1e-6f) {
        std::printf("FAIL: softmax candidates element %lld: %g, reference %g\n", static_cast<long long>(i),
                    p.values()[i], rp.values()[i]);
        return 1;
      }
    for (fx::index_t i = 0; i < s.size(); ++i)
      if (std::fabs(s.values()[i] - rs.values()[i]) > 1e-5f) {
        std::printf("FAIL: column sum element %lld\n", static_cast<long long>(i));
        return 1;
      }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("compiled with nvcc; host checks passed; no CUDA device here, device checks skipped\n");
    return 0;
  }
  std::printf("compiled with nvcc; host checks passed; %d CUDA device(s) present\n", devices);
  return 0;
}
