// A program using fusex as a package: traces, plans and runs a small graph
// on the host and checks it against the formula.
#include <cmath>
#include <cstdio>
#include <vector>

#include <fusex/fusex.hpp>

namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w) {
  return fx::tanh(x) * fx::unsqueeze<0>(w) + fx::sum<-1>(x, fx::keepdim);
});
static_assert(fx::partition(prog).kernels() == 1);

int main() {
  const int r = 3, c = 5;
  std::vector<float> x(r * c), w(c);
  for (int i = 0; i < r * c; ++i) x[i] = 0.1f * static_cast<float>(i) - 0.7f;
  for (int j = 0; j < c; ++j) w[j] = 1.0f + static_cast<float>(j);
  auto y = fx::evaluate(fx::partition(prog), fx::host{}, fx::view<const float, 2>(x.data(), {r, c}),
                        fx::view<const float, 1>(w.data(), {c}));
  for (int i = 0; i < r; ++i) {
    double s = 0;
    for (int j = 0; j < c; ++j) s += x[i * c + j];
    for (int j = 0; j < c; ++j) {
      const double e = std::tanh(static_cast<double>(x[i * c + j])) * w[j] + s;
      if (std::fabs(y(i, j) - e) > 1e-5 + 1.3e-6 * std::fabs(e)) {
        std::printf("FAIL at (%d, %d): %g vs %g\n", i, j, static_cast<double>(y(i, j)), e);
        return 1;
      }
    }
  }
  std::printf("fusex consumer: ok\n");
  return 0;
}
