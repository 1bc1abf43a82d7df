// expect: fusex::run: an input does not match the traced function's parameter
// Negative-compile test: binding a float view to a bf16 parameter is rejected.
#include <fusex/fusex.hpp>
#include <vector>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<fx::bf16, 1> x) { return fx::exp(fx::convert<float>(x)); });

int main() {
#if defined(FUSEX_NEGATIVE_CONTROL)
  std::vector<fx::bf16> x(4);
#else
  std::vector<float> x(4);
#endif
  auto y = fx::evaluate(prog, fx::reference, fx::view<const decltype(x)::value_type, 1>(x.data(), {4}));
  return y.size() == 4 ? 0 : 1;
}
