#pragma once
// fusex::partition: the compile-time plan of a traced program. A plan assigns
// every compute node to exactly one group; each group is one kernel (a fused
// kernel, a matmul through cuBLAS / host BLAS, or a claimed op run by a
// user-registered executor). Sources (arguments, constants, full, iota) are
// read or recomputed by the groups that use them.
//
//   constexpr auto plan = fusex::partition(prog);
//   static_assert(plan.kernels() == 1);
//   static_assert(plan.group_of(node) == plan.group_of(other));

#include <tuple>
#include <type_traits>

#include "../capture/trace.hpp"
#include "search.hpp"

namespace fusex {

enum class group_kind : std::uint8_t { pointwise, row_reduction, column_reduction, matmul, claimed };

constexpr const char* name(group_kind k) {
  switch (k) {
    case group_kind::pointwise: return "pointwise";
    case group_kind::row_reduction: return "row-reduction";
    case group_kind::column_reduction: return "column-reduction";
    case group_kind::matmul: return "matmul";
    case group_kind::claimed: return "claimed";
  }
  return "?";
}

// Executors that claim ops. A claimant is a type with
//   static constexpr const char* name;
//   static constexpr bool claims(const fusex::node&);     // the ops it runs
// and optionally
//   static constexpr bool can_fuse(const fusex::node&);   // what a greedy claim may grow over
// plus run functions for the executors it supports (see exec/).
namespace policy {
// Global, cost-based partition. A claimed elementwise op or remap of a
// claimant with can_fuse heads a region: the region takes the ops around it
// that the claimant can fuse where that lowers the cost. Other claimed ops
// (all of a claimant without can_fuse) take only themselves.
template <class... Claimants>
struct fused {};
// Baseline: each claim grows over every op it can fuse that dataflow reaches
// (Thunder's torchcompile_cat behaviour), the rest merges greedily.
template <class... Claimants>
struct greedy_claim {};
// Baseline: one kernel per prim.
template <class... Claimants>
struct unfused {};
// Any of the above, planned at the typical extents H (extents.hpp).
template <class Policy, extent_hints H>
struct hinted {};
// Variant K of a fused policy, one of the candidates fx::candidates keeps
// (candidates.hpp): planned for smaller or larger runs, for the fewest bytes
// or launches, or the greedy-claim baseline under the same rules.
template <class Policy, int K>
struct candidate {};
}  // namespace policy

namespace detail::planning {
// The variants fx::candidates plans: a launch cost (times the model's),
// a scale of every free extent, and the search.
struct candidate_variant {
  const char* why;
  double launch_scale, extent_scale;
  bool greedy_claim;
};
inline constexpr candidate_variant candidate_variants[] = {
    {"the plan at the modelled extents", 1, 1, false},
    {"the plan for small runs (free extents / 16)", 1, 1.0 / 16, false},
    {"the plan for large runs (free extents x 16)", 1, 16, false},
    {"the fewest bytes (launches free)", 0, 1, false},
    {"the fewest launches", 1073741824.0, 1, false},
    {"the greedy-claim baseline", 1, 1, true},
};
inline constexpr int num_candidate_variants = sizeof(candidate_variants) / sizeof(candidate_variants[0]);
}  // namespace detail::planning

struct plan_group {
  group_kind kind = group_kind::pointwise;
  int executor = -1;  // claimant index for claimed groups and greedy-claimed regions
  int member0 = 0, nmembers = 0;
  int read0 = 0, nreads = 0;    // external values read (tensor arguments and other groups' outputs)
  int write0 = 0, nwrites = 0;  // values written (used by another group or returned)
  int reduction = -1;           // a reduction node defining the group's domain
  double bytes_read = 0, bytes_written = 0;
};

template <graph_sizes S>
struct plan_data {
  int ngroups = 0;
  plan_group groups[detail::at_least_one(S.nodes)] = {};
  std::int32_t group_of[detail::at_least_one(S.nodes)] = {};  // -1 for sources
  std::int32_t members[detail::at_least_one(S.nodes)] = {};
  std::int32_t reads[detail::at_least_one(S.args)] = {};
  std::int32_t writes[detail::at_least_one(S.nodes)] = {};
  double bytes_read = 0, bytes_written = 0, min_bytes = 0, launch_bytes = 0;
  bool exact = false;  // the exact search completed: the plan is optimal under the model
};

namespace detail::planning {

template <class... C>
struct claimant_list {
  static constexpr int size = sizeof...(C);
  template <int I>
  using at = std::tuple_element_t<static_cast<std::size_t>(I), std::tuple<C...>>;
  static constexpr int claimant_of(const node& n) {
    int idx = -1, i = 0;
    ((idx < 0 && C::claims(n) ? (idx = i) : 0, ++i), ...);
    return idx;
  }
  template <class X>
  static constexpr bool can_fuse_one(const node& n) {
    if constexpr (requires { X::can_fuse(n); }) return X::can_fuse(n);
    else return X::claims(n) || category(n.op) == op_category::elementwise || category(n.op) == op_category::remap;
  }
  static constexpr bool can_fuse(int claimant, const node& n) {
    bool r = false;
    int i = 0;
    ((r = r || (i == claimant && can_fuse_one<C>(n)), ++i), ...);
    return r;
  }
  // Under the fused policy a claimant's region holds what its can_fuse
  // accepts (a claimant without can_fuse heads no region: its claims are
  // opaque, each run by its own kernel).
  template <class X>
  static constexpr bool region_can_hold(const node& n) {
    if constexpr (requires { X::can_fuse(n); }) return X::claims(n) || X::can_fuse(n);
    else return false;
  }
  // Does claimant `claimant` say what it can fuse (so its claims can head regions)?
  static constexpr bool has_can_fuse(int claimant) {
    bool r = false;
    int i = 0;
    ((r = r || (i == claimant && requires(const node& n) { C::can_fuse(n); }), ++i), ...);
    return r;
  }
  static constexpr std::uint32_t fusable_mask(const node& n) {
    std::uint32_t m = 0;
    int i = 0;
    ((m |= (region_can_hold<C>(n) ? 1u : 0u) << i, ++i), ...);
    return m;
  }
  static_assert(sizeof...(C) <= 32, "fusex::partition: at most 32 claimants");
  static constexpr const char* name(int claimant) {
    const char* r = "?";
    int i = 0;
    ((r = i == claimant ? C::name : r, ++i), ...);
    return r;
  }
};

// The cost model a variant plans under.
constexpr cost_model variant_model(const cost_model& base, const candidate_variant& v) {
  return {base.launch_bytes * v.launch_scale, base.extent_scale * v.extent_scale};
}

// The fused policy's partition: the global search, or the greedy-claim
// baseline under the same rules (the greedy plan where nothing is claimed).
constexpr partition fused_partition(const analysis& a, bool greedy_claim, long exact_steps, int nclaimants) {
  if (!greedy_claim) return fused(a, exact_steps, nclaimants);
  if (a.has_regions()) return claim_greedy(a, nclaimants);
  const partition unf = unfused(a);
  return greedy(a, unf.group_of, unf.ngroups, std::vector<char>(static_cast<std::size_t>(unf.ngroups), 0));
}

template <class P>
struct policy_traits;
template <class... C>
struct policy_traits<policy::fused<C...>> {
  using claimants = claimant_list<C...>;
  static constexpr int mode = 0;
  static constexpr extent_hints hints{};
  static constexpr cost_model model{};
  static constexpr bool greedy_claim_search = false;
};
template <class... C>
struct policy_traits<policy::greedy_claim<C...>> {
  using claimants = claimant_list<C...>;
  static constexpr int mode = 1;
  static constexpr extent_hints hints{};
  static constexpr cost_model model{};
  static constexpr bool greedy_claim_search = false;
};
template <class... C>
struct policy_traits<policy::unfused<C...>> {
  using claimants = claimant_list<C...>;
  static constexpr int mode = 2;
  static constexpr extent_hints hints{};
  static constexpr cost_model model{};
  static constexpr bool greedy_claim_search = false;
};
template <class Policy, extent_hints H>
struct policy_traits<policy::hinted<Policy, H>> : policy_traits<Policy> {
  static constexpr extent_hints hints = H;
};
template <class Policy, int K>
struct policy_traits<policy::candidate<Policy, K>> : policy_traits<Policy> {
  static_assert(policy_traits<Policy>::mode == 0, "fusex::candidates: give a fused policy (optionally hinted)");
  static_assert(K >= 0 && K < num_candidate_variants, "fusex::candidates: no such variant");
  static constexpr candidate_variant variant = candidate_variants[K];
  static constexpr cost_model model = variant_model(policy_traits<Policy>::model, variant);
  static constexpr bool greedy_claim_search = variant.greedy_claim;
  // variant 0 is the policy's own plan: made once, shared
  using same_plan_as = std::conditional_t<K == 0, Policy, void>;
};

// Which executor claims each node under a policy, as the planner sees it. A
// claimed elementwise op or remap heads a region (so it is not opaque) in
// the greedy-claim baseline, and in the fused policy when its claimant has
// can_fuse; other claimed ops stay opaque, run by the claimant's kernel.
template <graph_sizes S, class Policy>
constexpr std::vector<int> opaque_claims(const graph<S>& gr) {
  using traits = policy_traits<Policy>;
  std::vector<int> claimant(static_cast<std::size_t>(S.nodes), -1);
  for (int v = 0; v < S.nodes; ++v) {
    const op_category c = category(gr.nodes[v].op);
    if (c == op_category::source) continue;
    const int who = traits::claimants::claimant_of(gr.nodes[v]);
    const bool pointwise = c == op_category::elementwise || c == op_category::remap;
    if (pointwise && who >= 0 && (traits::mode == 1 || (traits::mode == 0 && traits::claimants::has_can_fuse(who))))
      continue;
    claimant[v] = who;
  }
  return claimant;
}

// The analysis the planner runs on: opaque claims, the policy's extents and,
// under the fused policy, the claimed regions and what each claimant fuses.
template <graph_sizes S, class Policy>
constexpr analysis planning_analysis(const graph<S>& gr, const cost_model& model) {
  using traits = policy_traits<Policy>;
  using claimants = typename traits::claimants;
  analysis a = analyse(ref(gr), model, opaque_claims<S, Policy>(gr), traits::hints);
  if constexpr (traits::mode == 0 && claimants::size > 0) {
    a.region_claim.assign(static_cast<std::size_t>(S.nodes), -1);
    a.fusable.assign(static_cast<std::size_t>(S.nodes), 0u);
    bool any = false;
    for (int v : a.compute) {
      a.fusable[v] = claimants::fusable_mask(gr.nodes[v]);
      if (a.kind[v] != nkind::opaque) a.region_claim[v] = claimants::claimant_of(gr.nodes[v]);
      any = any || a.region_claim[v] >= 0;
    }
    if (!any) {
      a.region_claim.clear();
      a.fusable.clear();
    }
  }
  return a;
}

// Builds the plan: partition, then groups in topological order with their
// members, reads, writes and modelled bytes.
template <graph_sizes S, class Policy>
constexpr plan_data<S> make_plan(const graph<S>& gr, const cost_model& model, long exact_steps) {
  using traits = policy_traits<Policy>;
  using claimants = typename traits::claimants;
  const graph_ref g = ref(gr);
  const analysis a = planning_analysis<S, Policy>(gr, model);
  // Executor of each node: opaque claims and claim heads.
  std::vector<int> executor(static_cast<std::size_t>(S.nodes), -1);
  for (int v : a.compute) executor[v] = claimants::claimant_of(gr.nodes[v]);

  partition p;
  if constexpr (traits::mode == 0) {
    p = fused_partition(a, traits::greedy_claim_search, exact_steps, claimants::size);
    // A region takes its head's executor.
    std::vector<int> region_exec(static_cast<std::size_t>(p.ngroups), -1);
    for (int v : a.compute)
      if (a.region_of(v) >= 0) region_exec[p.group_of[v]] = a.region_of(v);
    for (int v : a.compute) executor[v] = a.kind[v] == nkind::opaque ? executor[v] : region_exec[p.group_of[v]];
  } else if constexpr (traits::mode == 1) {
    std::vector<char> fixed;
    analysis heads = a;
    heads.claimant = executor;  // grow_claims starts from every claimed node
    auto can_fuse = [&](int c, int v) { return claimants::can_fuse(c, gr.nodes[v]); };
    partition grown = grow_claims(heads, can_fuse, claimants::size, fixed);
    // A region takes its head's executor.
    std::vector<int> region_exec(static_cast<std::size_t>(grown.ngroups), -1);
    for (int v : a.compute)
      if (executor[v] >= 0) region_exec[grown.group_of[v]] = executor[v];
    for (int v : a.compute)
      if (region_exec[grown.group_of[v]] >= 0) executor[v] = region_exec[grown.group_of[v]];
    p = greedy(a, grown.group_of, grown.ngroups, fixed);
  } else {
    p = unfused(a);
  }

  // Topological order of groups (Kahn; ties by first node).
  const auto succ = group_graph(a, p.group_of, p.ngroups);
  std::vector<int> indeg(static_cast<std::size_t>(p.ngroups), 0);
  for (const auto& s : succ)
    for (int x : s) ++indeg[x];
  std::vector<int> order;
  std::vector<char> done(static_cast<std::size_t>(p.ngroups), 0);
  while (static_cast<int>(order.size()) < p.ngroups) {
    int pick = -1;
    for (int x = 0; x < p.ngroups && pick < 0; ++x)
      if (!done[x] && indeg[x] == 0) pick = x;
    if (pick < 0) break;  // a cycle: the invariant check reports it
    done[pick] = 1;
    order.push_back(pick);
    for (int s : succ[pick]) --indeg[s];
  }
  std::vector<int> pos(static_cast<std::size_t>(p.ngroups), 0);
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);

