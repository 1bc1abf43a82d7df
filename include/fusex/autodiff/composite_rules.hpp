#pragma once
// Hand-derived backward for recorded composite ops (capture/graph.hpp).
//
// A region applies when differentiating it as one op is exact: its interior
// (the nodes between its inputs and outputs) is used only inside it or in
// another chosen region sharing that node, it does not otherwise overlap a
// region chosen (an outer region wins over the ones nested in it), and every input that needs a gradient is one its
// formula provides. Otherwise its prims are differentiated one by one, which
// gives the same values at a higher cost. The formulas live with the ops
// (ops/*.hpp, namespace fusex::ops::vjp).

#include <vector>

#include "../ops/gelu.hpp"
#include "../ops/layer_norm.hpp"
#include "../ops/rope.hpp"
#include "../ops/swiglu.hpp"
#include "context.hpp"

namespace fusex::detail {

// Inputs each formula differentiates (bit k: input k).
constexpr unsigned differentiable_inputs(composite k) {
  switch (k) {
    case composite::swiglu:
    case composite::rms_norm: return 0b11;
    case composite::layer_norm: return 0b111;
    default: return 0b1;  // gelu, gelu_tanh, silu, rope, qkv_rope: x only
  }
}

// Chooses the regions to apply. claimed[n]: a region that owns node n;
// trigger[r]: the node at which region r applies (its first output, reached
// last in reverse order, after every use of every output), or -1.
//
// Two regions may share nodes that nothing outside them uses: the two
// LayerNorms of a parallel-residual block read one var_mean of x, and one
// mean and rstd, once capture has merged them. Each formula then gives its
// own part of dx from the shared statistics; no cotangent reaches those.
template <graph_sizes S>
constexpr void select_regions(vjp_context<S>& cx, std::vector<int>& claimed, std::vector<int>& trigger) {
  const graph<S>& f = cx.f;
  const int N = S.nodes, NR = S.regions;
  std::vector<int> user_begin(N + 1, 0), users;
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < f.nodes[n].nargs; ++k) ++user_begin[f.operand(n, k) + 1];
  for (int n = 0; n < N; ++n) user_begin[n + 1] += user_begin[n];
  users.resize(user_begin[N] > 0 ? user_begin[N] : 1);
  std::vector<int> fill(user_begin.begin(), user_begin.end() - 1);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < f.nodes[n].nargs; ++k) users[fill[f.operand(n, k)]++] = n;

  // 1. Each region on its own: interior closed over its inputs, gradients it
  //    can give, saved values and no graph output inside. in(r, n): 1 inside,
  //    2 an output of r.
  std::vector<char> mark(static_cast<std::size_t>(NR > 0 ? NR : 1) * N, 0);
  std::vector<char> cand(NR > 0 ? NR : 1, 0), chosen(NR > 0 ? NR : 1, 0);
  auto in = [&](int r, int n) -> char& { return mark[static_cast<std::size_t>(r) * N + n]; };
  for (int r = 0; r < NR; ++r) {
    const region& R = f.regions[r];
    bool any = false;
    for (int o = 0; o < R.nout; ++o) any = any || cx.needs[R.out[o]];
    if (!any) continue;
    bool ok = true;
    int first_out = R.out[0];
    for (int o = 1; o < R.nout; ++o) first_out = R.out[o] < first_out ? R.out[o] : first_out;
    trigger[r] = first_out;
    for (int k = 0; k < R.nin; ++k)
      if (cx.needs[R.in[k]] && (!((differentiable_inputs(R.kind) >> k) & 1) || R.in[k] >= first_out)) ok = false;
    if (!ok) continue;
    std::vector<char> is_in(N, 0);
    for (int k = 0; k < R.nin; ++k) is_in[R.in[k]] = 1;
    std::vector<int> stack;
    for (int o = 0; o < R.nout; ++o) stack.push_back(R.out[o]);
    while (!stack.empty() && ok) {
      const int n = stack.back();
      stack.pop_back();
      if (in(r, n) || is_in[n]) continue;
      const node& nd = f.nodes[n];
      if (category(nd.op) == op_category::source) {
        ok = nd.op != op_kind::input;  // reached an argument that is not an input of the op
        continue;
      }
      in(r, n) = 1;
      for (int k = 0; k < nd.nargs; ++k) stack.push_back(f.operand(n, k));
    }
    for (int o = 0; o < R.nout; ++o) in(r, R.out[o]) = 2;
    for (int n = 0; n < N && ok; ++n) ok = in(r, n) != 1 || !f.is_output(n);
    for (int s = 0; s < R.nsave; ++s) ok = ok && in(r, R.save[s]) != 0;
    cand[r] = ok;
  }

  // nested(a, b): every output of a lies in b (a is differentiated inside b)
  auto nested = [&](int a, int b) {
    const region& A = f.regions[a];
    bool all = true;
    for (int o = 0; o < A.nout; ++o) all = all && in(b, A.out[o]);
    return all;
  };
  // A node r shares with another region of the pool (one not nested with r),
  // or one of r's interior, has every use inside r or in a pool region
  // holding it, and is no graph output: no cotangent reaches it from elsewhere.
  auto uses_covered = [&](int r, const std::vector<char>& pool) {
    std::vector<char> peer(NR > 0 ? NR : 1, 0);
    for (int q = 0; q < NR; ++q) peer[q] = q != r && pool[q] && !nested(q, r) && !nested(r, q);
    for (int n = 0; n < N; ++n) {
      if (!in(r, n)) continue;
      bool shared = false;
      for (int q = 0; q < NR && !shared; ++q) shared = peer[q] && in(q, n);
      if (in(r, n) == 2 && !shared) continue;
      if (shared && f.is_output(n)) return false;
      for (int i = user_begin[n]; i < user_begin[n + 1]; ++i) {
        const int u = users[i];
        bool covered = in(r, u) != 0;
        for (int q = 0; q < NR && !covered; ++q) covered = peer[q] && in(q, n) && in(q, u);
        if (!covered) return false;
      }
    }
    return true;
  };

  // 2. Outer regions first (recorded after the ones nested in them): a region
  //    whose outputs all lie in a chosen one is nested there and yields.
  for (int r = NR - 1; r >= 0; --r) {
    if (!cand[r]) continue;
    bool ok = true;
    for (int q = r + 1; q < NR && ok; ++q) {
      if (chosen[q]) ok = !nested(r, q);
    }
    chosen[r] = ok && uses_covered(r, cand);
  }
  // 3. Shared nodes must be covered by chosen regions, not just candidates.
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < NR; ++r)
      if (chosen[r] && !uses_covered(r, chosen)) chosen[r] = 0, changed = true;
  }
  for (int r = 0; r < NR; ++r) {
    if (!chosen[r]) {
      trigger[r] = -1;
      continue;
    }
    const region& R = f.regions[r];
    for (int n = 0; n < N; ++n)
      if (in(r, n)) claimed[n] = r;
    for (int s = 0; s < R.nsave; ++s) cx.keep[R.save[s]] = 1;
  }
}

