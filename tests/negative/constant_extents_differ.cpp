// expect: fusex_error_constant_extents_differ
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// x[0:2] + x[0:3]: two extents known at compile time to differ.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::slice<0>(x, 0, 2) + fx::slice<0>(x, 1, 3);
#else
  return fx::slice<0>(x, 0, 2) + fx::slice<0>(x, 0, 3);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
