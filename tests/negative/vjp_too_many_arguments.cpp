// expect: fusex::vjp: the program has more than 64 arguments
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the op; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// vjp's wrt is a 64-bit mask: a program of 65 arguments is rejected.
#define FX_ARG(i) fx::tensor<float, 0> a##i
#define FX_ARGS8(i) FX_ARG(i##0), FX_ARG(i##1), FX_ARG(i##2), FX_ARG(i##3), FX_ARG(i##4), FX_ARG(i##5), FX_ARG(i##6), FX_ARG(i##7)
constexpr auto prog = fx::trace([](FX_ARGS8(1), FX_ARGS8(2), FX_ARGS8(3), FX_ARGS8(4), FX_ARGS8(5), FX_ARGS8(6),
                                   FX_ARGS8(7), FX_ARGS8(8)
#if !defined(FUSEX_NEGATIVE_CONTROL)
                                   , FX_ARG(99)
#endif
                                   ) { return a10 * a87; });
constexpr auto grad = fx::vjp(prog);

int main() { return grad.num_gradients() > 0 ? 0 : 1; }
