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
  int maxg = -1;
  for (int v : a.compute) maxg = group_of[v] > maxg ? group_of[v] : maxg;
  std::vector<char> used(static_cast<std::size_t>(maxg + 1), 0);
  // reads: distinct (group, value) pairs; marks per value reset per group via a stamp
  std::vector<int> stamp(static_cast<std::size_t>(g.n), -1);
  for (int gid = 0; gid <= maxg; ++gid) {
    for (int v : a.compute) {
      if (group_of[v] != gid) continue;
      used[gid] = 1;
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
  for (int gid = 0; gid <= maxg; ++gid) c.launches += used[gid];
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

// Merges groups x and y when the result is a valid, acyclic group. `fixed`
// groups (claimed regions) never merge.
struct merger {
  const analysis& a;
  std::vector<int> group_of;
  int ngroups;
  std::vector<char> fixed;

  constexpr bool try_merge(int x, int y) {
    if (x == y || fixed[x] || fixed[y]) return false;
    if (is_opaque_group(a, group_of, x) || is_opaque_group(a, group_of, y)) return false;
    std::vector<int> trial = group_of;
    for (int v : a.compute)
      if (trial[v] == y) trial[v] = x;
    if (!group_is_valid(a, members_of(a, trial, x), trial, x)) return false;
    const auto succ = group_graph(a, group_of, ngroups);
    if (reaches_indirectly(succ, x, y) || reaches_indirectly(succ, y, x)) return false;
    group_of = trial;
    return true;
  }
};

// Edges between compute nodes, largest producer first (ties: graph order).
constexpr std::vector<std::pair<int, int>> edges_by_bytes(const analysis& a) {
  std::vector<std::pair<int, int>> e;
  for (int v : a.compute)
    for (int k = 0; k < a.num_consumers(v); ++k) {
      const int c = a.consumer(v, k);
      if (a.is_compute(c)) e.push_back({v, c});
    }
  // insertion sort keeps it constexpr-friendly and stable
  for (std::size_t i = 1; i < e.size(); ++i)
    for (std::size_t j = i; j > 0 && a.bytes[e[j].first] > a.bytes[e[j - 1].first]; --j) {
      auto t = e[j];
      e[j] = e[j - 1];
      e[j - 1] = t;
    }
  return e;
}

constexpr void merge_edges(merger& m) {
  for (auto [u, v] : edges_by_bytes(m.a)) m.try_merge(m.group_of[u], m.group_of[v]);
}

// Groups that read the same value merge (that value is then read once).
constexpr void merge_siblings(merger& m) {
  const analysis& a = m.a;
  std::vector<int> values;
  for (int u = 0; u < a.g.n; ++u)
    if ((a.kind[u] == nkind::memory || a.is_compute(u)) && a.num_consumers(u) > 1) values.push_back(u);
  for (std::size_t i = 1; i < values.size(); ++i)
    for (std::size_t j = i; j > 0 && a.bytes[values[j]] > a.bytes[values[j - 1]]; --j) {
      auto t = values[j];
      values[j] = values[j - 1];
      values[j - 1] = t;
    }
  for (int u : values)
    for (int k = 0; k < a.num_consumers(u); ++k)
      for (int l = k + 1; l < a.num_consumers(u); ++l) {
        const int c1 = a.consumer(u, k), c2 = a.consumer(u, l);
        if (a.is_compute(c1) && a.is_compute(c2)) m.try_merge(m.group_of[c1], m.group_of[c2]);
      }
}

// Any two groups that can merge do: one launch fewer, no more bytes.
constexpr void merge_any(merger& m) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<char> live(static_cast<std::size_t>(m.ngroups), 0);
    for (int v : m.a.compute) live[m.group_of[v]] = 1;
    for (int x = 0; x < m.ngroups; ++x)
      for (int y = x + 1; live[x] && y < m.ngroups; ++y)
        if (live[y] && m.try_merge(x, y)) live[y] = 0;
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
  merger m{a, group_of, ngroups, fixed};
  merge_edges(m);
  return compact(a, m.group_of);
}

// Grows each claim of executor c over every node it can fuse that dataflow
// reaches (in either direction), as long as the region stays acyclic: the
// greedy-claim behaviour of the seed story.
template <class CanFuse>
constexpr partition grow_claims(const analysis& a, CanFuse can_fuse, std::vector<char>& fixed) {
  partition p = unfused(a);
  fixed.assign(static_cast<std::size_t>(p.ngroups), 0);
  std::vector<char> taken(static_cast<std::size_t>(a.g.n), 0);
  for (int t : a.compute) {
    if (a.claimant[t] < 0 || taken[t]) continue;
    const int region = p.group_of[t];
    fixed[region] = 1;
    taken[t] = 1;
    std::vector<char> seen(static_cast<std::size_t>(a.g.n), 0);
    std::vector<int> queue{t};
    seen[t] = 1;
    for (std::size_t qi = 0; qi < queue.size(); ++qi) {
      const int x = queue[qi];
      auto visit = [&](int w) {
        if (seen[w] || !a.is_compute(w)) return;
        seen[w] = 1;
        queue.push_back(w);
        if (taken[w] || a.kind[w] != nkind::pointwise || !can_fuse(a.claimant[t], w)) return;
        const auto succ = group_graph(a, p.group_of, p.ngroups);
        const int gw = p.group_of[w];
        if (reaches_indirectly(succ, region, gw) || reaches_indirectly(succ, gw, region)) return;
        p.group_of[w] = region;
        taken[w] = 1;
      };
      for (int k = 0; k < a.g.nodes[x].nargs; ++k) visit(a.g.operand(x, k));
      for (int k = 0; k < a.num_consumers(x); ++k) visit(a.consumer(x, k));
    }
  }
  return p;
}

constexpr partition fused(const analysis& a, long exact_steps) {
  partition base = unfused(a);
  // The claimed (opaque) singletons stay as they are; everything else merges.
  merger m{a, base.group_of, base.ngroups, std::vector<char>(static_cast<std::size_t>(base.ngroups), 0)};
  merge_edges(m);
  const partition greedy_plan = compact(a, m.group_of);
  merge_siblings(m);
  merge_any(m);
  int ng = m.ngroups;
  std::vector<int> g = m.group_of;
  // Single-node moves cost O(V * (V + E)) per round: worth it on the graphs
  // people write by hand, skipped on very large generated ones.
  if (a.compute.size() <= 160) move_nodes(a, g, ng, 6);
  partition heuristic = compact(a, g);
  // Candidates: the heuristic, the greedy plan, the unfused plan.
  partition best = heuristic;
  double best_cost = cost_of(a, heuristic.group_of).total(a.model);
  for (const partition& p : {greedy_plan, base}) {
    const double c = cost_of(a, p.group_of).total(a.model);
    if (c < best_cost) {
      best_cost = c;
      best = p;
    }
  }
  // Exact search, seeded with the best so far (strictly better plans only).
  exact_search s(a, best.group_of, best_cost, exact_steps);
  s.dfs(0, 0);
  if (s.best != best.group_of) best = compact(a, s.best);
  best.exact = s.complete;
  return best;
}

}  // namespace fusex::detail::planning
