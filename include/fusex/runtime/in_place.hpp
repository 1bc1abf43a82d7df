#pragma once
// When an output may be written over an input (in place). The rule, stated
// on the program so that every executor gives the same answer:
//   - the output and the argument have the same dtype and rank, and the
//     views are the same memory with the same extents and strides;
//   - every value computed from the argument is elementwise (no remap, no
//     reduction, no matmul reads it at another index), and each of them
//     flows into that output, so nothing reads the argument after the
//     output's elements are written.
// Executors that plan add one condition of the plan (exec/runner.hpp): the
// values computed from the argument are in pointwise groups. Anything else
// that overlaps an argument is the argument_error of bind.hpp.

#include <array>

#include "../capture/graph.hpp"

namespace fusex::detail {

// dep[u]: node u is computed from the argument at arg_node (or is it).
template <graph_sizes S>
constexpr void in_place_dependents(const graph<S>& g, int arg_node, bool* dep) {
  for (int u = 0; u < S.nodes; ++u) {
    dep[u] = u == arg_node;
    if (u > arg_node)
      for (int k = 0; k < g.nodes[u].nargs && !dep[u]; ++k) dep[u] = dep[g.operand(u, k)];
  }
}

template <graph_sizes S>
constexpr bool in_place_allowed(const graph<S>& g, int o, int p) {
  if (g.params[p].kind != arg_kind::tensor) return false;
  const int a = g.params[p].node, v = g.outputs[o];
  if (a < 0 || v == a || g.nodes[v].dt != g.nodes[a].dt || g.nodes[v].rank != g.nodes[a].rank) return false;
  std::array<bool, S.nodes> dep{}, feeds{};
  in_place_dependents(g, a, dep.data());
  if (!dep[v]) return false;
  feeds[v] = true;  // feeds[u]: v is computed from u
  for (int u = v; u >= 0; --u)
    if (feeds[u])
      for (int k = 0; k < g.nodes[u].nargs; ++k) feeds[g.operand(u, k)] = true;
  for (int u = a + 1; u < S.nodes; ++u)
    if (dep[u] && (category(g.nodes[u].op) != op_category::elementwise || !feeds[u])) return false;
  return true;
}

// t[o * params + p]: output o may be written over argument p.
template <graph_sizes S>
constexpr std::array<bool, S.outputs * S.params + 1> in_place_table(const graph<S>& g) {
  std::array<bool, S.outputs * S.params + 1> t{};
  for (int o = 0; o < S.outputs; ++o)
    for (int p = 0; p < S.params; ++p) t[o * S.params + p] = in_place_allowed(g, o, p);
  return t;
}

}  // namespace fusex::detail
