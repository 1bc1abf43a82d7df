// expect: fusex::mul: arithmetic on a bool operand
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return x * fx::convert<float>(x > 0.0f);
#else
  return x * (x > 0.0f);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
