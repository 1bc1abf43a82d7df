// expect: fusex::ops::rms_norm: operand must have rank >= 1
// Negative-compile test: a composite's misuse is reported by the composite,
// not by a prim inside it.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::ops::rms_norm(x, w, 1e-5);
#else
  return fx::ops::rms_norm(fx::sum<0>(fx::sum<0>(x)), w, 1e-5);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
