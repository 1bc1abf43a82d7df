#pragma once
// Partitioning strategies over an analysed graph. A partition is a group id
// per node (-1 for sources). All strategies share the rules (rules.hpp), the
// acyclicity check and the cost below.
//
//  - unfused:   one group per compute node.
//  - greedy:    pairwise merges along edges, largest intermediate first (the
//               segmenter style of nvFuser); the greedy-claim baseline runs it
//               after growing claims over everything dataflow reaches.
//  - fused:     greedy merges, then sibling and horizontal merges, then single
//               node moves while they lower the cost; then an exact
//               branch-and-bound search seeded with that plan (complete on
//               small graphs, step-limited on large ones). The best of these
//               and the unfused and greedy plans is returned, so the result is
//               never worse than either baseline.

#include <vector>

#include "rules.hpp"

namespace fusex::detail::planning {

struct partition {
  std::vector<int> group_of;  // -1 for sources
  int ngroups = 0;
  bool exact = false;  // proven optimal under the cost model
};

constexpr std::vector<int> members_of(const analysis& a, const std::vector<int>& group_of, int gid) {
  std::vector<int> m;
  for (int v : a.compute)
    if (group_of[v] == gid) m.push_back(v);
  return m;
}

// Members of every group at once, in O(V): buckets[b[g] .. b[g + 1]).
struct buckets {
  std::vector<int> begin, nodes;
};
constexpr buckets bucket_members(const analysis& a, const std::vector<int>& group_of) {
  int ng = 0;
  for (int v : a.compute) ng = group_of[v] + 1 > ng ? group_of[v] + 1 : ng;
  buckets b;
  b.begin.assign(static_cast<std::size_t>(ng + 1), 0);
  for (int v : a.compute) ++b.begin[group_of[v] + 1];
  for (int x = 0; x < ng; ++x) b.begin[x + 1] += b.begin[x];
  b.nodes.assign(a.compute.size(), 0);
  std::vector<int> fill(b.begin.begin(), b.begin.end() - 1);
  for (int v : a.compute) b.nodes[fill[group_of[v]]++] = v;  // stays topological
  return b;
}

// Modelled cost: bytes read and written by every group plus launches.
struct cost_breakdown {
  double read = 0, written = 0;
  int launches = 0;
  constexpr double bytes() const { return read + written; }
  constexpr double total(const cost_model& m) const { return read + written + launches * m.launch_bytes; }
};

constexpr cost_breakdown cost_of(const analysis& a, const std::vector<int>& group_of) {
  cost_breakdown c;
  const graph_ref& g = a.g;
  const buckets b = bucket_members(a, group_of);
  const int ng = static_cast<int>(b.begin.size()) - 1;
  std::vector<int> stamp(static_cast<std::size_t>(g.n), -1);
  for (int gid = 0; gid < ng; ++gid) {
    if (b.begin[gid] == b.begin[gid + 1]) continue;
    ++c.launches;
    for (int i = b.begin[gid]; i < b.begin[gid + 1]; ++i) {
      const int v = b.nodes[i];
      for (int k = 0; k < g.nodes[v].nargs; ++k) {
        const int u = g.operand(v, k);
        if (stamp[u] == gid) continue;
        if (a.kind[u] == nkind::memory || (a.is_compute(u) && group_of[u] != gid)) {
          stamp[u] = gid;
          c.read += a.bytes[u];
        }
      }
    }
  }
  for (int v : a.compute) {
    bool out = a.is_out[v];
    for (int k = 0; !out && k < a.num_consumers(v); ++k) out = group_of[a.consumer(v, k)] != group_of[v];
    if (out) c.written += a.bytes[v];
  }
  return c;
}

// The least a program can move: each tensor argument it reads, once, and
// each output, once.
constexpr double minimum_bytes(const analysis& a) {
  double b = 0;
  for (int v = 0; v < a.g.n; ++v)
    if (a.kind[v] == nkind::memory && a.num_consumers(v) > 0) b += a.bytes[v];
  std::vector<char> seen(static_cast<std::size_t>(a.g.n), 0);
  for (int o = 0; o < a.g.nout; ++o)
    if (!seen[a.g.outputs[o]]) {
      seen[a.g.outputs[o]] = 1;
      b += a.bytes[a.g.outputs[o]];
    }
  return b;
}

// Group-level successor lists of the current partition.
constexpr std::vector<std::vector<int>> group_graph(const analysis& a, const std::vector<int>& group_of, int ngroups) {
  std::vector<std::vector<int>> succ(static_cast<std::size_t>(ngroups));
  for (int v : a.compute) {
    const int gv = group_of[v];
    if (gv < 0) continue;
    for (int k = 0; k < a.num_consumers(v); ++k) {
      const int gc = group_of[a.consumer(v, k)];
      if (gc < 0 || gc == gv) continue;
      bool have = false;
      for (int s : succ[gv]) have = have || s == gc;
      if (!have) succ[gv].push_back(gc);
    }
  }
  return succ;
}

// Is there a path from group `from` to group `to` through at least one other group?
constexpr bool reaches_indirectly(const std::vector<std::vector<int>>& succ, int from, int to) {
  std::vector<char> seen(succ.size(), 0);
  std::vector<int> stack;
  for (int s : succ[from])
    if (s != to && !seen[s]) {
      seen[s] = 1;
      stack.push_back(s);
    }
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    if (x == to) return true;
    for (int s : succ[x])
      if (!seen[s] && s != from) {
        seen[s] = 1;
        stack.push_back(s);
      }
  }
  return false;
}

