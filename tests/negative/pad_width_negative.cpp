// expect: fusex_error_pad_width_negative
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// A negative constant pad width.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::pad<0>(x, 1, 0);
#else
  return fx::pad<0>(x, -1, 0);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
