#pragma once
// The fusion rules: which sets of nodes may form one group. They are few and
// local, so the planner can check them incrementally and tests can check them
// on any plan.
//
//  - An opaque node (matmul, claimed op) forms a group alone.
//  - A pointwise group holds elementwise ops and index remaps only. Each of
//    its outputs is computed gather-style, so any such set can fuse.
//  - A row-reduction group holds reductions over the innermost axis of one
//    row domain D = (rows..., L). Nodes that depend on those reductions inside
//    the group must stay row-aligned: D-shaped or row-shaped (extent 1, or
//    dropped, on the last axis), elementwise or a broadcast/reshape that keeps
//    the row index. The group's outputs are D- or row-shaped.
//  - A column-reduction group holds reductions over one other axis of one
//    input domain; dependent nodes are elementwise on the reduced shape;
//    outputs are reduced-shaped or input-shaped.
//  - Across groups, the graph of groups must be acyclic (checked elsewhere).

#include <vector>

#include "analysis.hpp"

namespace fusex::detail::planning {

enum class shape_class : std::uint8_t { full, row, reduced, other };

// Class of node v relative to the domain of reduction r.
constexpr shape_class classify(const graph_ref& g, int v, int r) {
  const node& n = g.nodes[v];
  const node& d = g.nodes[g.operand(r, 0)];
  const int R = d.rank, a = g.nodes[r].axis;
  bool full = n.rank == R;
  for (int i = 0; full && i < R; ++i) full = g.same(n.shape[i], d.shape[i]);
  if (full) return shape_class::full;
  // The reduced shape: axis a dropped, or kept with extent 1.
  if (n.rank == R) {
    bool red = g.is_const(n.shape[a], 1);
    for (int i = 0; red && i < R; ++i) red = i == a || g.same(n.shape[i], d.shape[i]);
    if (red) return a == R - 1 ? shape_class::row : shape_class::reduced;
  } else if (n.rank == R - 1) {
    bool red = true;
    for (int i = 0, j = 0; red && i < R; ++i)
      if (i != a) red = g.same(n.shape[j++], d.shape[i]);
    if (red) return a == R - 1 ? shape_class::row : shape_class::reduced;
  }
  return shape_class::other;
}

// Operand u of v keeps the row index when v is evaluated on a row-domain index.
constexpr bool row_aligned_op(const graph_ref& g, int v, int r) {
  const node& n = g.nodes[v];
  const int R = g.nodes[g.operand(r, 0)].rank;
  switch (category(n.op)) {
    case op_category::elementwise: return true;  // operands broadcast only along static 1s
    case op_category::remap:
      if (n.op == op_kind::broadcast_in_dim) {
        const node& x = g.nodes[g.operand(v, 0)];
        if (n.rank != R) return false;
        for (int j = 0; j < x.rank && j < R - 1; ++j)
          if (n.map[j] != j) return false;
        return x.rank >= R - 1;
      }
      return n.op == op_kind::reshape;  // only between row shapes, checked by the caller
    default: return false;
  }
}

// Is `members` (sorted, topological) a valid group? `group_of` gives every
// node's group (-1 while unassigned); `self` is this group's id. Values with
// a consumer in another group, or returned, are the group's outputs.
// `dep` is scratch of one flag per node, all zero on entry and on return.
constexpr bool group_is_valid(const analysis& a, const std::vector<int>& members, const std::vector<int>& group_of,
                              int self, std::vector<char>& dep) {
  const graph_ref& g = a.g;
  int red = -1, opaque = 0;
  for (int v : members) {
    if (a.kind[v] == nkind::opaque) ++opaque;
    if (a.kind[v] == nkind::row_reduce || a.kind[v] == nkind::col_reduce) {
      if (red < 0) red = v;
      else if (a.kind[v] != a.kind[red] || a.domain[v] != a.domain[red]) return false;
    }
  }
  if (opaque) return members.size() == 1;
  if (red < 0) return true;  // pointwise: any set of elementwise ops and remaps
  const bool row = a.kind[red] == nkind::row_reduce;
  auto is_output = [&](int v) {
    if (a.is_out[v]) return true;
    for (int k = 0; k < a.num_consumers(v); ++k) {
      const int c = a.consumer(v, k);
      if (group_of[c] >= 0 && group_of[c] != self) return true;
    }
    return false;
  };
  // dep[v]: v depends on a reduction of this group through the group.
  struct reset_on_exit {
    std::vector<char>& d;
    const std::vector<int>& m;
    constexpr ~reset_on_exit() {
      for (int v : m) d[v] = 0;
    }
  } reset{dep, members};
  for (int v : members) {
    const bool is_red = a.kind[v] == nkind::row_reduce || a.kind[v] == nkind::col_reduce;
    bool d = false;
    for (int k = 0; k < g.nodes[v].nargs; ++k) {
      const int u = g.operand(v, k);
      if (group_of[u] == self && dep[u]) d = true;
    }
    const shape_class c = classify(g, v, red);
    if (is_red) {
      // A reduction of an earlier reduction's result must see it row-aligned.
      if (d && !row) return false;
      dep[v] = 1;
    } else if (d) {
      if (row) {
        if (c != shape_class::full && c != shape_class::row) return false;
        if (!row_aligned_op(g, v, red)) return false;
        if (g.nodes[v].op == op_kind::reshape && (c != shape_class::row || classify(g, g.operand(v, 0), red) != shape_class::row))
          return false;
      } else {
        if (c != shape_class::reduced || category(g.nodes[v].op) != op_category::elementwise) return false;
      }
      dep[v] = 1;
    }
    if (is_output(v)) {
      if (row && c != shape_class::full && c != shape_class::row) return false;
      if (!row && !(dep[v] ? c == shape_class::reduced : c == shape_class::full)) return false;
    }
  }
  return true;
}

constexpr bool group_is_valid(const analysis& a, const std::vector<int>& members, const std::vector<int>& group_of,
                              int self) {
  std::vector<char> dep(static_cast<std::size_t>(a.g.n), 0);
  return group_is_valid(a, members, group_of, self, dep);
}

}  // namespace fusex::detail::planning
