// Run-time shape, binding and aliasing errors: each is an exception that
// names the op (or argument) and the values, raised before memory is touched.
#include "support.hpp"

namespace fx = fusex;
using Catch::Matchers::Contains;

namespace {
constexpr auto p_add = fx::trace([](fx::tensor<float, 2> a, fx::tensor<float, 2> b) { return a + b; });
constexpr auto p_cat = fx::trace([](fx::tensor<float, 2> a, fx::tensor<float, 2> b) { return fx::cat<1>(a, b); });
constexpr auto p_reshape = fx::trace([](fx::tensor<float, 2> a, fx::index n) { return fx::reshape(a, {n, 4}); });
constexpr auto p_slice = fx::trace([](fx::tensor<float, 1> a, fx::index s, fx::index e) { return fx::slice<0>(a, s, e); });
constexpr auto p_pad = fx::trace([](fx::tensor<float, 1> a, fx::index lo) { return fx::pad<0>(a, lo, 1); });
constexpr auto p_mm = fx::trace([](fx::tensor<float, 2> a, fx::tensor<float, 2> b) { return fx::matmul(a, b); });
constexpr auto p_bcast = fx::trace([](fx::tensor<float, 1> a, fx::index n) { return fx::broadcast_in_dim<0>(a, {n}); });
constexpr auto p_div = fx::trace([](fx::tensor<float, 1> a, fx::index n) { return fx::reshape(a, {a.extent<0>() / n}); });
constexpr auto p_exp = fx::trace([](fx::tensor<float, 1> a) { return fx::exp(a); });

std::vector<float> buf(64, 1.0f);
fx::view<const float, 2> v2(int r, int c) { return fx::view<const float, 2>(buf.data(), {r, c}); }
fx::view<const float, 1> v1(int n) { return fx::view<const float, 1>(buf.data(), {n}); }
}  // namespace

TEST_CASE("elementwise extents that differ name the op, operand and extents", "[errors]") {
  REQUIRE_THROWS_MATCHES(fx::evaluate(p_add, fx::reference, v2(2, 3), v2(2, 4)), fx::shape_error,
                         Catch::Message("fusex::add (t2): operand t1 has extents [2, 4] but the result has [2, 3] "
                                        "(mismatch on axis 1; only extents that are statically 1 broadcast)"));
  // A run-time extent of 1 does not broadcast implicitly.
  REQUIRE_THROWS_WITH(fx::evaluate(p_add, fx::reference, v2(2, 3), v2(1, 3)), Contains("fusex::add") && Contains("[1, 3]"));
}

TEST_CASE("cat, reshape, slice, pad, matmul and broadcast_in_dim check their extents", "[errors]") {
  REQUIRE_THROWS_WITH(fx::evaluate(p_cat, fx::reference, v2(2, 3), v2(3, 3)),
                      Contains("fusex::cat (t2): operand 1 (t1) has extents [3, 3] but operand 0 has [2, 3]"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_reshape, fx::reference, v2(2, 6), 4),
                      Contains("fusex::reshape (t1): cannot reshape [2, 6] (12 elements) to [4, 4] (16 elements)"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_slice, fx::reference, v1(8), 2, 9),
                      Contains("fusex::slice (t1): bounds start=2 stop=9 step=1 are out of range for extent 8 on axis 0"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_slice, fx::reference, v1(8), 5, 3), Contains("start=5 stop=3"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_slice, fx::reference, v1(8), -1, 3), Contains("fusex::slice"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_pad, fx::reference, v1(8), -2), Contains("fusex::pad (t1): pad widths low=-2 high=1"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_mm, fx::reference, v2(2, 3), v2(4, 5)),
                      Contains("fusex::matmul (t2): inner extents differ: a is [2, 3], b is [4, 5]"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_bcast, fx::reference, v1(3), 5),
                      Contains("fusex::broadcast_in_dim (t1): input extent 3 on axis 0 cannot broadcast to 5"));
  REQUIRE_THROWS_WITH(fx::evaluate(p_div, fx::reference, v1(3), 0), Contains("divides by zero"));
}