  plan_data<S> out{};
  out.ngroups = static_cast<int>(order.size());
  for (int v = 0; v < S.nodes; ++v) out.group_of[v] = p.group_of[v] >= 0 ? pos[p.group_of[v]] : -1;
  std::vector<int> final_group(out.group_of, out.group_of + S.nodes);
  std::vector<int> read_stamp(static_cast<std::size_t>(S.nodes), -1);
  const buckets bk = bucket_members(a, final_group);
  int nm = 0, nr = 0, nw = 0;
  for (int gi = 0; gi < out.ngroups; ++gi) {
    plan_group& pg = out.groups[gi];
    pg.member0 = nm;
    pg.read0 = nr;
    pg.write0 = nw;
    for (int bi = bk.begin[gi]; bi < bk.begin[gi + 1]; ++bi) {
      const int v = bk.nodes[bi];
      out.members[nm++] = v;
      if (executor[v] >= 0) pg.executor = executor[v];
      if (a.kind[v] == nkind::row_reduce || a.kind[v] == nkind::col_reduce) {
        pg.reduction = v;
        pg.kind = a.kind[v] == nkind::row_reduce ? group_kind::row_reduction : group_kind::column_reduction;
      }
      if (a.kind[v] == nkind::opaque) pg.kind = a.claimant[v] >= 0 ? group_kind::claimed : group_kind::matmul;
    }
    pg.nmembers = nm - pg.member0;
    // A claim alone in its region is run by its claimant's own kernel.
    if (traits::mode == 0 && pg.nmembers == 1 && a.region_of(out.members[pg.member0]) >= 0) pg.kind = group_kind::claimed;
    // reads: distinct tensor arguments and other groups' values
    for (int k = pg.member0; k < nm; ++k) {
      const int v = out.members[k];
      for (int j = 0; j < gr.nodes[v].nargs; ++j) {
        const int u = g.operand(v, j);
        if (!(a.kind[u] == nkind::memory || (a.is_compute(u) && out.group_of[u] != gi))) continue;
        if (read_stamp[u] == gi) continue;
        read_stamp[u] = gi;
        out.reads[nr++] = u;
        pg.bytes_read += a.bytes[u];
      }
    }
    pg.nreads = nr - pg.read0;
    for (int k = pg.member0; k < nm; ++k) {
      const int v = out.members[k];
      bool w = a.is_out[v];
      for (int j = 0; !w && j < a.num_consumers(v); ++j) w = out.group_of[a.consumer(v, j)] != gi;
      if (w) {
        out.writes[nw++] = v;
        pg.bytes_written += a.bytes[v];
      }
    }
    pg.nwrites = nw - pg.write0;
    out.bytes_read += pg.bytes_read;
    out.bytes_written += pg.bytes_written;
  }
  out.min_bytes = minimum_bytes(a);
  out.launch_bytes = model.launch_bytes;
  out.exact = p.exact;
  return out;
}

// The invariants every plan must satisfy; asserted when a plan is made.
template <graph_sizes S>
constexpr bool check_invariants(const graph<S>& gr, const plan_data<S>& p, const analysis& a) {
  const graph_ref g = ref(gr);
  // every compute node in exactly one group, sources in none
  std::vector<int> seen(static_cast<std::size_t>(S.nodes), 0);
  for (int i = 0; i < p.ngroups; ++i)
    for (int k = 0; k < p.groups[i].nmembers; ++k) {
      const int v = p.members[p.groups[i].member0 + k];
      if (p.group_of[v] != i) return false;
      ++seen[v];
    }
  for (int v = 0; v < S.nodes; ++v) {
    if (a.is_compute(v) != (seen[v] == 1)) return false;
    if (!a.is_compute(v) && p.group_of[v] != -1) return false;
  }
  std::vector<int> group_of(p.group_of, p.group_of + S.nodes);
  // valid groups, acyclic contraction, listed in a topological order
  const buckets bk = bucket_members(a, group_of);
  std::vector<char> dep(static_cast<std::size_t>(S.nodes), 0);
  for (int i = 0; i < p.ngroups; ++i) {
    const std::vector<int> m(bk.nodes.begin() + bk.begin[i], bk.nodes.begin() + bk.begin[i + 1]);
    if (!group_is_valid(a, m, group_of, i, dep)) return false;
  }
  if (!is_acyclic(a, group_of, p.ngroups)) return false;
  for (int v : a.compute)
    for (int k = 0; k < gr.nodes[v].nargs; ++k) {
      const int u = g.operand(v, k);
      if (a.is_compute(u) && p.group_of[u] > p.group_of[v]) return false;
    }
  // writes are exactly the values used outside their group or returned
  for (int i = 0; i < p.ngroups; ++i)
    for (int k = 0; k < p.groups[i].nmembers; ++k) {
      const int v = p.members[p.groups[i].member0 + k];
      bool used_outside = a.is_out[v];
      for (int j = 0; j < a.num_consumers(v); ++j) used_outside = used_outside || p.group_of[a.consumer(v, j)] != i;
      bool written = false;
      for (int w = 0; w < p.groups[i].nwrites; ++w) written = written || p.writes[p.groups[i].write0 + w] == v;
      if (written != used_outside) return false;
    }
  return true;
}

}  // namespace detail::planning

