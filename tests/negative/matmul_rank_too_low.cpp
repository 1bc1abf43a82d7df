// expect: fusex::matmul: operands must have rank >= 2
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::tensor<float, 2> y) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::matmul(fx::unsqueeze<0>(x), y);
#else
  return fx::matmul(x, y);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