constexpr bool is_acyclic(const analysis& a, const std::vector<int>& group_of, int ngroups) {
  const auto succ = group_graph(a, group_of, ngroups);
  std::vector<int> indeg(static_cast<std::size_t>(ngroups), 0);
  for (const auto& s : succ)
    for (int x : s) ++indeg[x];
  std::vector<int> ready;
  for (int i = 0; i < ngroups; ++i)
    if (indeg[i] == 0) ready.push_back(i);
  int seen = 0;
  while (!ready.empty()) {
    const int x = ready.back();
    ready.pop_back();
    ++seen;
    for (int s : succ[x])
      if (--indeg[s] == 0) ready.push_back(s);
  }
  return seen == ngroups;
}

constexpr bool is_opaque_group(const analysis& a, const std::vector<int>& group_of, int gid) {
  for (int v : a.compute)
    if (group_of[v] == gid && a.kind[v] == nkind::opaque) return true;
  return false;
}

// Renumbers groups 0..n-1 in order of their first node.
constexpr partition compact(const analysis& a, std::vector<int> group_of) {
  std::vector<int> renum(static_cast<std::size_t>(a.g.n + 1), -1);
  int next = 0;
  for (int v : a.compute) {
    int& r = renum[group_of[v]];
    if (r < 0) r = next++;
  }
  for (int v : a.compute) group_of[v] = renum[group_of[v]];
  return {group_of, next, false};
}

constexpr partition unfused(const analysis& a) {
  std::vector<int> group_of(static_cast<std::size_t>(a.g.n), -1);
  int next = 0;
  for (int v : a.compute) group_of[v] = next++;
  return {group_of, next, false};
}

// Merge-based planning state. Groups keep sorted member lists, a cached
// kind and domain (cheap rejection of incompatible merges) and a level (the
// longest path to them in the group graph). Two groups on one level, or on
// adjacent levels joined by an edge, can merge without creating a cycle (a
// second path between them would need a level gap): nvFuser's rule. Other
// pairs need a path search, which is budgeted on large graphs because a
// constant evaluation runs at about a million simple steps per second.
struct merger {
  const analysis& a;
  std::vector<int> group_of;
  int ngroups;
  std::vector<char> fixed;  // claimed regions never merge
  std::vector<std::vector<int>> members;
  std::vector<char> opaque;
  std::vector<int> red_kind;  // 0 none, 1 row, 2 column
  std::vector<int> red_domain;
  std::vector<int> claim;            // claimant whose region the group is, -1 when none
  std::vector<std::uint32_t> mask;   // claimants that can fuse every member
  // group graph in CSR form and levels, valid while !dirty
  bool dirty = true;
  std::vector<int> succ_begin, succ, level;
  long search_budget;  // remaining path-search steps
  // scratch
  std::vector<char> dep;
  std::vector<int> visit_stamp, stack, merged, edge_stamp, indeg, order;
  int stamp = 0;

  constexpr merger(const analysis& an, std::vector<int> g, int n, std::vector<char> fx)
      : a(an), group_of(g), ngroups(n), fixed(fx) {
    members.resize(static_cast<std::size_t>(n));
    opaque.assign(static_cast<std::size_t>(n), 0);
    red_kind.assign(static_cast<std::size_t>(n), 0);
    red_domain.assign(static_cast<std::size_t>(n), -1);
    claim.assign(static_cast<std::size_t>(n), -1);
    mask.assign(static_cast<std::size_t>(n), ~0u);
    for (int v : a.compute) {
      const int x = group_of[v];
      members[x].push_back(v);
      if (a.has_regions()) {
        if (a.region_claim[v] >= 0) claim[x] = a.region_claim[v];
        mask[x] &= a.fusable[v];
      }
      if (a.kind[v] == nkind::opaque) opaque[x] = 1;
      if (a.kind[v] == nkind::row_reduce || a.kind[v] == nkind::col_reduce) {
        red_kind[x] = a.kind[v] == nkind::row_reduce ? 1 : 2;
        red_domain[x] = a.domain[v];
      }
    }
    fixed.resize(static_cast<std::size_t>(n), 0);
    dep.assign(static_cast<std::size_t>(a.g.n), 0);
    visit_stamp.assign(static_cast<std::size_t>(n), 0);
    edge_stamp.assign(static_cast<std::size_t>(n), -1);
    level.assign(static_cast<std::size_t>(n), 0);
    search_budget = a.compute.size() <= 64 ? (1L << 40) : 40L * static_cast<long>(a.compute.size());
  }

