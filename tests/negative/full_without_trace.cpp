// expect: fusex_error_full_needs_a_runtime_extent_or_full_like
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// fx::full with only compile-time extents has no trace to belong to.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return x + fx::full<float, 1>({x.extent<0>()}, 1.0);
#else
  return x + fx::full<float, 1>({4}, 1.0);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
