// expect: fusex_error_index_division_by_zero
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// An extent divided by a constant zero.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::index n) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::slice<0>(x, 0, n / 2);
#else
  return fx::slice<0>(x, 0, n / 0);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
