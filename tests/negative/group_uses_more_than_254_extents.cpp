// expect: fusex_error_group_uses_more_than_254_extents
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the problem; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// One fused group adding 160 one-element slices of x, each at its own
// run-time bounds: 320 distinct index expressions, more than the 254 a
// group's program can name.
#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr int slices = 16;
#else
constexpr int slices = 160;
#endif
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::index i) {
  auto acc = fx::slice<0>(x, i, i + 1);
  for (int k = 1; k < slices; ++k) acc = acc + fx::slice<0>(x, i + 2 * k, i + (2 * k + 1));
  return acc;
});
constexpr auto plan = fx::partition(prog);

int main() {
  fx::host_tensor<float, 1> x(fx::extents_array<1>{2 * slices});
  const auto y = fx::evaluate(plan, fx::host{}, x, fx::index_t{0});
  return y.size() == 1 ? 0 : 1;
}
