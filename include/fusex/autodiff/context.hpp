#pragma once
// The state of one reverse-mode transform: the backward graph being built,
// the cotangent of each forward node, and how the backward reads a forward
// value.
//
// The backward program's arguments are, in order: the forward program's
// arguments, what the forward returned (its outputs, then the values saved
// for the backward), and one cotangent per forward output. A forward value
// the backward needs is
//   - an argument or an output: read from the backward's own argument;
//   - the result of a reduction or a matmul, or a value a composite op asks
//     to keep (LayerNorm's mean and rstd): saved, that is returned by the
//     forward as an extra output and passed back;
//   - anything else (elementwise ops, remaps, constants): recomputed in the
//     backward from the above, where it fuses into the kernel that needs it.

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "../capture/dynamic.hpp"
#include "../capture/graph.hpp"

namespace fusex {

// What to differentiate. `wrt` has one bit per argument position; only
// floating-point tensor arguments get gradients.
struct vjp_options {
  bool hand_derived = true;  // apply composite ops' hand-derived backward
  std::uint64_t wrt = ~std::uint64_t{0};

  friend constexpr bool operator==(const vjp_options&, const vjp_options&) = default;
};

// The argument positions to differentiate, as a vjp_options::wrt mask.
constexpr std::uint64_t wrt(std::initializer_list<int> positions) {
  std::uint64_t m = 0;
  for (int p : positions) m |= std::uint64_t{1} << p;
  return m;
}

namespace detail {

// An internal invariant: capture unifies a broadcast's input extent with the
// output's unless the input's is a constant 1, so no traced program reaches it.
inline void fusex_internal_vjp_broadcast_extent_not_unified() {
  throw std::logic_error("fusex internal: vjp of a broadcast_in_dim whose extent may or may not broadcast");
}
// Behind fusex::vjp's static_assert of the same limit (a graph built without
// it would reach this).
inline void fusex_internal_vjp_program_has_more_than_64_arguments() {
  throw std::logic_error("fusex::vjp: program has more than 64 arguments");
}
inline void fusex_error_vjp_wrt_names_an_argument_the_program_does_not_have() {
  throw std::logic_error("fusex::vjp: wrt names an argument the program does not have");
}
inline void fusex_error_vjp_wrt_names_an_argument_that_is_not_floating_point() {
  throw std::logic_error("fusex::vjp: wrt names an argument that is not a floating-point tensor");
}

template <graph_sizes S>
struct vjp_context {
  const graph<S>& f;
  vjp_options opt;
  builder b;
  int composites = 0;  // regions differentiated by their hand-derived formula
  std::vector<std::int32_t> fwd_map;  // forward node -> its value in the backward, or -1
  std::vector<std::int32_t> cot;      // forward node -> accumulated cotangent, or -1
  std::vector<char> needs;            // forward node carries a gradient to a wrt argument
  std::vector<char> keep;             // forward node must be saved, not recomputed
  std::vector<std::int32_t> saved;    // saved forward nodes, in argument order
  std::vector<std::int32_t> out_arg, cot_arg;  // per forward output: backward input nodes

  constexpr explicit vjp_context(const graph<S>& g, vjp_options o)
      : f(g), opt(o), fwd_map(S.nodes, -1), cot(S.nodes, -1), needs(S.nodes, 0), keep(S.nodes, 0) {
    if (S.params > 64) fusex_internal_vjp_program_has_more_than_64_arguments();
    // An explicit wrt must name differentiable arguments; the default (all)
    // skips the others.
    if (o.wrt != vjp_options{}.wrt)
      for (int p = 0; p < 64; ++p) {
        if (!((o.wrt >> p) & 1)) continue;
        if (p >= S.params) fusex_error_vjp_wrt_names_an_argument_the_program_does_not_have();
        if (g.params[p].kind != arg_kind::tensor || !is_floating(g.params[p].dt))
          fusex_error_vjp_wrt_names_an_argument_that_is_not_floating_point();
      }
    for (int e = 0; e < S.exprs; ++e) {
      b.exprs.push_back(g.exprs[e]);
      b.parent.push_back(g.eclass[e]);
    }
    for (int p = 0; p < S.params; ++p) {
      arg_info a = g.params[p];
      if (a.node >= 0) {
        a.node = b.add(g.nodes[a.node], nullptr, 0);
        fwd_map[g.params[p].node] = a.node;
      }
      b.params.push_back(a);
    }
    for (int o = 0; o < S.outputs; ++o) out_arg.push_back(new_input(g.outputs[o]));
    for (int o = 0; o < S.outputs; ++o) cot_arg.push_back(new_input(g.outputs[o]));
    for (int n = 0; n < S.nodes; ++n) {
      const node& nd = g.nodes[n];
      if (!is_floating(nd.dt)) continue;
      if (nd.op == op_kind::input) needs[n] = ((opt.wrt >> nd.slot) & 1) != 0;
      else if (category(nd.op) != op_category::source)
        for (int k = 0; k < nd.nargs; ++k) needs[n] = needs[n] || needs[g.operand(n, k)];
    }
  }

