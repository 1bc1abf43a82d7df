#pragma once
// The fusion rules: which sets of nodes may form one group. They are few and
// local, so the planner can check them incrementally and tests can check them
// on any plan.
//
//  - An opaque node (matmul, or an op claimed by a user executor, unless it
//    is elementwise or a remap and the executor has can_fuse) forms a group
//    alone.
//  - A group holding an elementwise op or remap claimed by an executor with
//    can_fuse is that executor's region: it holds no other executor's claims
//    and only ops that executor can fuse.
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

// How a node's shape relates to the domain of reduction r. A shape can be
// both (when the reduced axis already has extent 1).
struct shape_class {
  bool full = false;     // the reduction's input shape
  bool reduced = false;  // that shape with the axis dropped or of extent 1
};

constexpr shape_class classify(const graph_ref& g, int v, int r) {
  const node& n = g.nodes[v];
  const node& d = g.nodes[g.operand(r, 0)];
  const int R = d.rank, a = g.nodes[r].axis;
  shape_class c;
  c.full = n.rank == R;
  for (int i = 0; c.full && i < R; ++i) c.full = g.same(n.shape[i], d.shape[i]);
  if (n.rank == R) {
    c.reduced = g.is_const(n.shape[a], 1);
    for (int i = 0; c.reduced && i < R; ++i) c.reduced = i == a || g.same(n.shape[i], d.shape[i]);
  } else if (n.rank == R - 1) {
    c.reduced = true;
    for (int i = 0, j = 0; c.reduced && i < R; ++i)
      if (i != a) c.reduced = g.same(n.shape[j++], d.shape[i]);
  }
  return c;
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
  if (a.has_regions()) {  // a claimed region holds one claimant's ops, all of which it can fuse
    int claim = -1;
    for (int v : members) {
      const int c = a.region_claim[v];
      if (c < 0) continue;
      if (claim >= 0 && c != claim) return false;
      claim = c;
    }
    if (claim >= 0)
      for (int v : members)
        if (!((a.fusable[v] >> claim) & 1u)) return false;
  }
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
    const bool row_domain = c.full || c.reduced;  // D-shaped or row-shaped
    if (is_red) {
      // A reduction of an earlier reduction's result must see it row-aligned.
      if (d && !row) return false;
      dep[v] = 1;
    } else if (d) {
      if (row) {
        if (!row_domain || !row_aligned_op(g, v, red)) return false;
        if (g.nodes[v].op == op_kind::reshape && !(c.reduced && classify(g, g.operand(v, 0), red).reduced)) return false;
      } else {
        if (!c.reduced || category(g.nodes[v].op) != op_category::elementwise) return false;
      }
      dep[v] = 1;
    }
    if (is_output(v)) {
      if (row && !row_domain) return false;
      if (!row && !(dep[v] ? c.reduced : c.full)) return false;
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
