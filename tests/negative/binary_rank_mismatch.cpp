// expect: fusex::add: operands must have the same rank
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 3> x, fx::tensor<float, 2> y) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return x + fx::unsqueeze<0>(y);
#else
  return x + y;
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