TEST_CASE("outputs are checked for extents, overlap and aliasing", "[errors]") {
  std::vector<float> out(16);
  // Wrong extents.
  REQUIRE_THROWS_WITH(fx::run(p_exp, fx::reference, fx::inputs(v1(4)), fx::outputs(fx::view<float, 1>(out.data(), {5}))),
                      Contains("fusex::run: output 0 (t1): expected extents [4], got [5]"));
  // Elements that overlap each other.
  REQUIRE_THROWS_WITH(
      fx::run(p_exp, fx::reference, fx::inputs(v1(4)), fx::outputs(fx::view<float, 1>(out.data(), {4}, {0}))),
      Contains("make elements overlap"));
  // An output aliasing an input.
  REQUIRE_THROWS_WITH(
      fx::run(p_exp, fx::reference, fx::inputs(v1(4)), fx::outputs(fx::view<float, 1>(buf.data() + 2, {4}))),
      Contains("fusex::run: output 0 (t1) overlaps argument 0"));
  // Null data for a non-empty input, negative extents.
  REQUIRE_THROWS_AS(fx::evaluate(p_exp, fx::reference, fx::view<const float, 1>(nullptr, {3})), fx::argument_error);
  REQUIRE_THROWS_WITH(fx::evaluate(p_exp, fx::reference, fx::view<const float, 1>(buf.data(), {-1})),
                      Contains("fusex::run: argument 0 (t0): negative extent on axis 0"));
}

TEST_CASE("errors are raised before any output is written", "[errors]") {
  std::vector<float> out(6, 42.0f);
  REQUIRE_THROWS(fx::run(p_add, fx::reference, fx::inputs(v2(2, 3), v2(2, 4)), fx::outputs(fx::view<float, 2>(out.data(), {2, 3}))));
  for (float v : out) REQUIRE(v == 42.0f);
}

TEST_CASE("data misaligned for its element type is an error naming the argument", "[errors]") {
  alignas(8) unsigned char raw[64] = {};
  const fx::view<const float, 1> skewed(reinterpret_cast<const float*>(raw + 1), {4});
  REQUIRE_THROWS_AS(fx::evaluate(p_exp, fx::reference, skewed), fx::shape_error);
  REQUIRE_THROWS_WITH(fx::evaluate(p_exp, fx::reference, skewed),
                      Contains("fusex::run: argument 0 (t0): data at") && Contains("is not aligned to its f32 elements (4 bytes)"));
  std::vector<float> out(8);
  const fx::view<float, 1> skewed_out(reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out.data()) + 2), {4});
  REQUIRE_THROWS_WITH(fx::run(p_exp, fx::reference, fx::inputs(v1(4)), fx::outputs(skewed_out)),
                      Contains("fusex::run: output 0 (t1): data at") && Contains("not aligned"));
}

namespace {
constexpr auto p_layer_norm = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w, fx::tensor<float, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
constexpr auto p_qkv = fx::trace([](fx::tensor<float, 3> qkv, fx::tensor<float, 2> cos, fx::tensor<float, 2> sin,
                                    fx::index nh, fx::index g, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {nh, g, hs, n});
});
std::vector<float> big(4096, 0.5f);
}  // namespace

TEST_CASE("a shape error inside a composite op names the op and the extents the user passed first", "[errors]") {
  const fx::view<const float, 2> x(big.data(), {2, 64});
  const fx::view<const float, 1> w63(big.data(), {63}), w64(big.data(), {64});
  for (auto exec : {0, 1}) {
    auto run = [&] {
      return exec == 0 ? fx::evaluate(p_layer_norm, fx::reference, x, w63, w64)
                       : fx::evaluate(fx::partition(p_layer_norm), fx::host{}, x, w63, w64);
    };
    REQUIRE_THROWS_AS(run(), fx::shape_error);
    REQUIRE_THROWS_WITH(run(), Catch::Matchers::StartsWith("fusex::ops::layer_norm: x [2, 64], weight [63], bias [64] "
                                                           "(inside it: fusex::broadcast_in_dim"));
  }
  // qkv of 2 x 3 x 64 features for 4 heads, 2 groups of head size 16 (128 features): the config is named too
  const fx::view<const float, 3> qkv(big.data(), {2, 3, 64});
  const fx::view<const float, 2> cs(big.data(), {3, 8});
  REQUIRE_THROWS_WITH(fx::evaluate(p_qkv, fx::reference, qkv, cs, cs, 4, 2, 16, 8),
                      Catch::Matchers::StartsWith("fusex::ops::qkv_split_rope: qkv [2, 3, 64], cos [3, 8], sin [3, 8], "
                                                  "n_head 4, n_query_groups 2, head_size 16, n_elem 8 (inside it: fusex::"));
  // outside any composite the prim's message stands alone
  REQUIRE_THROWS_WITH(fx::evaluate(p_add, fx::reference, v2(2, 3), v2(2, 4)), Catch::Matchers::StartsWith("fusex::add (t2)"));
}

