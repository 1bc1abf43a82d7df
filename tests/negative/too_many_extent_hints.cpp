// expect: fusex_error_too_many_extent_hints
// Negative-compile test: the line under #else must be rejected at compile
// time with a message naming the problem; the control line must compile.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<float, 2> x) { return fx::exp(x) * 2.0f; });
// A table holds 32 hints; one more is rejected.
constexpr fx::extent_hints hints_of(int n) {
  fx::extent_hints h{};
  for (int i = 0; i < n; ++i) h = h.extent(0, i % 2, 64 + i);
  return h;
}
#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr auto h = hints_of(32);
#else
constexpr auto h = hints_of(33);
#endif
constexpr auto plan = fx::partition(prog, fx::policy::fused<>{}, fx::hints<h>);

int main() { return plan.kernels() > 0 ? 0 : 1; }
