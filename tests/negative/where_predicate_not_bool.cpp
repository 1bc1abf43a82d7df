// expect: fusex::where: the predicate must be a bool tensor
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 2> y) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::where(x > 0.0f, x, y);
#else
  return fx::where(x, x, y);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
