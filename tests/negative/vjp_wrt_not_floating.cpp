// expect: fusex_error_vjp_wrt_names_an_argument_that_is_not_floating_point
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// Argument 1 is an extent, argument 2 an integer tensor: neither has a gradient.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::index n, fx::tensor<std::int32_t, 1> k) {
  return fx::slice<0>(x, 0, n) * fx::convert<float>(fx::slice<0>(k, 0, n));
});

#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr fx::vjp_options opts{.wrt = fx::wrt({0})};
#else
constexpr fx::vjp_options opts{.wrt = fx::wrt({0, 2})};
#endif
constexpr auto grad = fx::vjp<opts>(prog);

int main() { return grad.num_gradients() == 1 ? 0 : 1; }