  constexpr void rebuild() {
    succ_begin.assign(static_cast<std::size_t>(ngroups + 1), 0);
    succ.clear();
    indeg.assign(static_cast<std::size_t>(ngroups), 0);
    for (int x = 0; x < ngroups; ++x) {
      succ_begin[x] = static_cast<int>(succ.size());
      for (int v : members[x])
        for (int k = 0; k < a.num_consumers(v); ++k) {
          const int gc = group_of[a.consumer(v, k)];
          if (gc < 0 || gc == x || edge_stamp[gc] == x) continue;
          edge_stamp[gc] = x;
          succ.push_back(gc);
          ++indeg[gc];
        }
    }
    succ_begin[ngroups] = static_cast<int>(succ.size());
    for (int x = 0; x < ngroups; ++x) edge_stamp[x] = -1;
    // levels: longest path from a source group (Kahn order)
    order.clear();
    for (int x = 0; x < ngroups; ++x) {
      level[x] = 0;
      if (indeg[x] == 0) order.push_back(x);
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int x = order[i];
      for (int j = succ_begin[x]; j < succ_begin[x + 1]; ++j) {
        const int y = succ[j];
        if (level[y] < level[x] + 1) level[y] = level[x] + 1;
        if (--indeg[y] == 0) order.push_back(y);
      }
    }
    dirty = false;
  }

  constexpr bool has_edge(int x, int y) const {
    for (int j = succ_begin[x]; j < succ_begin[x + 1]; ++j)
      if (succ[j] == y) return true;
    return false;
  }

  // A path from group `from` to group `to` through at least one other group;
  // only groups below `to`'s level can lie on it. Budget exhausted: assume yes.
  constexpr bool indirect_path(int from, int to) {
    if (level[from] >= level[to]) return false;
    ++stamp;
    stack.clear();
    for (int i = succ_begin[from]; i < succ_begin[from + 1]; ++i)
      if (succ[i] != to && level[succ[i]] < level[to]) {
        visit_stamp[succ[i]] = stamp;
        stack.push_back(succ[i]);
      }
    while (!stack.empty()) {
      if (--search_budget < 0) return true;
      const int x = stack.back();
      stack.pop_back();
      for (int i = succ_begin[x]; i < succ_begin[x + 1]; ++i) {
        const int y = succ[i];
        if (y == to) return true;
        if (visit_stamp[y] != stamp && level[y] < level[to]) {
          visit_stamp[y] = stamp;
          stack.push_back(y);
        }
      }
    }
    return false;
  }

  constexpr bool acyclic_merge(int x, int y) {
    if (level[x] == level[y]) return true;  // no path either way
    const int lo = level[x] < level[y] ? x : y, hi = lo == x ? y : x;
    if (level[hi] == level[lo] + 1 && has_edge(lo, hi)) return true;
    return !indirect_path(lo, hi);
  }

  // `known_acyclic`: the caller has established that the merge closes no cycle.
  constexpr bool try_merge(int x, int y, bool into_fixed = false, bool known_acyclic = false) {
    if (x == y || (fixed[x] && !into_fixed) || fixed[y] || opaque[x] || opaque[y]) return false;
    if (members[x].empty() || members[y].empty()) return false;
    if (red_kind[x] && red_kind[y] && (red_kind[x] != red_kind[y] || red_domain[x] != red_domain[y])) return false;
    const int c = claim[x] >= 0 ? claim[x] : claim[y];
    if (claim[x] >= 0 && claim[y] >= 0 && claim[x] != claim[y]) return false;
    if (c >= 0 && !(((mask[x] & mask[y]) >> c) & 1u)) return false;
    if (!known_acyclic) {
      if (dirty) rebuild();
      if (!acyclic_merge(x, y)) return false;
    }
    // merged member list, sorted
    merged.clear();
    std::size_t i = 0, j = 0;
    const auto& mx = members[x];
    const auto& my = members[y];
    while (i < mx.size() || j < my.size())
      merged.push_back(j >= my.size() || (i < mx.size() && mx[i] < my[j]) ? mx[i++] : my[j++]);
    for (int v : my) group_of[v] = x;
    // Two pointwise groups always make a valid pointwise group.
    if ((red_kind[x] || red_kind[y]) && !group_is_valid(a, merged, group_of, x, dep)) {
      for (int v : my) group_of[v] = y;
      return false;
    }
    members[x] = merged;
    members[y].clear();
    claim[x] = c;
    mask[x] &= mask[y];
    if (red_kind[y]) {
      red_kind[x] = red_kind[y];
      red_domain[x] = red_domain[y];
    }
    dirty = true;
    return true;
  }
};

