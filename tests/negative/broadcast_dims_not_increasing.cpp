// expect: fusex::broadcast_in_dim: broadcast dimensions must be strictly increasing
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::broadcast_in_dim<0, 1>(x, {x.extent<0>(), x.extent<1>(), 4});
#else
  return fx::broadcast_in_dim<1, 0>(x, {x.extent<1>(), x.extent<0>(), 4});
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
