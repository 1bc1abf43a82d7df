// expect: fusex_error_reshape_element_count_differs
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::reshape(fx::slice<1>(fx::slice<0>(x, 0, 2), 0, 3), {3, 2});
#else
  return fx::reshape(fx::slice<1>(fx::slice<0>(x, 0, 2), 0, 3), {4});
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
