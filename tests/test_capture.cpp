// Graph capture: node identity, run-time parameters, dtype rules, symbolic
// extents, and the printed trace. Most checks are static: the graph is a
// constexpr value.
#include "support.hpp"

namespace fx = fusex;

namespace {

constexpr auto square_twice = fx::trace([](fx::tensor<float, 2> x) {
  auto y = x * x;         // x used twice: one input node, two edges
  auto a = fx::exp(y);    // the same expression written twice...
  auto b = fx::exp(y);    // ...is one node
  return a + b;
});

constexpr auto rotate = fx::trace([](fx::tensor<float, 3> x, fx::index n) {
  auto lo = fx::slice<2>(x, 0, n / 2);
  auto hi = fx::slice<2>(x, n / 2, n);
  auto lo2 = fx::slice<2>(x, 0, n / 2);  // same run-time bounds: same node
  return fx::cat<2>(-hi, lo + lo2);
});

constexpr auto promotions = fx::trace([](fx::tensor<fx::bf16, 1> b, fx::tensor<fx::f16, 1> h,
                                         fx::tensor<std::int32_t, 1> i, fx::tensor<float, 1> f) {
  return std::tuple{b * 0.5f, b + f, b + h, i + 0.5, i * 2, f < 1.0f, fx::sum<0>(i), fx::exp(i)};
});

constexpr auto heads = fx::trace([](fx::tensor<float, 3> x, fx::index h) {
  // (B, T, C) -> (B, T, h, C/h) -> (B, T, C): the extents simplify back.
  auto y = fx::reshape(x, {x.extent<0>(), x.extent<1>(), h, x.extent<2>() / h});
  return fx::reshape(y, {x.extent<0>(), x.extent<1>(), y.extent<2>() * y.extent<3>()});
});

constexpr auto layer_norm = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w, fx::scalar<float> eps) {
  auto [var, mean] = fx::var_mean<-1>(x, 0.0, fx::keepdim);
  auto centered = x - mean;
  auto rstd = fx::rsqrt(var + eps);
  auto normed = centered * rstd;
  return normed * fx::unsqueeze<0>(w);
});

template <class G>
constexpr int count_op(const G& g, fx::op_kind k) {
  int c = 0;
  for (int i = 0; i < g.num_nodes(); ++i) c += g.nodes[i].op == k;
  return c;
}

}  // namespace

TEST_CASE("a value used twice is one node, and common subexpressions merge", "[capture]") {
  constexpr auto& g = decltype(square_twice)::graph;
  STATIC_REQUIRE(count_op(g, fx::op_kind::input) == 1);
  STATIC_REQUIRE(count_op(g, fx::op_kind::exp) == 1);
  STATIC_REQUIRE(g.num_nodes() == 4);  // input, mul, exp, add
  STATIC_REQUIRE(g.operand(1, 0) == 0 && g.operand(1, 1) == 0);
  STATIC_REQUIRE(g.operand(3, 0) == 2 && g.operand(3, 1) == 2);
  STATIC_REQUIRE(g.uses(0) == 2);
}

TEST_CASE("run-time slice bounds keep node identity", "[capture]") {
  constexpr auto& g = decltype(rotate)::graph;
  STATIC_REQUIRE(count_op(g, fx::op_kind::slice) == 2);
  STATIC_REQUIRE(g.params[1].kind == fx::arg_kind::index);
  // The cat's axis extent is (n/2) + (n - n/2), which folds to n itself.
  constexpr int cat_node = g.outputs[0];
  STATIC_REQUIRE(g.nodes[cat_node].op == fx::op_kind::cat);
  STATIC_REQUIRE(g.exprs[g.nodes[cat_node].shape[2]].kind == fx::expr_kind::param);
}

TEST_CASE("dtype promotion follows PyTorch, with weak C++ scalars", "[capture]") {
  constexpr auto& g = decltype(promotions)::graph;
  using fx::dtype;
  STATIC_REQUIRE(g.nodes[g.outputs[0]].dt == dtype::bf16);  // bf16 * 0.5f stays bf16
  STATIC_REQUIRE(g.nodes[g.outputs[1]].dt == dtype::f32);   // bf16 + f32 tensor
  STATIC_REQUIRE(g.nodes[g.outputs[2]].dt == dtype::f32);   // bf16 + f16 meet in f32
  STATIC_REQUIRE(g.nodes[g.outputs[3]].dt == dtype::f32);   // i32 + 0.5
  STATIC_REQUIRE(g.nodes[g.outputs[4]].dt == dtype::i32);   // i32 * 2
  STATIC_REQUIRE(g.nodes[g.outputs[5]].dt == dtype::b8);    // comparison
  STATIC_REQUIRE(g.nodes[g.outputs[6]].dt == dtype::i64);   // integer sum widens
  STATIC_REQUIRE(g.nodes[g.outputs[7]].dt == dtype::f32);   // exp of an integer
  // The weak scalar next to bf16 is an f32 constant: 0.5 is not rounded to bf16.
  STATIC_REQUIRE(g.nodes[g.operand(g.outputs[0], 1)].dt == dtype::f32);
}

TEST_CASE("symbolic extents fold and equal extents are tracked", "[capture]") {
  constexpr auto& g = decltype(heads)::graph;
  // A reshape of a reshape reshapes the input directly; the split node is dead.
  STATIC_REQUIRE(g.num_nodes() == 2);
  STATIC_REQUIRE(g.nodes[1].op == fx::op_kind::reshape && g.operand(1, 0) == 0);
  constexpr auto& ln = decltype(layer_norm)::graph;
  // w's extent is required equal to x's last extent.
  constexpr int w = ln.params[1].node;
  STATIC_REQUIRE(ln.same_extent(ln.nodes[w].shape[0], ln.nodes[0].shape[1]));
  STATIC_REQUIRE(!ln.same_extent(ln.nodes[0].shape[0], ln.nodes[0].shape[1]));
}

TEST_CASE("the trace prints one line per node with op, dtype and shape", "[capture]") {
  const std::string s = fx::to_string(layer_norm);
  INFO(s);
  CHECK(s.find("# fusex trace: 3 arguments, 11 nodes, 1 output") != std::string::npos);
  CHECK(s.find("t0: f32[n0, n1] = input(arg=0)") != std::string::npos);
  CHECK(s.find("t2: f32[] = scalar(arg=2)") != std::string::npos);
  CHECK(s.find("t3: f32[n0, 1] = var_mean(t0, axis=1, correction=0, keepdim)[var]") != std::string::npos);
  CHECK(s.find("= broadcast_in_dim(t1, dims=[1])") != std::string::npos);
  CHECK(s.find("required equal at run time: n2 == n1") != std::string::npos);
  CHECK(s.find("return t10") != std::string::npos);
  const std::string r = fx::to_string(rotate);
  INFO(r);
  CHECK(r.find("slice(t0, axis=2, start=(p1 / 2), stop=p1, step=1)") != std::string::npos);
}