// Merging in rounds, for large graphs: levels are computed once per round,
// and a round merges disjoint pairs that are on one level or on adjacent
// levels joined by an edge, skipping any pair next to a group already merged
// in the round. Within a round those merges cannot form a cycle together (a
// cycle would have to pass through two merged pairs joined by direct edges),
// so no path search and no rebuild is needed until the round ends.
template <class Candidates>
constexpr void merge_in_rounds(merger& m, Candidates candidates) {
  std::vector<int> touched;
  std::vector<int> pred_begin, pred;
  for (int round = 0; round < 64; ++round) {
    m.rebuild();
    // predecessor lists, for the neighbour rule
    pred_begin.assign(static_cast<std::size_t>(m.ngroups + 1), 0);
    for (int x = 0; x < m.ngroups; ++x)
      for (int j = m.succ_begin[x]; j < m.succ_begin[x + 1]; ++j) ++pred_begin[m.succ[j] + 1];
    for (int x = 0; x < m.ngroups; ++x) pred_begin[x + 1] += pred_begin[x];
    pred.assign(static_cast<std::size_t>(pred_begin[m.ngroups]), 0);
    std::vector<int> fill(pred_begin.begin(), pred_begin.end() - 1);
    for (int x = 0; x < m.ngroups; ++x)
      for (int j = m.succ_begin[x]; j < m.succ_begin[x + 1]; ++j) pred[fill[m.succ[j]]++] = x;
    touched.assign(static_cast<std::size_t>(m.ngroups), 0);
    auto near_touched = [&](int x) {
      if (touched[x]) return true;
      for (int j = m.succ_begin[x]; j < m.succ_begin[x + 1]; ++j)
        if (touched[m.succ[j]]) return true;
      for (int j = pred_begin[x]; j < pred_begin[x + 1]; ++j)
        if (touched[pred[j]]) return true;
      return false;
    };
    int merges = 0;
    candidates([&](int x, int y) {
      if (x == y || m.members[x].empty() || m.members[y].empty()) return;
      if (near_touched(x) || near_touched(y)) return;
      const int lx = m.level[x], ly = m.level[y];
      const bool safe = lx == ly || (ly == lx + 1 && m.has_edge(x, y)) || (lx == ly + 1 && m.has_edge(y, x));
      if (safe && m.try_merge(x, y, false, true)) {
        touched[x] = touched[y] = 1;
        ++merges;
      }
    });
    if (merges == 0) break;
  }
}

// Edges between compute nodes in merge order: edges into reductions first
// (the most constrained groups gather their producers before pointwise
// groups take them), then edges out of reductions, then the rest; within
// each class the largest producer first, ties in graph order.
constexpr std::vector<std::pair<int, int>> edges_by_priority(const analysis& a) {
  auto is_red = [&](int v) { return a.kind[v] == nkind::row_reduce || a.kind[v] == nkind::col_reduce; };
  auto rank = [&](const std::pair<int, int>& e) { return is_red(e.second) ? 0 : is_red(e.first) ? 1 : 2; };
  std::vector<std::pair<int, int>> e;
  for (int v : a.compute)
    for (int k = 0; k < a.num_consumers(v); ++k) {
      const int c = a.consumer(v, k);
      if (a.is_compute(c)) e.push_back({v, c});
    }
  auto before = [&](const std::pair<int, int>& x, const std::pair<int, int>& y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    return a.bytes[x.first] > a.bytes[y.first];
  };
  // merge sort: stable, O(E log E), and cheap in a constant evaluation
  std::vector<std::pair<int, int>> tmp(e.size());
  for (std::size_t width = 1; width < e.size(); width *= 2) {
    for (std::size_t lo = 0; lo < e.size(); lo += 2 * width) {
      const std::size_t mid = lo + width < e.size() ? lo + width : e.size();
      const std::size_t hi = lo + 2 * width < e.size() ? lo + 2 * width : e.size();
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid || j < hi) tmp[k++] = (j >= hi || (i < mid && !before(e[j], e[i]))) ? e[i++] : e[j++];
    }
    e.swap(tmp);
  }
  return e;
}

