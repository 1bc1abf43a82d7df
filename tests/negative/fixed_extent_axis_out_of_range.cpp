// expect: fusex_error_fixed_extent_names_no_argument_axis
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the error; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

// A fixed extent for axis 2 of a rank-2 argument names no axis.
#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr fx::extent_hints fixed = fx::extent_hints{}.extent(0, 1, 64);
#else
constexpr fx::extent_hints fixed = fx::extent_hints{}.extent(0, 2, 64);
#endif
constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) { return x * 2.0f; }, fx::fixed_extents<fixed>);

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
