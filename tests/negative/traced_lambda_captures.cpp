// expect: fusex::trace: the traced function must not capture anything
// Negative-compile test: a traced function that captures state is rejected.
#include <fusex/fusex.hpp>
namespace fx = fusex;

#if defined(FUSEX_NEGATIVE_CONTROL)
constexpr auto prog = fx::trace([](fx::tensor<float, 1> x, fx::scalar<float> s) { return x * s; });
#else
constexpr float scale = 2.0f;
constexpr auto prog = fx::trace([s = scale](fx::tensor<float, 1> x, fx::scalar<float>) { return x * s; });
#endif

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
