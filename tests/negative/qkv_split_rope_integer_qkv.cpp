// expect: fusex::ops::qkv_split_rope: qkv, cos and sin must be floating point
// Negative-compile test: a composite's misuse is reported by the composite,
// not by a prim inside it.
#include <fusex/fusex.hpp>
namespace fx = fusex;

constexpr auto prog = fx::trace([](fx::tensor<std::int32_t, 3> qkv, fx::tensor<float, 2> cos, fx::tensor<float, 2> sin) {
#if defined(FUSEX_NEGATIVE_CONTROL)
  return fx::ops::qkv_split_rope<false>(fx::convert<float>(qkv), cos, sin, {4, 2, 16, 8});
#else
  return fx::ops::qkv_split_rope<false>(qkv, cos, sin, {4, 2, 16, 8});
#endif
});

int main() { return prog.num_nodes() > 0 ? 0 : 1; }
