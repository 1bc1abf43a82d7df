#pragma once
// Random DAGs of prims for property tests. The generator is constexpr, so the
// same seeds can build graphs at run time (planner properties) and at compile
// time (executors instantiated from them). Graphs mix elementwise ops, remaps,
// reductions, matmul, shared subexpressions and several outputs; every input
// has the same run-time extents (rows, cols).

#include <cstdint>
#include <vector>

#include <fusex/fusex.hpp>

namespace fxt {

namespace fx = fusex;

struct rng64 {
  std::uint64_t s;
  constexpr std::uint64_t next() {
    s += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  constexpr int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

struct gen_options {
  int min_ops = 2, max_ops = 9;
  bool matmul = true, reductions = true, remaps = true;
  // Mixed dtypes: conversions to bf16, f16, f64 and back, integer paths
  // (i32 from exactly scaled inputs: +, *, max, abs, neg, sums in i64) and
  // where/comparisons; inputs then span [-4, 4).
  bool mixed = false;
};

namespace gen {
using fx::detail::builder;

constexpr int add_node(builder& b, fx::node n, const std::int32_t* ops, int count) { return b.add(n, ops, count); }

constexpr bool broadcastable(const builder& b, int x, int y) {
  const fx::node& a = b.nodes[x];
  const fx::node& c = b.nodes[y];
  if (a.rank != c.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (b.find(a.shape[i]) != b.find(c.shape[i]) && !b.is_const(a.shape[i], 1) && !b.is_const(c.shape[i], 1)) return false;
  return true;
}

constexpr int elementwise(builder& b, fx::op_kind k, int x, int y = -1) {
  const std::int32_t ids[2] = {x, y};
  const int n = y < 0 ? 1 : 2;
  fx::dtype dt = y < 0 ? b.nodes[x].dt : fx::promote(b.nodes[x].dt, b.nodes[y].dt);
  if (fx::is_comparison(k)) dt = fx::dtype::b8;
  else if (!fx::is_floating(dt) && k != fx::op_kind::neg && k != fx::op_kind::abs && fx::is_unary(k)) dt = fx::dtype::f32;
  int rank = b.nodes[x].rank;
  if (y >= 0 && b.nodes[y].rank > rank) rank = b.nodes[y].rank;
  return fx::detail::elementwise(b, k, dt, rank, ids, n);
}

constexpr int constant(builder& b, double v, fx::dtype dt = fx::dtype::f32) { return fx::detail::constant_node(b, dt, v); }

constexpr int convert(builder& b, int x, fx::dtype dt) {
  const std::int32_t ids[1] = {x};
  return fx::detail::elementwise(b, fx::op_kind::convert, dt, b.nodes[x].rank, ids, 1);
}

constexpr int where(builder& b, int p, int x, int y) {
  const std::int32_t ids[3] = {p, x, y};
  return fx::detail::elementwise(b, fx::op_kind::where, fx::promote(b.nodes[x].dt, b.nodes[y].dt), b.nodes[x].rank, ids, 3);
}

constexpr int reduction(builder& b, fx::op_kind k, int x, int axis, bool keep, int flag = 0) {
  const fx::node& in = b.nodes[x];
  fx::node nd;
  nd.op = k;
  nd.dt = k == fx::op_kind::sum && !fx::is_floating(in.dt) ? fx::dtype::i64 : in.dt;
  nd.rank = static_cast<std::int8_t>(keep ? in.rank : in.rank - 1);
  nd.axis = static_cast<std::int8_t>(axis);
  nd.flag = static_cast<std::int8_t>((keep ? 1 : 0) | flag);
  for (int i = 0, j = 0; i < in.rank; ++i) {
    if (i == axis) {
      if (keep) nd.shape[j++] = b.constant(1);
    } else {
      nd.shape[j++] = in.shape[i];
    }
  }
  const std::int32_t ids[1] = {x};
  return add_node(b, nd, ids, 1);
}

constexpr int transpose(builder& b, int x) {
  const fx::node& in = b.nodes[x];
  fx::node nd;
  nd.op = fx::op_kind::permute;
  nd.dt = in.dt;
  nd.rank = in.rank;
  // i < max_rank too: g++ cannot see that a node's rank is at most max_rank
  for (int i = 0; i < in.rank && i < fx::max_rank; ++i) {
    const int src = i == in.rank - 1 ? 0 : i == 0 ? in.rank - 1 : i;
    nd.map[i] = static_cast<std::int8_t>(src);
    nd.shape[i] = in.shape[src];
  }
  const std::int32_t ids[1] = {x};
  return add_node(b, nd, ids, 1);
}

// x[..., 1:] along `axis`
constexpr int slice1(builder& b, int x, int axis) {
  fx::node nd = b.nodes[x];
  const int one = b.constant(1);
  const int ext = nd.shape[axis];
  fx::node s;
  s.op = fx::op_kind::slice;
  s.dt = nd.dt;
  s.rank = nd.rank;
  s.axis = static_cast<std::int8_t>(axis);
  for (int i = 0; i < nd.rank; ++i) s.shape[i] = nd.shape[i];
  s.shape[axis] = b.binary(fx::expr_kind::sub, ext, one);
  s.iparam[0] = one;
  s.iparam[1] = ext;
  s.iparam[2] = one;
  const std::int32_t ids[1] = {x};
  return add_node(b, s, ids, 1);
}

// pad one element of `value` before index 0 along `axis`
constexpr int pad1(builder& b, int x, int axis, double value) {
  fx::node nd = b.nodes[x];
  fx::node p;
  p.op = fx::op_kind::pad;
  p.dt = nd.dt;
  p.rank = nd.rank;
  p.axis = static_cast<std::int8_t>(axis);
  p.value = value;
  for (int i = 0; i < nd.rank; ++i) p.shape[i] = nd.shape[i];
  const int one = b.constant(1), zero = b.constant(0);
  p.shape[axis] = b.binary(fx::expr_kind::add, nd.shape[axis], one);
  p.iparam[0] = one;
  p.iparam[1] = zero;
  const std::int32_t ids[1] = {x};
  return add_node(b, p, ids, 1);
}

constexpr int cat(builder& b, int x, int y, int axis) {
  fx::node c;
  c.op = fx::op_kind::cat;
  c.dt = fx::promote(b.nodes[x].dt, b.nodes[y].dt);
  c.rank = b.nodes[x].rank;
  c.axis = static_cast<std::int8_t>(axis);
  for (int i = 0; i < c.rank; ++i) c.shape[i] = b.nodes[x].shape[i];
  for (int i = 0; i < c.rank; ++i)
    if (i != axis) b.unify(c.shape[i], b.nodes[y].shape[i]);
  c.shape[axis] = b.binary(fx::expr_kind::add, b.nodes[x].shape[axis], b.nodes[y].shape[axis]);
  const std::int32_t ids[2] = {x, y};
  return add_node(b, c, ids, 2);
}

// (A, B) -> (A, 1, B)-style: a new axis of extent 1 at the front
constexpr int unsqueeze0(builder& b, int x) {
  const fx::node& in = b.nodes[x];
  fx::node nd;
  nd.op = fx::op_kind::broadcast_in_dim;
  nd.dt = in.dt;
  nd.rank = static_cast<std::int8_t>(in.rank + 1);
  nd.shape[0] = b.constant(1);
  for (int j = 0; j < in.rank; ++j) {
    nd.map[j] = static_cast<std::int8_t>(j + 1);
    nd.shape[j + 1] = in.shape[j];
  }
  const std::int32_t ids[1] = {x};
  return add_node(b, nd, ids, 1);
}

// rank-1 x of extent e -> (e, 1) via unsqueeze at the back
constexpr int unsqueeze_last(builder& b, int x) {
  const fx::node& in = b.nodes[x];
  fx::node nd;
  nd.op = fx::op_kind::broadcast_in_dim;
  nd.dt = in.dt;
  nd.rank = static_cast<std::int8_t>(in.rank + 1);
  for (int j = 0; j < in.rank; ++j) {
    nd.map[j] = static_cast<std::int8_t>(j);
    nd.shape[j] = in.shape[j];
  }
  nd.shape[in.rank] = b.constant(1);
  const std::int32_t ids[1] = {x};
  return add_node(b, nd, ids, 1);
}

constexpr int matmul(builder& b, int x, int y) {
  fx::node nd;
  nd.op = fx::op_kind::matmul;
  nd.dt = b.nodes[x].dt;
  nd.rank = 2;
  nd.shape[0] = b.nodes[x].shape[0];
  nd.shape[1] = b.nodes[y].shape[1];
  b.unify(b.nodes[x].shape[1], b.nodes[y].shape[0]);
  const std::int32_t ids[2] = {x, y};
  return add_node(b, nd, ids, 2);
}
}  // namespace gen

// Builds a random program into b: `ninputs` f32 inputs of shape (rows, cols).
constexpr void generate(fx::detail::builder& b, std::uint64_t seed, gen_options opt = {}) {
  rng64 r{seed * 0x2545f4914f6cdd1dull + 1};
  const int ninputs = 1 + r.below(3);
  for (int p = 0; p < ninputs; ++p) {
    fx::node nd;
    nd.op = fx::op_kind::input;
    nd.dt = fx::dtype::f32;
    nd.rank = 2;
    nd.slot = p;
    for (int i = 0; i < 2; ++i) nd.shape[i] = b.push_expr({fx::expr_kind::extent, p, i, 0});
    const int id = b.add(nd, nullptr, 0);
    b.params.push_back({fx::arg_kind::tensor, fx::dtype::f32, 2, id});
    if (p > 0)
      for (int i = 0; i < 2; ++i) b.unify(b.nodes[0].shape[i], nd.shape[i]);
  }
  const int nops = opt.min_ops + r.below(opt.max_ops - opt.min_ops + 1);
  auto pick = [&]() {
    // bias towards recent nodes so chains form, but reuse old ones (shared subexpressions)
    const int n = static_cast<int>(b.nodes.size());
    for (int tries = 0; tries < 8; ++tries) {
      const int back = r.below(4) == 0 ? r.below(n) : r.below(n < 3 ? n : 3);
      const int v = n - 1 - back;
      if (b.nodes[v].op != fx::op_kind::constant && b.nodes[v].rank > 0 && b.nodes[v].dt != fx::dtype::b8) return v;
    }
    return 0;
  };
  constexpr fx::op_kind unary[] = {fx::op_kind::exp, fx::op_kind::neg, fx::op_kind::tanh, fx::op_kind::sigmoid,
                                   fx::op_kind::erf, fx::op_kind::abs, fx::op_kind::sin};
  constexpr fx::op_kind binary[] = {fx::op_kind::add, fx::op_kind::mul, fx::op_kind::sub, fx::op_kind::maximum};
  int made = 0;
  const int choices = opt.mixed ? 26 : 20;
  for (int guard = 0; made < nops && guard < 20 * nops + 50; ++guard) {
    const int choice = r.below(choices);
    const int x = pick();
    const fx::node xn = b.nodes[x];
    const bool fp = fx::is_floating(xn.dt);
    int v = -1;
    if (choice >= 20) {
      constexpr fx::dtype floats[] = {fx::dtype::bf16, fx::dtype::f16, fx::dtype::f64, fx::dtype::f32};
      if (choice < 22) {
        v = gen::convert(b, x, fp ? floats[r.below(4)] : fx::dtype::f32);
      } else if (choice < 24) {
        // integers from an input scaled exactly (x * 8 truncates the same in
        // every executor), then integer arithmetic
        const int in = r.below(ninputs);
        if (b.nodes[in].rank != xn.rank) continue;
        const int i = gen::convert(b, gen::elementwise(b, fx::op_kind::mul, in, gen::constant(b, 8.0)), fx::dtype::i32);
        constexpr fx::op_kind iops[] = {fx::op_kind::add, fx::op_kind::mul, fx::op_kind::maximum, fx::op_kind::sub};
        const int j = r.below(3) == 0 ? gen::elementwise(b, fx::op_kind::abs, i)
                                      : gen::elementwise(b, iops[r.below(4)], i, gen::constant(b, 3.0, fx::dtype::i32));
        v = r.below(2) ? gen::convert(b, j, fx::dtype::f32) : gen::reduction(b, fx::op_kind::sum, j, r.below(xn.rank), false);
      } else {
        // where(x > y, x, y): continuous where the comparison is close
        int y = -1;
        for (int tries = 0; tries < 6 && y < 0; ++tries) {
          const int c = pick();
          if (c != x && gen::broadcastable(b, x, c) && fx::is_floating(b.nodes[c].dt)) y = c;
        }
        if (y < 0 || !fp) continue;
        v = gen::where(b, gen::elementwise(b, fx::op_kind::gt, x, y), x, y);
      }
    } else if (choice < 5) {
      if (!fp && xn.dt != fx::dtype::i32 && xn.dt != fx::dtype::i64) continue;
      // mixed graphs reach huge magnitudes (exp of integers), where sin of
      // a value one ulp off is another value: no sin there
      v = gen::elementwise(b, unary[r.below(opt.mixed ? 6 : 7)], x);
    } else if (choice < 10) {
      int y = -1;
      for (int tries = 0; tries < 6 && y < 0; ++tries) {
        const int c = pick();
        if (c != x && gen::broadcastable(b, x, c)) y = c;
      }
      if (y < 0) y = gen::constant(b, 0.5 + r.below(4));
      v = gen::elementwise(b, binary[r.below(4)], x, y);
    } else if (choice < 14) {
      if (!opt.remaps) continue;
      const int kind = r.below(6);
      const int axis = r.below(xn.rank);
      if (kind == 0 && xn.rank >= 2) v = gen::transpose(b, x);
      else if (kind == 1) v = gen::slice1(b, x, axis);
      else if (kind == 2) v = gen::pad1(b, x, axis, fp ? 0.25 : 1.0);
      else if (kind == 3) v = gen::cat(b, x, x, axis);
      else if (kind == 4 && xn.rank == 1) v = gen::unsqueeze_last(b, x);
      else if (kind == 5 && xn.rank < 3) v = gen::unsqueeze0(b, x);
      else continue;
    } else if (choice < 18) {
      if (!opt.reductions) continue;
      const int axis = r.below(xn.rank);
      const bool keep = r.below(2) == 0;
      const int k = r.below(4);
      if (k == 0) v = gen::reduction(b, fx::op_kind::sum, x, axis, keep);
      else if (k == 1) v = gen::reduction(b, fx::op_kind::amax, x, axis, keep);
      else if (fp) v = gen::reduction(b, fx::op_kind::var_mean, x, axis, keep, k == 3 ? 2 : 0);
      else continue;
    } else {
      if (!opt.matmul || xn.rank != 2 || !fp) continue;
      // x @ x^T, or x^T @ x: inner extents agree by construction
      const int t = gen::transpose(b, x);
      v = r.below(2) ? gen::matmul(b, x, t) : gen::matmul(b, t, x);
    }
    if (v >= 0) ++made;
  }
  // outputs: every sink (so nothing is dead), and one random inner node
  const int n = static_cast<int>(b.nodes.size());
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < b.nodes[v].nargs; ++k) used[b.args[b.nodes[v].arg0 + k]] = 1;
  for (int v = ninputs; v < n; ++v)
    if (!used[v] && b.nodes[v].op != fx::op_kind::constant) b.outputs.push_back(v);
  const int inner = ninputs + r.below(n - ninputs);
  if (b.nodes[inner].op != fx::op_kind::constant && used[inner] && r.below(2)) b.outputs.push_back(inner);
  if (b.outputs.empty()) b.outputs.push_back(n - 1);
  b.prune();
}

}  // namespace fxt

namespace fxt {

// A random program as a compile-time value: planned and run like a traced
// one. Inputs are f32 (rows, cols); results are the graph's outputs.
template <std::uint64_t Seed, int MaxOps = 9, bool Mixed = false>
struct random_program {
  static constexpr gen_options options() {
    gen_options o;
    o.min_ops = Mixed ? MaxOps / 2 : 2;
    o.max_ops = MaxOps;
    o.mixed = Mixed;
    return o;
  }
  static constexpr fx::graph_sizes sizes = [] {
    fx::detail::builder b;
    generate(b, Seed, options());
    return b.sizes();
  }();
  static constexpr fx::graph<sizes> graph = [] {
    fx::detail::builder b;
    generate(b, Seed, options());
    return b.template freeze<sizes>();
  }();
  template <std::size_t... I>
  static fx::detail::type_list<decltype((void)I, fx::tensor<float, 2>{})...> make_args(std::index_sequence<I...>);
  using arg_types = decltype(make_args(std::make_index_sequence<static_cast<std::size_t>(sizes.params)>{}));
  template <std::size_t... I>
  static std::tuple<fx::tensor<fx::storage_t<graph.nodes[graph.outputs[I]].dt>, graph.nodes[graph.outputs[I]].rank>...>
  make_results(std::index_sequence<I...>);
  using result_type = decltype(make_results(std::make_index_sequence<static_cast<std::size_t>(sizes.outputs)>{}));
};

}  // namespace fxt
