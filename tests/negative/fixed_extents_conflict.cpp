// expect: fusex_error_constant_extents_differ
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the error; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// x + y with x's axis 1 fixed at 64 and y's at 32: the add needs them equal.
#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr fx::extent_hints fixed = fx::extent_hints{}.extent(0, 1, 64).extent(1, 1, 64);
#else
constexpr fx::extent_hints fixed = fx::extent_hints{}.extent(0, 1, 64).extent(1, 1, 32);
#endif
constexpr auto prog =
    fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 2> y) { return x + y; }, fx::fixed_extents<fixed>);

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