template <class P, class Policy>
struct plan;

namespace detail::planning {
// A plan's data: made by its policy, or shared with the plan it equals.
template <class P, class Policy>
constexpr plan_data<P::sizes> planned(const cost_model& model, long exact_steps) {
  if constexpr (requires { typename policy_traits<Policy>::same_plan_as; }) {
    using same = typename policy_traits<Policy>::same_plan_as;
    if constexpr (!std::is_void_v<same>) return plan<P, same>::data;
    else return make_plan<P::sizes, Policy>(P::graph, model, exact_steps);
  } else {
    return make_plan<P::sizes, Policy>(P::graph, model, exact_steps);
  }
}
}  // namespace detail::planning

// A compile-time plan for program P under a policy. Empty: its data is a
// static constexpr member, so a plan can be passed around by value.
template <class P, class Policy>
struct plan {
  using program_type = P;
  using policy_type = Policy;
  using claimants = typename detail::planning::policy_traits<Policy>::claimants;

  static constexpr const auto& graph = P::graph;
  // Exact search is complete on small graphs and step-limited beyond.
  static constexpr long exact_steps = 256;
  // The cost model the plan was made under (the policy's launch cost and extent scale).
  static constexpr cost_model model = detail::planning::policy_traits<Policy>::model;
  static constexpr plan_data<P::sizes> data = detail::planning::planned<P, Policy>(model, exact_steps);

