// Quickstart: GeLU written from prims, traced and planned at compile time,
// printed as a trace and a plan, and evaluated on the host executor.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <fusex/fusex.hpp>

namespace fx = fusex;

// gelu(x) = x * (1 + erf(x / sqrt 2)) / 2, with bf16 storage and f32 math.
constexpr auto gelu = fx::trace([](fx::tensor<fx::bf16, 2> x) {
  auto xf = fx::convert<float>(x);
  auto cdf = 0.5f * (1.0f + fx::erf(xf * 0.70710678f));
  return fx::convert<fx::bf16>(xf * cdf);
});

constexpr auto plan = fx::partition(gelu);
static_assert(plan.kernels() == 1);

int main() {
  std::cout << gelu << "\n" << fx::explain(plan) << "\n";

  const int rows = 2, cols = 5;
  std::vector<fx::bf16> x(rows * cols);
  for (int i = 0; i < rows * cols; ++i) x[i] = fx::bf16(-3.0f + 0.75f * static_cast<float>(i));

  auto y = fx::evaluate(plan, fx::host{}, fx::view<const fx::bf16, 2>(x.data(), {rows, cols}));

  std::printf("%8s %12s %12s\n", "x", "gelu(x)", "exact");
  double worst = 0;
  for (int i = 0; i < rows * cols; ++i) {
    const double xv = static_cast<float>(x[i]);
    const double exact = 0.5 * xv * (1 + std::erf(xv / std::sqrt(2.0)));
    const double got = static_cast<float>(y.values()[i]);
    worst = std::max(worst, std::fabs(got - exact) / std::max(std::fabs(exact), 1e-3));
    std::printf("%8.3f %12.6f %12.6f\n", xv, got, exact);
  }
  std::printf("max relative error vs double: %.3g (bf16 tolerance 1.6e-2)\n", worst);
  return worst <= 1.6e-2 ? 0 : 1;
}