constexpr void merge_edges(merger& m) {
  const auto edges = edges_by_priority(m.a);
  if (m.a.compute.size() > 64) {
    merge_in_rounds(m, [&](auto&& f) {
      for (auto [u, v] : edges) f(m.group_of[u], m.group_of[v]);
    });
    return;
  }
  for (auto [u, v] : edges) m.try_merge(m.group_of[u], m.group_of[v]);
}

// Groups that read the same value merge (that value is then read once).
constexpr void merge_siblings(merger& m) {
  const analysis& a = m.a;
  for (int u = 0; u < a.g.n; ++u) {
    if (!(a.kind[u] == nkind::memory || a.is_compute(u)) || a.num_consumers(u) < 2) continue;
    for (int k = 0; k < a.num_consumers(u); ++k)
      for (int l = k + 1; l < a.num_consumers(u); ++l) {
        const int c1 = a.consumer(u, k), c2 = a.consumer(u, l);
        if (a.is_compute(c1) && a.is_compute(c2)) m.try_merge(m.group_of[c1], m.group_of[c2]);
      }
  }
}

// Any two groups that can merge do: one launch fewer, no more bytes. Pairs
// on one level merge without a path search; other pairs are tried on small
// graphs only.
constexpr void merge_any(merger& m) {
  const bool small = m.a.compute.size() <= 64;
  for (int pass = 0; pass < 2; ++pass)
    for (int x = 0; x < m.ngroups; ++x)
      for (int y = x + 1; !m.members[x].empty() && y < m.ngroups; ++y) {
        if (m.members[y].empty()) continue;
        if (m.dirty) m.rebuild();
        if (small || m.level[x] == m.level[y]) m.try_merge(x, y);
      }
}

// Moves single nodes to a neighbour's group (or a new group) while that
// lowers the cost and keeps every group valid and the plan acyclic.
constexpr void move_nodes(const analysis& a, std::vector<int>& group_of, int& ngroups, int rounds) {
  double best = cost_of(a, group_of).total(a.model);
  for (int r = 0; r < rounds; ++r) {
    bool improved = false;
    for (int v : a.compute) {
      if (a.kind[v] == nkind::opaque) continue;
      std::vector<int> targets;
      for (int k = 0; k < a.g.nodes[v].nargs; ++k) {
        const int u = a.g.operand(v, k);
        if (a.is_compute(u)) targets.push_back(group_of[u]);
      }
      for (int k = 0; k < a.num_consumers(v); ++k) targets.push_back(group_of[a.consumer(v, k)]);
      targets.push_back(ngroups);  // a new group
      for (int t : targets) {
        if (t == group_of[v] || (t < ngroups && is_opaque_group(a, group_of, t))) continue;
        std::vector<int> trial = group_of;
        const int from = trial[v];
        trial[v] = t;
        const int ng = t == ngroups ? ngroups + 1 : ngroups;
        if (!group_is_valid(a, members_of(a, trial, t), trial, t)) continue;
        const auto rest = members_of(a, trial, from);
        if (!rest.empty() && !group_is_valid(a, rest, trial, from)) continue;
        // neighbours' groups may gain outputs
        bool ok = true;
        for (int k = 0; ok && k < a.g.nodes[v].nargs; ++k) {
          const int u = a.g.operand(v, k);
          if (a.is_compute(u) && trial[u] != t && trial[u] != from)
            ok = group_is_valid(a, members_of(a, trial, trial[u]), trial, trial[u]);
        }
        if (!ok || !is_acyclic(a, trial, ng)) continue;
        const double c = cost_of(a, trial).total(a.model);
        if (c < best) {
          best = c;
          group_of = trial;
          ngroups = ng;
          improved = true;
          break;
        }
      }
    }
    if (!improved) break;
  }
}

// Exact branch and bound over assignments in topological order. Every
// quantity is maintained incrementally (reads per group, outside consumers
// per value, edges between groups), so one step costs O(degree + groups^2).
// The partial cost never decreases as nodes are added, so it bounds every
// completion of the assignment.
struct exact_search {
  const analysis& a;
  std::vector<int> assign;              // -1 while unassigned
  std::vector<std::vector<int>> members;
  std::vector<std::vector<int>> reads;  // external values each group reads
  std::vector<char> closed;             // opaque groups take no more nodes
  std::vector<int> outside;             // assigned consumers outside the value's group
  std::vector<int> edges;               // edge multiplicity between groups, cap x cap
  int cap = 0;
  double cost = 0;
  std::vector<int> best;
  double best_cost;
  long steps = 0;
  long step_limit;
  bool complete = true;
  // Cost every completion of a prefix of length k must still pay: launches of
  // the remaining opaque nodes, writes of remaining program outputs, and
  // arguments that no node of the prefix reads yet.
  std::vector<double> future;
  // Scratch, reused so that a step allocates nothing.
  std::vector<int> newly_outside;        // stack of values that became outputs
  std::vector<std::vector<int>> orders;  // candidate groups per depth
  std::vector<char> seen, dep;
  std::vector<int> stack;

