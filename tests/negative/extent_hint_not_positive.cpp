// expect: fusex_error_extent_hint_not_positive
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the problem; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) { return fx::exp(x) * 2.0f; });
// A planning hint of 0 rows.
#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr auto h = fx::extent_hints{}.extent(0, 0, 64);
#else
constexpr auto h = fx::extent_hints{}.extent(0, 0, 0);
#endif
constexpr auto plan = fx::partition(prog, fx::policy::fused<>{}, fx::hints<h>);

int main() { return plan.kernels() > 0 ? 0 : 1; }
