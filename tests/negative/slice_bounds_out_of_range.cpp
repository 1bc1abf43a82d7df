// expect: fusex_error_slice_bounds_out_of_range
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// A slice whose constant stop comes before its start.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::slice<0>(x, 1, 2);
#else
  return fx::slice<0>(x, 2, 1);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
