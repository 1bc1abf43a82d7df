#pragma once
// The recorder behind fusex::trace. It lives only inside a constant
// evaluation (std::vector storage is transient there), deduplicates identical
// nodes and index expressions, and tracks which extents ops require equal.

#include <stdexcept>
#include <vector>

#include "graph.hpp"

namespace fusex::detail {

// Problems found while tracing that depend on values rather than types. They
// are not constexpr, so reaching one stops compilation; the function's name is
// the message the compiler shows.
inline void fusex_error_constant_extents_differ() { throw std::logic_error("fusex: constant extents differ"); }
inline void fusex_error_index_division_by_zero() { throw std::logic_error("fusex: index division by zero"); }
inline void fusex_error_reshape_element_count_differs() { throw std::logic_error("fusex: reshape element count differs"); }
inline void fusex_error_axis_out_of_range() { throw std::logic_error("fusex: axis out of range"); }
// Internal invariants: no program written with the public API reaches them
// (a traced function captures nothing, so it holds no other trace's index).
inline void fusex_internal_index_from_another_trace() { throw std::logic_error("fusex internal: index from another trace"); }

struct builder {
  std::vector<node> nodes;
  std::vector<std::int32_t> args;
  std::vector<expr> exprs;
  std::vector<std::int32_t> parent;  // union-find over exprs
  std::vector<std::int32_t> outputs;
  std::vector<arg_info> params;
  std::vector<region> regions;
  std::int8_t copy_tag = 0;  // see recompute_scope

  constexpr bool is_const(std::int32_t e) const { return exprs[e].kind == expr_kind::constant; }
  constexpr bool is_const(std::int32_t e, std::int64_t v) const {
    return is_const(e) && exprs[e].value == v;
  }

  constexpr std::int32_t push_expr(const expr& e) {
    for (std::size_t i = 0; i < exprs.size(); ++i)
      if (exprs[i] == e) return static_cast<std::int32_t>(i);
    exprs.push_back(e);
    parent.push_back(static_cast<std::int32_t>(parent.size()));
    return static_cast<std::int32_t>(exprs.size() - 1);
  }

  constexpr std::int32_t constant(std::int64_t v) { return push_expr({expr_kind::constant, -1, -1, v}); }

  // Interns a binary expression, folding constants and identities so that
  // equal extents usually end up as the same id.
  constexpr std::int32_t binary(expr_kind k, std::int32_t a, std::int32_t b) {
    if (is_const(a) && is_const(b)) {
      const std::int64_t x = exprs[a].value, y = exprs[b].value;
      switch (k) {
        case expr_kind::add: return constant(x + y);
        case expr_kind::sub: return constant(x - y);
        case expr_kind::mul: return constant(x * y);
        case expr_kind::div:
          if (y == 0) fusex_error_index_division_by_zero();
          return constant(x / y);
        case expr_kind::mod:
          if (y == 0) fusex_error_index_division_by_zero();
          return constant(x % y);
        default: break;
      }
    }
    switch (k) {
      case expr_kind::add:
        if (is_const(a, 0)) return b;
        if (is_const(b, 0)) return a;
        // a + (x - a) == x: the halves of a split add back up to the whole.
        if (exprs[b].kind == expr_kind::sub && exprs[b].b == a) return exprs[b].a;
        if (exprs[a].kind == expr_kind::sub && exprs[a].b == b) return exprs[a].a;
        if (a > b) { auto t = a; a = b; b = t; }
        break;
      case expr_kind::sub:
        if (is_const(b, 0)) return a;
        if (a == b) return constant(0);
        // (x + y) - x == y: the extent of a slice [x, x + y) is y.
        if (exprs[a].kind == expr_kind::add && exprs[a].a == b) return exprs[a].b;
        if (exprs[a].kind == expr_kind::add && exprs[a].b == b) return exprs[a].a;
        // (x + y) - (x + z) == y - z: adjacent slices of one split
        if (exprs[a].kind == expr_kind::add && exprs[b].kind == expr_kind::add) {
          const std::int32_t p = exprs[a].a, q = exprs[a].b, u = exprs[b].a, w = exprs[b].b;
          if (p == u) return binary(expr_kind::sub, q, w);
          if (p == w) return binary(expr_kind::sub, q, u);
          if (q == u) return binary(expr_kind::sub, p, w);
          if (q == w) return binary(expr_kind::sub, p, u);
        }
        break;
      case expr_kind::mul:
        if (is_const(a, 1)) return b;
        if (is_const(b, 1)) return a;
        if (is_const(a, 0) || is_const(b, 0)) return constant(0);
        if (a > b) { auto t = a; a = b; b = t; }
        break;
      case expr_kind::div:
        if (is_const(b, 0)) fusex_error_index_division_by_zero();
        if (is_const(b, 1)) return a;
        // (x * c) / c == x, the common case of splitting and rejoining heads.
        if (exprs[a].kind == expr_kind::mul && (exprs[a].a == b || exprs[a].b == b))
          return exprs[a].a == b ? exprs[a].b : exprs[a].a;
        break;
      case expr_kind::mod:
        if (is_const(b, 0)) fusex_error_index_division_by_zero();
        if (is_const(b, 1)) return constant(0);
        break;
      default: break;
    }
    return push_expr({k, a, b, 0});
  }