  constexpr exact_search(const analysis& an, std::vector<int> incumbent, double incumbent_cost, long limit)
      : a(an), best(incumbent), best_cost(incumbent_cost), step_limit(limit) {
    const int nc = static_cast<int>(a.compute.size());
    cap = nc + 1;
    assign.assign(static_cast<std::size_t>(a.g.n), -1);
    outside.assign(static_cast<std::size_t>(a.g.n), 0);
    edges.assign(static_cast<std::size_t>(cap * cap), 0);
    seen.assign(static_cast<std::size_t>(cap), 0);
    dep.assign(static_cast<std::size_t>(a.g.n), 0);
    orders.resize(static_cast<std::size_t>(nc + 1));
    future.assign(static_cast<std::size_t>(nc + 1), 0.0);
    std::vector<int> pos(static_cast<std::size_t>(a.g.n), nc);
    for (int k = 0; k < nc; ++k) pos[a.compute[k]] = k;
    std::vector<double> at(static_cast<std::size_t>(nc + 1), 0.0);
    for (int k = 0; k < nc; ++k) {
      const int v = a.compute[k];
      if (a.kind[v] == nkind::opaque) at[k] += a.model.launch_bytes;
      if (a.is_out[v]) at[k] += a.bytes[v];
    }
    for (int u = 0; u < a.g.n; ++u) {
      if (a.kind[u] != nkind::memory || a.num_consumers(u) == 0) continue;
      int first = nc;
      for (int j = 0; j < a.num_consumers(u); ++j) first = pos[a.consumer(u, j)] < first ? pos[a.consumer(u, j)] : first;
      at[first] += a.bytes[u];
    }
    for (int k = nc - 1; k >= 0; --k) future[k] = future[k + 1] + at[k];
  }

