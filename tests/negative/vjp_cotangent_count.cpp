// expect: fusex::value_and_grad: give one cotangent per output
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 1> x) { return std::tuple{fx::exp(x), fx::sin(x)}; });

int main() {
  fx::host_tensor<float, 1> x({4});
#if defined(FUSEX_NEGATIVE_CONTROL)
  auto r = fx::value_and_grad(fx::vjp(prog), fx::host{}, fx::inputs(x), fx::cotangents(x, x));
#else
  auto r = fx::value_and_grad(fx::vjp(prog), fx::host{}, fx::inputs(x), fx::cotangents(x));
#endif
  return std::get<0>(r.gradients).extent(0) == 4 ? 0 : 1;
}