  // A new backward argument shaped like forward node n (slots are renumbered
  // into their final order once the transform knows how many values it saves).
  constexpr std::int32_t new_input(int n) {
    node nd;
    nd.op = op_kind::input;
    nd.dt = f.nodes[n].dt;
    nd.rank = f.nodes[n].rank;
    for (int i = 0; i < nd.rank; ++i) nd.shape[i] = f.nodes[n].shape[i];
    nd.slot = static_cast<std::int32_t>(b.params.size());
    const std::int32_t id = b.add(nd, nullptr, 0);
    b.params.push_back({arg_kind::tensor, nd.dt, nd.rank, id});
    return id;
  }

  constexpr dyn val(std::int32_t id) { return {&b, id}; }

  // Forward node n as read by the backward, if it is not recomputed.
  constexpr std::int32_t leaf_value(int n) {
    const node& nd = f.nodes[n];
    for (int o = 0; o < S.outputs; ++o)
      if (f.outputs[o] == n) return out_arg[o];
    if (keep[n] || category(nd.op) == op_category::reduction || nd.op == op_kind::matmul) {
      saved.push_back(n);
      return new_input(n);
    }
    return -1;
  }

  // Forward node n in the backward graph (iterative: graphs can be deep).
  constexpr dyn fwd(int n0) {
    if (fwd_map[n0] >= 0) return val(fwd_map[n0]);
    std::vector<int> stack{n0};
    while (!stack.empty()) {
      const int n = stack.back();
      if (fwd_map[n] >= 0) {
        stack.pop_back();
        continue;
      }
      const std::int32_t leaf = leaf_value(n);
      if (leaf >= 0) {
        fwd_map[n] = leaf;
        stack.pop_back();
        continue;
      }
      const node& nd = f.nodes[n];
      bool ready = true;
      std::int32_t ids[16] = {};
      std::vector<std::int32_t> many;  // cat may have more operands
      for (int k = 0; k < nd.nargs; ++k) {
        const int u = f.operand(n, k);
        if (fwd_map[u] < 0) {
          stack.push_back(u);
          ready = false;
        } else {
          many.push_back(fwd_map[u]);
        }
      }
      if (!ready) continue;
      for (int k = 0; k < nd.nargs && k < 16; ++k) ids[k] = many[k];
      fwd_map[n] = b.add(nd, nd.nargs <= 16 ? ids : many.data(), nd.nargs);
      stack.pop_back();
    }
    return val(fwd_map[n0]);
  }

  // Adds contribution c to the cotangent of forward node n.
  constexpr void acc(int n, dyn c) {
    if (!needs[n] || c.id < 0) return;
    c = dynops::convert(c, f.nodes[n].dt);
    cot[n] = cot[n] < 0 ? c.id : (val(cot[n]) + c).id;
  }

  // Sums c over the axes flagged in red (one reduction per run of adjacent
  // axes) and reshapes the result to `shape` (rank r).
  constexpr dyn sum_axes(dyn c, const bool* red, const std::int32_t* shape, int r) {
    const int rc = c.rank();
    std::int32_t merged[max_rank] = {};
    bool mred[max_rank] = {};
    int m = 0;
    bool any = false, reshaped = false;
    for (int i = 0; i < rc; ++i) {
      if (red[i]) any = true;
      if (red[i] && i > 0 && red[i - 1]) {
        merged[m - 1] = b.binary(expr_kind::mul, merged[m - 1], c.extent(i));
        reshaped = true;
      } else {
        merged[m] = c.extent(i);
        mred[m++] = red[i];
      }
    }
    if (any) {
      if (reshaped) c = dynops::reshape(c, merged, m);
      for (int i = m - 1; i >= 0; --i)
        if (mred[i]) c = dynops::sum(c, i, false);
    }
    return reshape_to(c, shape, r);
  }

  // c reshaped to `shape`, or c itself when its extents are statically the same.
  constexpr dyn reshape_to(dyn c, const std::int32_t* shape, int r) {
    bool same = c.rank() == r;
    for (int i = 0; same && i < r; ++i) same = b.find(c.extent(i)) == b.find(shape[i]);
    return same ? c : dynops::reshape(c, shape, r);
  }

  // The part of cotangent c (shaped like forward node n) that flows to its
  // operand u through elementwise broadcasting.
  constexpr dyn unbroadcast(dyn c, int u, int n) {
    const node& un = f.nodes[u];
    const node& nn = f.nodes[n];
    bool red[max_rank] = {};
    for (int i = 0; i < nn.rank; ++i)
      red[i] = un.rank == 0 || (f.is_const(un.shape[i], 1) && !f.is_const(nn.shape[i], 1));
    return sum_axes(c, red, un.shape, un.rank);
  }
};

}  // namespace detail
}  // namespace fusex
