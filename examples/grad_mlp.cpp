// Gradients of a function traced by the user: y = gelu(x + b) @ w.
// One call gives the outputs and the gradients of x, b and w; explain()
// shows the forward plan (which also returns what the backward needs) and
// the backward plan, and explain_saved() what is kept between them.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

#include <fusex/fusex.hpp>

namespace fx = fusex;

constexpr auto mlp = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> b, fx::tensor<float, 2> w) {
  auto h = fx::ops::gelu(x + fx::broadcast_in_dim<1>(b, {x.extent<0>(), b.extent<0>()}));
  return fx::matmul(h, w);
});

// Forward and backward graphs, built at compile time. gelu is differentiated
// by its hand-derived formula, so the backward recomputes gelu'(x + b) from
// x and b instead of saving it.
constexpr auto grad = fx::vjp(mlp);
using grad_t = decltype(grad);
static_assert(grad_t::composites_applied == 1);

fx::host_tensor<float, 2> random_matrix(int r, int c, std::mt19937& g) {
  std::uniform_real_distribution<float> d(-1, 1);
  fx::host_tensor<float, 2> t({r, c});
  for (auto& v : t.values()) v = d(g);
  return t;
}

int main() {
  std::cout << mlp << "\n";
  std::cout << "# forward plan\n" << fx::explain(fx::partition(grad_t::forward)) << "\n";
  std::cout << "# backward plan\n" << fx::explain(fx::partition(grad_t::backward)) << "\n";

  std::mt19937 g(7);
  const int n = 8, k = 16, m = 4;
  auto x = random_matrix(n, k, g);
  auto w = random_matrix(k, m, g);
  auto dy = random_matrix(n, m, g);
  fx::host_tensor<float, 1> b({k});
  for (int j = 0; j < k; ++j) b(j) = 0.1f * static_cast<float>(j - k / 2);

  std::cout << fx::explain_saved(grad, fx::inputs(x, b, w)) << "\n";

  // One call: outputs and the gradients of every argument.
  auto [outputs, gradients] = fx::value_and_grad(grad, fx::host{}, fx::inputs(x, b, w), fx::cotangents(dy));
  auto& [dx, db, dw] = gradients;
  std::printf("y: %d x %d, dx: %d x %d, db: %d, dw: %d x %d\n", static_cast<int>(std::get<0>(outputs).extent(0)),
              static_cast<int>(std::get<0>(outputs).extent(1)), static_cast<int>(dx.extent(0)),
              static_cast<int>(dx.extent(1)), static_cast<int>(db.extent(0)), static_cast<int>(dw.extent(0)),
              static_cast<int>(dw.extent(1)));

  // Check db against a central difference of L(b) = sum(y(b) * dy) computed
  // here in double, without fusex.
  auto loss = [&](int j, double h) {
    double l = 0;
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < m; ++c) {
        double y = 0;
        for (int i = 0; i < k; ++i) {
          const double z = x(r, i) + b(i) + (i == j ? h : 0.0);
          y += 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))) * w(i, c);
        }
        l += y * dy(r, c);
      }
    return l;
  };
  double worst = 0;
  for (int j = 0; j < k; ++j) {
    const double fd = (loss(j, 1e-4) - loss(j, -1e-4)) / 2e-4;
    worst = std::max(worst, std::fabs(db(j) - fd) / std::max(1.0, std::fabs(fd)));
  }
  std::printf("db vs central differences in double: max relative error %.3g\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