  constexpr bool reaches(int from, int to, int ngroups) {
    for (int i = 0; i < ngroups; ++i) seen[i] = 0;
    stack.clear();
    stack.push_back(from);
    seen[from] = 1;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (x == to) return true;
      const int* row = edges.data() + x * cap;
      for (int y = 0; y < ngroups; ++y)
        if (!seen[y] && row[y] > 0) {
          seen[y] = 1;
          stack.push_back(y);
        }
    }
    return false;
  }

  // Places v into gid; returns the cost added and pushes the values that
  // became outputs onto newly_outside (their count is returned in `pushed`).
  constexpr double place(int v, int gid, int& reads_pushed, int& pushed) {
    const graph_ref& g = a.g;
    double delta = 0;
    reads_pushed = pushed = 0;
    assign[v] = gid;
    members[gid].push_back(v);
    for (int k = 0; k < g.nodes[v].nargs; ++k) {
      const int u = g.operand(v, k);
      const bool external = a.kind[u] == nkind::memory || (a.is_compute(u) && assign[u] != gid);
      if (!external) continue;
      bool have = false;
      for (int r : reads[gid]) have = have || r == u;
      if (!have) {
        reads[gid].push_back(u);
        ++reads_pushed;
        delta += a.bytes[u];
      }
      if (a.is_compute(u)) {
        ++edges[assign[u] * cap + gid];
        if (outside[u]++ == 0) {
          newly_outside.push_back(u);
          ++pushed;
          if (!a.is_out[u]) delta += a.bytes[u];
        }
      }
    }
    if (a.is_out[v]) delta += a.bytes[v];
    cost += delta;
    return delta;
  }

  constexpr void unplace(int v, int gid, double delta, int reads_pushed, int pushed) {
    const graph_ref& g = a.g;
    for (int k = 0; k < g.nodes[v].nargs; ++k) {
      const int u = g.operand(v, k);
      if (a.is_compute(u) && assign[u] != gid) {
        --edges[assign[u] * cap + gid];
        --outside[u];
      }
    }
    for (int i = 0; i < reads_pushed; ++i) reads[gid].pop_back();
    for (int i = 0; i < pushed; ++i) newly_outside.pop_back();
    members[gid].pop_back();
    assign[v] = -1;
    cost -= delta;
  }

  constexpr bool valid_after(int gid, int pushed) {
    if (!group_is_valid(a, members[gid], assign, gid, dep)) return false;
    const std::size_t n = newly_outside.size();
    for (std::size_t i = n - static_cast<std::size_t>(pushed); i < n; ++i) {
      const int h = assign[newly_outside[i]];
      if (!group_is_valid(a, members[h], assign, h, dep)) return false;
    }
    return true;
  }

  constexpr bool creates_cycle(int v, int gid, int ngroups) {
    for (int k = 0; k < a.g.nodes[v].nargs; ++k) {
      const int u = a.g.operand(v, k);
      if (a.is_compute(u) && assign[u] != gid && reaches(gid, assign[u], ngroups)) return true;
    }
    return false;
  }

  constexpr void dfs(std::size_t k, int ngroups) {
    if (++steps > step_limit) {
      complete = false;
      return;
    }
    if (k == a.compute.size()) {
      if (cost < best_cost) {
        best_cost = cost;
        best = assign;
      }
      return;
    }
    const int v = a.compute[k];
    int rp = 0, pushed = 0;
    if (a.kind[v] != nkind::opaque) {
      // Groups holding v's operands first, then the others.
      std::vector<int>& order = orders[k];
      order.clear();
      for (int j = 0; j < a.g.nodes[v].nargs; ++j) {
        const int u = a.g.operand(v, j);
        if (!a.is_compute(u) || closed[assign[u]]) continue;
        bool have = false;
        for (int o : order) have = have || o == assign[u];
        if (!have) order.push_back(assign[u]);
      }
      for (int gid = 0; gid < ngroups; ++gid) {
        bool have = closed[gid];
        for (int o : order) have = have || o == gid;
        if (!have) order.push_back(gid);
      }
      for (std::size_t i = 0; i < order.size(); ++i) {
        const int gid = order[i];
        if (creates_cycle(v, gid, ngroups)) continue;
        const double d = place(v, gid, rp, pushed);
        if (cost + future[k + 1] < best_cost && valid_after(gid, pushed)) dfs(k + 1, ngroups);
        unplace(v, gid, d, rp, pushed);
        if (steps > step_limit) return;
      }
    }
    // A new group.
    members.push_back({});
    reads.push_back({});
    closed.push_back(a.kind[v] == nkind::opaque ? 1 : 0);
    cost += a.model.launch_bytes;
    const double d = place(v, ngroups, rp, pushed);
    if (cost + future[k + 1] < best_cost && valid_after(ngroups, pushed)) dfs(k + 1, ngroups + 1);
    unplace(v, ngroups, d, rp, pushed);
    cost -= a.model.launch_bytes;
    members.pop_back();
    reads.pop_back();
    closed.pop_back();
  }
};

constexpr partition greedy(const analysis& a, std::vector<int> group_of, int ngroups, std::vector<char> fixed) {
  merger m(a, group_of, ngroups, fixed);
  merge_edges(m);
  return compact(a, m.group_of);
}

// The greedy-claim baseline, after Thunder's data-dependent partition for
// its torchcompile_cat executor: in trace order, every op the claimant can
// fuse joins the first of its regions it can join without a cycle (above or
// beside it, as dataflow allows), else starts a region. Regions holding a
// claimed op are claimed whole and come back as fixed groups; the other
// regions dissolve. `can_fuse(c, v)`: may claimant c fuse node v.
template <class CanFuse>
constexpr partition grow_claims(const analysis& a, CanFuse can_fuse, int nclaimants, std::vector<char>& fixed) {
  const partition base = unfused(a);
  std::vector<int> group_of = base.group_of;
  std::vector<char> claimed_group(static_cast<std::size_t>(base.ngroups), 0);
  for (int c = 0; c < nclaimants; ++c) {
    merger m(a, group_of, base.ngroups, claimed_group);
    std::vector<int> regions;
    for (int v : a.compute) {
      if (a.kind[v] != nkind::pointwise || m.fixed[m.group_of[v]] || !can_fuse(c, v)) continue;
      bool joined = false;
      for (int r : regions)
        if (m.try_merge(r, m.group_of[v])) {
          joined = true;
          break;
        }
      if (!joined) regions.push_back(m.group_of[v]);
    }
    // keep the regions that hold a claimed op; the others dissolve
    for (int r : regions) {
      bool holds_claim = false;
      for (int v : m.members[r]) holds_claim = holds_claim || a.claimant[v] == c || a.region_of(v) == c;
      if (!holds_claim) continue;
      for (int v : m.members[r]) group_of[v] = r;
      claimed_group[r] = 1;
    }
  }
  fixed = claimed_group;
  return {group_of, base.ngroups, false};
}

