// expect: fusex::ops::gelu: operand must be floating point
// Negative-compile test: a composite's misuse is reported by the composite,
// not by a prim inside it.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<std::int32_t, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::ops::gelu(fx::convert<float>(x));
#else
  return fx::ops::gelu(x);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
