// expect: fusex::permute: axes must be a permutation
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 3> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::permute<0, 2, 1>(x);
#else
  return fx::permute<0, 0, 2>(x);
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