// Sibling and horizontal merges after the edge merges.
constexpr void merge_rest(const analysis& a, merger& m) {
  if (a.compute.size() <= 64) {
    merge_siblings(m);
    merge_any(m);
    return;
  }
  merge_in_rounds(m, [&](auto&& f) {  // siblings: groups reading one value
    for (int u = 0; u < a.g.n; ++u)
      for (int k = 1; k < a.num_consumers(u); ++k)
        if (a.is_compute(a.consumer(u, 0)) && a.is_compute(a.consumer(u, k)))
          f(m.group_of[a.consumer(u, 0)], m.group_of[a.consumer(u, k)]);
  });
  merge_in_rounds(m, [&](auto&& f) {  // groups on one level, pairwise by kind
    int maxl = 0;
    for (int x = 0; x < m.ngroups; ++x) maxl = m.level[x] > maxl ? m.level[x] : maxl;
    std::vector<int> last(static_cast<std::size_t>(3 * (maxl + 1)), -1);
    for (int x = 0; x < m.ngroups; ++x) {
      if (m.members[x].empty() || m.opaque[x] || m.fixed[x]) continue;
      int& l = last[3 * m.level[x] + m.red_kind[x]];
      if (l < 0) {
        l = x;
      } else {
        f(l, x);
        l = -1;
      }
    }
  });
}

// The greedy-claim partition under this analysis's rules: claims grow over
// what their claimant can fuse in trace order, the rest merges greedily.
constexpr partition claim_greedy(const analysis& a, int nclaimants) {
  std::vector<char> fixed;
  auto can_fuse = [&](int c, int v) { return ((a.fusable[v] >> c) & 1u) != 0; };
  const partition grown = grow_claims(a, can_fuse, nclaimants, fixed);
  return greedy(a, grown.group_of, grown.ngroups, fixed);
}

// Keeps the cheaper of `best` and `p` (strictly cheaper replaces).
constexpr void keep_cheaper(const analysis& a, partition& best, double& best_cost, const partition& p) {
  const double c = cost_of(a, p.group_of).total(a.model);
  if (c < best_cost) {
    best_cost = c;
    best = p;
  }
}

constexpr partition fused(const analysis& a, long exact_steps, int nclaimants = 0) {
  partition base = unfused(a);
  const bool large = a.compute.size() > 64;
  // Claimed regions start as singletons that fusex groups cannot enter, so
  // fusex's own groups form first along edges; then a region may take whole
  // neighbouring groups that its claimant can fuse. A region therefore never splits a fusex group;
  // single-node moves and the exact search below split one only where the
  // model says it pays.
  std::vector<char> claimed(static_cast<std::size_t>(base.ngroups), 0);
  for (int v : a.compute)
    if (a.region_of(v) >= 0) claimed[base.group_of[v]] = 1;
  merger m(a, base.group_of, base.ngroups, claimed);
  merge_edges(m);
  const partition greedy_plan = compact(a, m.group_of);
  if (a.has_regions()) {  // regions take whole neighbours before horizontal merges mix unrelated groups
    m.fixed.assign(m.fixed.size(), 0);
    merge_edges(m);
  }
  merge_rest(a, m);
  int ng = m.ngroups;
  std::vector<int> g = m.group_of;
  // Single-node moves cost O(V * (V + E)) per round: worth it on the graphs
  // people write by hand, skipped on very large generated ones.
  if (!large) move_nodes(a, g, ng, 4);
  // Candidates: this, the greedy plan, the unfused plan and, with claims,
  // the greedy-claim plan, so the result is never worse than any baseline.
  partition best = compact(a, g);
  double best_cost = cost_of(a, best.group_of).total(a.model);
  // (one call each, not a loop over an initializer_list: EDG, nvcc's front
  // end, loses track of the list's vectors in constant evaluation)
  keep_cheaper(a, best, best_cost, greedy_plan);
  keep_cheaper(a, best, best_cost, base);
  if (a.has_regions()) {
    partition cg = claim_greedy(a, nclaimants);
    if (!large) {
      int cng = cg.ngroups;
      move_nodes(a, cg.group_of, cng, 4);
      cg = compact(a, cg.group_of);
    }
    keep_cheaper(a, best, best_cost, cg);
  }
  // Exact search, seeded with the best so far (strictly better plans only).
  // Its per-step cost grows with the square of the group count, so it runs
  // on the graph sizes where it can finish.
  if (a.compute.size() > 40) return best;
  exact_search s(a, best.group_of, best_cost, exact_steps);
  s.dfs(0, 0);
  if (s.best != best.group_of) best = compact(a, s.best);
  best.exact = s.complete;
  return best;
}

}  // namespace fusex::detail::planning
