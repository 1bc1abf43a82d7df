// expect: fusex::ops::layer_norm: operands must be floating point
// Negative-compile test: a composite's misuse is reported by the composite,
// not by a prim inside it.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w, fx::tensor<float, 1> b) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
#else
  return fx::ops::layer_norm(fx::convert<std::int32_t>(x), w, b, 1e-5).y;
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