template <graph_sizes S>
constexpr void composite_vjp(vjp_context<S>& cx, const region& R) {
  const graph<S>& f = cx.f;
  dyn c[region::max_out] = {};
  bool any = false;
  for (int o = 0; o < R.nout; ++o) {
    if (cx.cot[R.out[o]] >= 0) c[o] = cx.val(cx.cot[R.out[o]]);
    any = any || c[o].id >= 0;
  }
  if (!any) return;
  auto in = [&](int k) { return cx.fwd(R.in[k]); };
  auto first_cot = [&] {  // the cotangent of output 0, zero when only other outputs have one
    if (c[0].id >= 0) return c[0];
    const node& y = f.nodes[R.out[0]];
    return dynops::zeros(cx.b, y.dt, y.rank, y.shape);
  };
  switch (R.kind) {
    case composite::gelu: cx.acc(R.in[0], ops::vjp::gelu(in(0), c[0])); break;
    case composite::gelu_tanh: cx.acc(R.in[0], ops::vjp::gelu_tanh(in(0), c[0])); break;
    case composite::silu: cx.acc(R.in[0], ops::vjp::silu(in(0), c[0])); break;
    case composite::swiglu: {
      const auto g = ops::vjp::swiglu(in(0), in(1), c[0]);
      cx.acc(R.in[0], g.da);
      cx.acc(R.in[1], g.db);
      break;
    }
    case composite::layer_norm: {
      const auto g = ops::vjp::layer_norm(in(0), in(1), f.nodes[R.in[2]].dt, cx.fwd(R.save[0]), cx.fwd(R.save[1]),
                                          first_cot(), c[1], c[2]);
      cx.acc(R.in[0], g.dx);
      if (cx.needs[R.in[1]]) cx.acc(R.in[1], g.dweight);
      if (cx.needs[R.in[2]]) cx.acc(R.in[2], g.dbias);
      break;
    }
    case composite::rms_norm: {
      const auto g = ops::vjp::rms_norm(in(0), in(1), cx.fwd(R.save[0]), c[0]);
      cx.acc(R.in[0], g.dx);
      if (cx.needs[R.in[1]]) cx.acc(R.in[1], g.dweight);
      break;
    }
    case composite::rope: cx.acc(R.in[0], ops::vjp::rope(c[0], in(1), in(2), R.iparam[0])); break;
    case composite::qkv_rope: {
      const node& qkv = f.nodes[R.in[0]];
      cx.acc(R.in[0], ops::vjp::qkv_rope(qkv.dt, qkv.shape, in(1), in(2), R.iparam, (R.flag & 1) != 0,
                                            (R.flag & 2) ? ops::qkv_layout::grouped : ops::qkv_layout::blocks, c));
      break;
    }
  }
}

}  // namespace fusex::detail
