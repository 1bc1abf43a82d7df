// expect: fusex::exp: operand is bool
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::exp(x);
#else
  return fx::exp(x > 1.0f);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