namespace {
// LayerNorm with its hidden size fixed at 64 when traced: the extent is a
// constant of the trace (planning, kernels), and a run at another hidden
// size is an error naming the argument and the axis.
constexpr auto ln_body = [](fx::tensor<float, 2> x, fx::tensor<float, 1> w, fx::tensor<float, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
};
constexpr fx::extent_hints hidden64 = fx::extent_hints{}.extent(0, 1, 64).extent(1, 0, 64).extent(2, 0, 64);
constexpr auto ln_free = fx::trace(ln_body);
constexpr auto ln_fixed = fx::trace(ln_body, fx::fixed_extents<hidden64>);
constexpr auto p_slice_fixed = fx::trace([](fx::tensor<float, 1> a, fx::index n) { return fx::slice<0>(a, 0, n); },
                                         fx::fixed_extents<fx::extent_hints{}.value(1, 3)>);

template <class P>
constexpr bool axis_is_constant(P, int param, int axis, std::int64_t v) {
  const auto& g = P::graph;
  const auto& e = g.exprs[g.nodes[g.params[param].node].shape[axis]];
  return e.kind == fx::expr_kind::constant && e.value == v;
}
static_assert(axis_is_constant(ln_fixed, 0, 1, 64) && axis_is_constant(ln_fixed, 1, 0, 64));
static_assert(!axis_is_constant(ln_fixed, 0, 0, 64) && !axis_is_constant(ln_free, 0, 1, 64));
// Planning counts the fixed extent exactly: the plan of the fixed trace at
// default extents moves what the free trace's plan moves at hints that say
// the same (rows take the default's 2^20 / 64).
static_assert(fx::partition(ln_fixed).bytes() ==
              fx::partition(ln_free, fx::policy::fused<>{},
                            fx::hints<fx::extent_hints{}.shape(0, {16384, 64}).shape(1, {64}).shape(2, {64})>)
                  .bytes());
}  // namespace

TEST_CASE("extents fixed by the trace are constants, checked when the program runs", "[errors]") {
  auto x = fxt::random_tensor<float, 2>({5, 64});
  auto w = fxt::random_tensor<float, 1>({64}), b = fxt::random_tensor<float, 1>({64});
  // the fused host kernels (constants folded) compute what the free trace's reference does
  const auto ref = fx::evaluate(ln_free, fx::reference, x, w, b);
  const auto got = fx::evaluate(fx::partition(ln_fixed), fx::host{}, x, w, b);
  REQUIRE(got.extents() == ref.extents());
  for (fx::index_t i = 0; i < got.size(); ++i) REQUIRE(fxt::close_as<float>(got.values()[i], ref.values()[i]));

  auto x48 = fxt::random_tensor<float, 2>({5, 48});
  auto w48 = fxt::random_tensor<float, 1>({48}), b48 = fxt::random_tensor<float, 1>({48});
  REQUIRE_THROWS_MATCHES(fx::evaluate(ln_fixed, fx::host{}, x48, w48, b48), fx::shape_error,
                         Catch::Message("fusex::run: argument 0 (t0): axis 1 is fixed at 64 (a constant of the trace, "
                                        "fusex::fixed_extents), got 48 (extents [5, 48])"));
  CHECK_NOTHROW(fx::evaluate(ln_free, fx::host{}, x48, w48, b48));

  CHECK(fx::evaluate(p_slice_fixed, fx::reference, v1(8), 3).size() == 3);
  REQUIRE_THROWS_WITH(fx::evaluate(p_slice_fixed, fx::reference, v1(8), 4),
                      Contains("fusex::run: argument 1 (an index) is fixed at 3") && Contains("got 4"));
}
