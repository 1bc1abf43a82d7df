// expect: fusex_error_vjp_wrt_names_an_argument_the_program_does_not_have
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// wrt names argument 3 of a two-argument program.
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::tensor<float, 1> y) { return x * y; });

#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr fx::vjp_options opts{.wrt = fx::wrt({0, 1})};
#else
constexpr fx::vjp_options opts{.wrt = fx::wrt({0, 3})};
#endif
constexpr auto grad = fx::vjp<opts>(prog);

int main() { return grad.num_gradients() == 2 ? 0 : 1; }