  constexpr std::int32_t find(std::int32_t e) const {
    while (parent[e] != e) e = parent[e];
    return e;
  }
  // Records that two extents must be equal at run time. Constants keep the
  // class representative so static reasoning sees the known value.
  constexpr void unify(std::int32_t a, std::int32_t b) {
    std::int32_t ra = find(a), rb = find(b);
    if (ra == rb) return;
    if (is_const(ra) && is_const(rb)) fusex_error_constant_extents_differ();
    if (is_const(rb) || (!is_const(ra) && rb < ra)) { auto t = ra; ra = rb; rb = t; }
    parent[rb] = ra;
  }

  // Appends a node, or returns an identical existing one (common
  // subexpressions become one node). Sources are never merged.
  constexpr std::int32_t add(node n, const std::int32_t* operands, int count) {
    n.nargs = count;
    const bool mergeable = n.op != op_kind::input && n.op != op_kind::scalar_param;
    if (mergeable) n.copy = copy_tag;
    if (mergeable) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        const node& m = nodes[i];
        if (m.op != n.op || m.nargs != count) continue;
        node probe = n;
        probe.arg0 = m.arg0;
        if (!(probe == m)) continue;
        bool same = true;
        for (int k = 0; k < count; ++k) same = same && args[m.arg0 + k] == operands[k];
        if (same) return static_cast<std::int32_t>(i);
      }
    }
    n.arg0 = static_cast<std::int32_t>(args.size());
    for (int k = 0; k < count; ++k) args.push_back(operands[k]);
    nodes.push_back(n);
    return static_cast<std::int32_t>(nodes.size() - 1);
  }

  // An output that is an argument itself gets a copy node (a same-dtype
  // convert): every output is then written by a group, and no executor reads
  // an argument from the output it is writing.
  constexpr void copy_argument_outputs() {
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      const node& src = nodes[static_cast<std::size_t>(outputs[o])];
      if (src.op != op_kind::input && src.op != op_kind::scalar_param) continue;
      node c;
      c.op = op_kind::convert;
      c.dt = src.dt;
      c.rank = src.rank;
      for (int i = 0; i < src.rank; ++i) c.shape[i] = src.shape[i];
      const std::int32_t id = outputs[o];
      outputs[o] = add(c, &id, 1);
    }
  }

  // Drops nodes that no output depends on (arguments always stay), so dead
  // code in a traced function costs nothing downstream.
  constexpr void prune() {
    copy_argument_outputs();
    const std::size_t n = nodes.size();
    std::vector<char> live(n, 0);
    for (auto o : outputs) live[o] = 1;
    for (const auto& p : params)
      if (p.node >= 0) live[p.node] = 1;
    for (std::size_t i = n; i-- > 0;)
      if (live[i])
        for (int k = 0; k < nodes[i].nargs; ++k) live[args[nodes[i].arg0 + k]] = 1;
    std::vector<std::int32_t> renum(n, -1);
    std::vector<node> kept_nodes;
    std::vector<std::int32_t> kept_args;
    for (std::size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      node nd = nodes[i];
      nd.arg0 = static_cast<std::int32_t>(kept_args.size());
      for (int k = 0; k < nd.nargs; ++k) kept_args.push_back(renum[args[nodes[i].arg0 + k]]);
      renum[i] = static_cast<std::int32_t>(kept_nodes.size());
      kept_nodes.push_back(nd);
    }
    nodes = kept_nodes;
    args = kept_args;
    for (auto& o : outputs) o = renum[o];
    for (auto& p : params)
      if (p.node >= 0) p.node = renum[p.node];
    // A region survives only whole.
    std::vector<region> kept_regions;
    for (region r : regions) {
      bool whole = true;
      auto move = [&](std::int32_t* ids, int count) {
        for (int k = 0; k < count; ++k) {
          if (ids[k] >= 0) ids[k] = renum[ids[k]];
          whole = whole && ids[k] >= 0;
        }
      };
      move(r.in, r.nin);
      move(r.out, r.nout);
      move(r.save, r.nsave);
      if (whole) kept_regions.push_back(r);
    }
    regions = kept_regions;
  }

  constexpr graph_sizes sizes() const {
    return {static_cast<int>(nodes.size()), static_cast<int>(args.size()), static_cast<int>(exprs.size()),
            static_cast<int>(outputs.size()), static_cast<int>(params.size()), static_cast<int>(regions.size())};
  }

  template <graph_sizes S>
  constexpr graph<S> freeze() const {
    graph<S> g{};
    for (int i = 0; i < S.nodes; ++i) g.nodes[i] = nodes[i];
    for (int i = 0; i < S.args; ++i) g.args[i] = args[i];
    for (int i = 0; i < S.exprs; ++i) {
      g.exprs[i] = exprs[i];
      g.eclass[i] = find(i);
    }
    for (int i = 0; i < S.outputs; ++i) g.outputs[i] = outputs[i];
    for (int i = 0; i < S.params; ++i) g.params[i] = params[i];
    for (int i = 0; i < S.regions; ++i) g.regions[i] = regions[i];
    return g;
  }
};

// Nodes made while a recompute_scope is open are not merged with identical
// nodes made outside it: a second copy of a cheap value, so that the planner
// can compute it again in another group (a column reduction's producers)
// instead of writing the first copy to memory for that group to read.
struct recompute_scope {
  builder& b;
  std::int8_t prev;
  constexpr explicit recompute_scope(builder& bb) : b(bb), prev(bb.copy_tag) {
    b.copy_tag = static_cast<std::int8_t>(prev + 1);
  }
  constexpr ~recompute_scope() { b.copy_tag = prev; }
  recompute_scope(const recompute_scope&) = delete;
  recompute_scope& operator=(const recompute_scope&) = delete;
};

}  // namespace fusex::detail