  static constexpr bool invariants_hold() {
    return detail::planning::check_invariants(P::graph, data,
                                              detail::planning::planning_analysis<P::sizes, Policy>(P::graph, model));
  }
  static_assert(invariants_hold(),
                "fusex::partition: plan invariants violated (a node outside exactly one group, an invalid group, "
                "a cycle between groups, or wrong group outputs)");

  constexpr int kernels() const { return data.ngroups; }
  constexpr int groups() const { return data.ngroups; }
  constexpr int group_of(int node) const { return data.group_of[node]; }
  constexpr const plan_group& group(int i) const { return data.groups[i]; }
  constexpr int member(int group, int k) const { return data.members[data.groups[group].member0 + k]; }
  constexpr double bytes() const { return data.bytes_read + data.bytes_written; }
  // The objective: bytes moved plus launches at launch_bytes each.
  constexpr double cost() const { return bytes() + data.ngroups * data.launch_bytes; }
  constexpr double min_bytes() const { return data.min_bytes; }
  constexpr bool bytes_at_minimum() const { return bytes() == data.min_bytes; }
  // The exact search completed: no plan is cheaper under the cost model.
  constexpr bool proven_optimal() const { return data.exact; }
  // The group holding every node that satisfies pred, or -1 if they are split.
  template <class Pred>
  constexpr int common_group(Pred pred) const {
    int gid = -2;
    for (int v = 0; v < P::sizes.nodes; ++v) {
      if (data.group_of[v] < 0 || !pred(P::graph.nodes[v])) continue;
      if (gid == -2) gid = data.group_of[v];
      else if (gid != data.group_of[v]) return -1;
    }
    return gid;
  }
};

template <program_like P, class Policy = policy::fused<>>
consteval plan<P, Policy> partition(P, Policy = {}) {
  return {};
}
// Planned at typical extents: fx::partition(prog, policy, fx::hints<H>).
template <program_like P, class Policy, extent_hints H>
consteval plan<P, policy::hinted<Policy, H>> partition(P, Policy, hints_t<H>) {
  return {};
}

}  // namespace fusex
