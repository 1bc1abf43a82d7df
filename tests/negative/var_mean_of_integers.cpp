// expect: fusex::var_mean: operand must be floating point
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<std::int32_t, 2> x) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::var_mean<0>(fx::convert<float>(x)).var;
#else
  return fx::var_mean<0>(x).var;
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
