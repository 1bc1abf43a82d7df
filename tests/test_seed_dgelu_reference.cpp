// The seed: Thunder issue #256's GeLU backward, written from prims with bf16
// x and dy, printed as a trace and evaluated on the host against the
// double-precision formula dy*(erf(x/sqrt2)+1)/2 + dy*x*exp(-x^2/2)/sqrt(2pi).
#include "support.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {
constexpr auto dgelu = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 2> dy) {
  auto xf = fx::convert<float>(x);
  auto g = fx::convert<float>(dy);
  auto cdf = 0.5f * (fx::erf(xf * 0.70710678118654752f) + 1.0f);
  auto pdf = fx::exp(-0.5f * xf * xf) * 0.39894228040143268f;
  return fx::convert<fx::bf16>(g * cdf + g * xf * pdf);
});
}  // namespace

TEST_CASE("seed: dGeLU from prims, bf16, within bf16 tolerance of the double formula", "[seed]") {
  const std::string trace = fx::to_string(dgelu);
  INFO(trace);
  CHECK(trace.find("erf(") != std::string::npos);
  CHECK(trace.find("= convert_element_type(t0)") != std::string::npos);
  const int rows = 33, cols = 517;  // odd extents
  auto x = random_values<fx::bf16>(rows * cols, -6, 6);
  auto dy = random_values<fx::bf16>(rows * cols, -2, 2);
  auto dx = fx::evaluate(dgelu, fx::reference, fx::view<const fx::bf16, 2>(x.data(), {rows, cols}),
                         fx::view<const fx::bf16, 2>(dy.data(), {rows, cols}));
  double worst = 0;
  for (int i = 0; i < rows * cols; ++i) {
    const double xv = to_double(x[i]), g = to_double(dy[i]);
    const double expect = g * (std::erf(xv / std::sqrt(2.0)) + 1) / 2 + g * xv * std::exp(-xv * xv / 2) / std::sqrt(2 * M_PI);
    const double got = to_double(dx.values()[i]);
    INFO("x=" << xv << " dy=" << g);
    REQUIRE(close_as<fx::bf16>(got, expect));
    worst = std::max(worst, std::fabs(got - expect) / std::max(std::fabs(expect), 1e-3));
  }
  WARN("seed dGeLU on the reference executor: max relative error " << worst);
}
