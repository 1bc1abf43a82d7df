#pragma once
// The reverse-mode transform: walks the forward graph from its outputs back
// to its arguments, applying composite formulas where they hold and prim
// rules elsewhere, and freezes the backward graph.
//
// Cost: one pass over the nodes in reverse, each rule adding a constant
// number of nodes; recomputation adds at most one copy of each forward node.

#include <vector>

#include "composite_rules.hpp"
#include "context.hpp"
#include "prim_rules.hpp"

namespace fusex::detail {

template <graph_sizes S>
constexpr void run_vjp(vjp_context<S>& cx) {
  const graph<S>& f = cx.f;
  std::vector<int> claimed(S.nodes, -1), trigger(S.regions > 0 ? S.regions : 1, -1);
  if (cx.opt.hand_derived) select_regions(cx, claimed, trigger);
  for (int t : trigger) cx.composites += t >= 0;
  for (int o = 0; o < S.outputs; ++o) cx.acc(f.outputs[o], cx.val(cx.cot_arg[o]));
  for (int n = S.nodes - 1; n >= 0; --n) {
    if (claimed[n] >= 0) {  // regions sharing statistics may trigger at one node
      for (int r = S.regions - 1; r >= 0; --r)
        if (trigger[r] == n) composite_vjp(cx, f.regions[r]);
      continue;
    }
    if (cx.cot[n] >= 0) prim_vjp(cx, n);
  }
  // one gradient per differentiated argument; zero where none flows
  for (int p = 0; p < S.params; ++p) {
    const arg_info& a = f.params[p];
    if (a.kind != arg_kind::tensor || !is_floating(a.dt) || !((cx.opt.wrt >> p) & 1)) continue;
    const node& x = f.nodes[a.node];
    const std::int32_t g = cx.cot[a.node];
    cx.b.outputs.push_back(g >= 0 ? g : dynops::zeros(cx.b, x.dt, x.rank, x.shape).id);
  }
  // final argument order: forward arguments, forward outputs, saved values, cotangents
  const int P = S.params, O = S.outputs, NS = static_cast<int>(cx.saved.size());
  std::vector<arg_info> ordered(cx.b.params.begin(), cx.b.params.begin() + P + O);
  for (int k = 0; k < NS; ++k) ordered.push_back(cx.b.params[P + 2 * O + k]);
  for (int o = 0; o < O; ++o) ordered.push_back(cx.b.params[P + O + o]);
  for (int p = 0; p < P + O + NS + O; ++p)
    if (ordered[p].node >= 0 && p >= P) cx.b.nodes[ordered[p].node].slot = p;
  cx.b.params = ordered;
  cx.b.prune();
}

struct vjp_shape {
  graph_sizes sizes;
  int nsaved = 0;
  int composites = 0;  // composite ops differentiated by their hand-derived formula
};

template <graph_sizes S>
constexpr vjp_shape vjp_measure(const graph<S>& g, vjp_options o) {
  vjp_context<S> cx(g, o);
  run_vjp(cx);
  return {cx.b.sizes(), static_cast<int>(cx.saved.size()), cx.composites};
}

template <graph_sizes B, int NS>
struct vjp_built {
  graph<B> backward;
  std::int32_t saved[NS > 0 ? NS : 1] = {};  // forward nodes returned for the backward
};

template <graph_sizes B, int NS, graph_sizes S>
constexpr vjp_built<B, NS> vjp_build(const graph<S>& g, vjp_options o) {
  vjp_context<S> cx(g, o);
  run_vjp(cx);
  vjp_built<B, NS> r{};
  r.backward = cx.b.template freeze<B>();
  for (int k = 0; k < NS; ++k) r.saved[k] = cx.saved[k];
  return r;
}

// The forward graph returning its outputs, then the saved values.
template <graph_sizes F, graph_sizes S, int NS>
constexpr graph<F> with_saved_outputs(const graph<S>& g, const std::int32_t (&saved)[NS > 0 ? NS : 1]) {
  graph<F> r{};
  for (int i = 0; i < S.nodes; ++i) r.nodes[i] = g.nodes[i];
  for (int i = 0; i < S.args; ++i) r.args[i] = g.args[i];
  for (int i = 0; i < S.exprs; ++i) {
    r.exprs[i] = g.exprs[i];
    r.eclass[i] = g.eclass[i];
  }
  for (int i = 0; i < S.outputs; ++i) r.outputs[i] = g.outputs[i];
  for (int k = 0; k < NS; ++k) r.outputs[S.outputs + k] = saved[k];
  for (int i = 0; i < S.params; ++i) r.params[i] = g.params[i];
  for (int i = 0; i < S.regions; ++i) r.regions[i] = g.regions[i];
  return r;
}

}  // namespace fusex::detail
