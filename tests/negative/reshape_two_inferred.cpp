// expect: fusex_error_reshape_more_than_one_inferred_extent
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// reshape infers at most one extent (-1).
constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::reshape(x, {-1, x.extent<1>()});
#else
  return fx::reshape(x, {-1, -1});
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
