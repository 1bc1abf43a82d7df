// expect: fusex_error_axis_out_of_range
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// A run-time axis argument of tensor::extent, out of range for rank 2.
constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::reshape(x, {x.extent(-1), x.extent(0)});
#else
  return fx::reshape(x, {x.extent(2), x.extent(0)});
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
