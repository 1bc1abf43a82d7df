// expect: fusex::slice: axis out of range
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::slice<1>(x, 0, 1);
#else
  return fx::slice<3>(x, 0, 1);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
