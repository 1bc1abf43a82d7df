#pragma once
// What the planner needs to know about each node: its kind for grouping, its
// modelled size in bytes, its consumers, and for reductions their domain.
// Works on a non-template view of the graph so that the planning code is
// compiled once, not once per program.

#include <vector>

#include "../capture/graph.hpp"
#include "extents.hpp"

namespace fusex {

// The cost model: a group reads each external value it uses once and writes
// each value used outside it (or returned) once; a launch costs as much as
// moving `launch_bytes`. Run-time extents take the values of extents.hpp
// (hints, constants, defaults), each free one (not a constant or an index
// argument) times `extent_scale`, so one trace can be planned for smaller
// or larger runs (candidates.hpp); modelled_traffic() reports real bytes.
struct cost_model {
  double launch_bytes = 8.0 * 1024 * 1024;
  double extent_scale = 1;
};

namespace detail::planning {

// Non-owning view of a graph's arrays.
struct graph_ref {
  const node* nodes = nullptr;
  int n = 0;
  const std::int32_t* args = nullptr;
  const expr* exprs = nullptr;
  const std::int32_t* eclass = nullptr;
  const std::int32_t* outputs = nullptr;
  int nout = 0;
  int nexpr = 0;

  constexpr int operand(int v, int k) const { return args[nodes[v].arg0 + k]; }
  constexpr bool same(int ea, int eb) const { return eclass[ea] == eclass[eb]; }
  constexpr bool is_const(int e, std::int64_t v) const {
    return exprs[e].kind == expr_kind::constant && exprs[e].value == v;
  }
};

template <graph_sizes S>
constexpr graph_ref ref(const graph<S>& g) {
  return {g.nodes, S.nodes, g.args, g.exprs, g.eclass, g.outputs, S.outputs, S.exprs};
}

enum class nkind : std::uint8_t {
  memory,       // a tensor argument: read from memory
  immediate,    // constants, scalars, full, iota, index values: computed where used
  pointwise,    // elementwise and index remaps
  row_reduce,   // reduction over the innermost axis
  col_reduce,   // reduction over another axis
  opaque,       // matmul, or a node claimed by another executor
};

struct analysis {
  graph_ref g;
  cost_model model;
  std::vector<nkind> kind;
  std::vector<double> bytes;
  std::vector<int> cons_begin;  // consumers of v: cons[cons_begin[v] .. cons_begin[v + 1])
  std::vector<int> cons;
  std::vector<char> is_out;
  std::vector<int> domain;    // reduction domain id; -1 for other nodes
  std::vector<int> claimant;  // claiming executor of an opaque claim, -1 when none
  std::vector<int> compute;   // compute nodes in topological order
  std::vector<double> extent;  // modelled value of each expr
  // Claims that head a region (fused policy): a group holding such a node
  // belongs to its claimant and may hold only nodes that claimant can fuse
  // (bit c of fusable[v]). Empty when the policy has none.
  std::vector<int> region_claim;
  std::vector<std::uint32_t> fusable;

  constexpr bool is_compute(int v) const { return kind[v] >= nkind::pointwise; }
  constexpr bool has_regions() const { return !region_claim.empty(); }
  constexpr int region_of(int v) const { return region_claim.empty() ? -1 : region_claim[v]; }
  constexpr int num_consumers(int v) const { return cons_begin[v + 1] - cons_begin[v]; }
  constexpr int consumer(int v, int k) const { return cons[cons_begin[v] + k]; }
};

constexpr double modelled_bytes(const graph_ref& g, int v, const std::vector<double>& extent) {
  const node& n = g.nodes[v];
  double b = size_of(n.dt);
  for (int i = 0; i < n.rank; ++i) b *= extent[n.shape[i]];
  return b;
}

// Reductions share a domain when their inputs have equal extents (statically)
// and they reduce the same axis.
constexpr bool same_domain(const graph_ref& g, int r1, int r2) {
  const node& a = g.nodes[r1];
  const node& b = g.nodes[r2];
  if (a.axis != b.axis) return false;
  const node& x = g.nodes[g.operand(r1, 0)];
  const node& y = g.nodes[g.operand(r2, 0)];
  if (x.rank != y.rank) return false;
  for (int i = 0; i < x.rank; ++i)
    if (!g.same(x.shape[i], y.shape[i])) return false;
  return true;
}

constexpr analysis analyse(const graph_ref& g, const cost_model& m, const std::vector<int>& claimant,
                           const extent_hints& hints = {}) {
  analysis a{g, m, {}, {}, {}, {}, {}, {}, claimant, {}, extent_values(g.nodes, g.n, g.exprs, g.eclass, g.nexpr, hints, m.extent_scale), {}, {}};
  const int n = g.n;
  a.kind.resize(n);
  a.bytes.resize(n);
  a.is_out.assign(n, 0);
  a.domain.assign(n, -1);
  for (int v = 0; v < n; ++v) {
    const node& nd = g.nodes[v];
    a.bytes[v] = modelled_bytes(g, v, a.extent);
    switch (category(nd.op)) {
      case op_category::source: a.kind[v] = nd.op == op_kind::input ? nkind::memory : nkind::immediate; break;
      case op_category::elementwise:
      case op_category::remap: a.kind[v] = nkind::pointwise; break;
      case op_category::reduction:
        a.kind[v] = nd.axis == g.nodes[g.operand(v, 0)].rank - 1 ? nkind::row_reduce : nkind::col_reduce;
        break;
      case op_category::opaque: a.kind[v] = nkind::opaque; break;
    }
    if (claimant[v] >= 0 && a.kind[v] >= nkind::pointwise) a.kind[v] = nkind::opaque;
    if (a.kind[v] >= nkind::pointwise) a.compute.push_back(v);
  }
  for (int o = 0; o < g.nout; ++o) a.is_out[g.outputs[o]] = 1;
  // consumers, in CSR form
  std::vector<int> count(n + 1, 0);
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < g.nodes[v].nargs; ++k) ++count[g.operand(v, k) + 1];
  for (int v = 0; v < n; ++v) count[v + 1] += count[v];
  a.cons_begin = count;
  a.cons.assign(count[n], 0);
  std::vector<int> fill = count;
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < g.nodes[v].nargs; ++k) a.cons[fill[g.operand(v, k)]++] = v;
  // reduction domains
  int next = 0;
  for (int v = 0; v < n; ++v) {
    if (a.kind[v] != nkind::row_reduce && a.kind[v] != nkind::col_reduce) continue;
    for (int u = 0; u < v && a.domain[v] < 0; ++u)
      if (a.domain[u] >= 0 && a.kind[u] == a.kind[v] && same_domain(g, u, v)) a.domain[v] = a.domain[u];
    if (a.domain[v] < 0) a.domain[v] = next++;
  }
  return a;
}

}  // namespace detail::planning
}  // namespace fusex
