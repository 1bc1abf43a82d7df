// Property tests of the planner over random DAGs (run-time planning; the
// planning functions are the same constexpr functions the compiler runs):
//  - every plan satisfies the invariants (each compute node in exactly one
//    valid group, acyclic contraction);
//  - on small graphs the fused plan costs exactly the optimum found by an
//    independent exhaustive search;
//  - the fused plan is never worse than the greedy or unfused plans, nor,
//    where claims head regions, than the greedy-claim plan;
//  - graphs are planned at default and at random hinted extents;
//  - of the candidates the planner keeps (fx::candidates), the one picked at
//    random actual extents and launch costs is never worse than the
//    greedy-claim or unfused plan there, nor than any candidate it dropped.
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "random_graph.hpp"

namespace fx = fusex;
namespace pl = fusex::detail::planning;

namespace {

struct runtime_graph {
  fx::detail::builder b;
  std::vector<std::int32_t> eclass;
  pl::graph_ref ref() const {
    return {b.nodes.data(), static_cast<int>(b.nodes.size()), b.args.data(), b.exprs.data(), eclass.data(),
            b.outputs.data(), static_cast<int>(b.outputs.size()), static_cast<int>(b.exprs.size())};
  }
};

runtime_graph make(std::uint64_t seed, fxt::gen_options opt) {
  runtime_graph g;
  fxt::generate(g.b, seed, opt);
  for (std::size_t e = 0; e < g.b.exprs.size(); ++e) g.eclass.push_back(g.b.find(static_cast<int>(e)));
  return g;
}

// Independent cost of a partition: reads + writes + launches (test's own code).
double oracle_cost(const pl::analysis& a, const std::vector<int>& group_of) {
  const auto& g = a.g;
  std::map<int, std::vector<int>> groups;
  for (int v : a.compute) groups[group_of[v]].push_back(v);
  double c = 0;
  for (auto& [gid, mem] : groups) {
    c += a.model.launch_bytes;
    std::vector<int> reads;
    for (int v : mem)
      for (int k = 0; k < g.nodes[v].nargs; ++k) {
        const int u = g.operand(v, k);
        const bool ext = a.kind[u] == pl::nkind::memory || (a.is_compute(u) && group_of[u] != gid);
        if (ext && std::find(reads.begin(), reads.end(), u) == reads.end()) reads.push_back(u);
      }
    for (int u : reads) c += a.bytes[u];
    for (int v : mem) {
      bool out = a.is_out[v];
      for (int w = 0; w < g.n; ++w)
        for (int k = 0; k < g.nodes[w].nargs; ++k)
          if (g.operand(w, k) == v && group_of[w] != gid) out = true;
      if (out) c += a.bytes[v];
    }
  }
  return c;
}

bool plan_ok(const pl::analysis& a, const std::vector<int>& group_of, int ngroups) {
  for (int v = 0; v < a.g.n; ++v)
    if (a.is_compute(v) != (group_of[v] >= 0 && group_of[v] < ngroups)) return false;
  for (int gid = 0; gid < ngroups; ++gid) {
    const auto m = pl::members_of(a, group_of, gid);
    if (m.empty() || !pl::group_is_valid(a, m, group_of, gid)) return false;
  }
  return pl::is_acyclic(a, group_of, ngroups);
}

// Exhaustive search over set partitions (restricted growth strings).
double exhaustive_optimum(const pl::analysis& a) {
  const int n = static_cast<int>(a.compute.size());
  std::vector<int> rgs(n, 0), group_of(a.g.n, -1);
  double best = 1e300;
  // iterate restricted growth strings
  std::vector<int> maxprefix(n, 0);
  while (true) {
    int ng = 0;
    for (int i = 0; i < n; ++i) {
      group_of[a.compute[i]] = rgs[i];
      ng = std::max(ng, rgs[i] + 1);
    }
    if (plan_ok(a, group_of, ng)) best = std::min(best, oracle_cost(a, group_of));
    // next RGS
    int i = n - 1;
    while (i > 0) {
      int m = 0;
      for (int j = 0; j < i; ++j) m = std::max(m, rgs[j]);
      if (rgs[i] <= m) {
        ++rgs[i];
        for (int j = i + 1; j < n; ++j) rgs[j] = 0;
        break;
      }
      --i;
    }
    if (i == 0) break;
  }
  return best;
}

// Random hints: some axes of some arguments get a typical extent.
fx::extent_hints random_hints(const runtime_graph& rg, fxt::rng64& r) {
  fx::extent_hints h;
  constexpr std::int64_t values[] = {1, 3, 64, 1000, 4096};
  for (const fx::expr& e : rg.b.exprs)
    if (e.kind == fx::expr_kind::extent && r.below(2) == 0 && h.count < fx::extent_hints::capacity)
      h = h.extent(e.a, e.b, values[r.below(5)]);
  return h;
}

// Every tensor extent at a random value: the extents of one run.
fx::extent_hints random_run(const runtime_graph& rg, fxt::rng64& r) {
  fx::extent_hints h;
  constexpr std::int64_t values[] = {1, 2, 7, 64, 333, 1000, 5000};
  for (const fx::expr& e : rg.b.exprs)
    if (e.kind == fx::expr_kind::extent && h.count < fx::extent_hints::capacity)
      h = h.extent(e.a, e.b, values[r.below(7)]);
  return h;
}

// A claimant of every cat that can fuse a random set of op kinds around it:
// the fused policy's regions (plan.hpp's planning_analysis, by hand).
void add_region_claims(pl::analysis& a, fxt::rng64& r) {
  const std::uint64_t kinds = r.next();
  a.region_claim.assign(static_cast<std::size_t>(a.g.n), -1);
  a.fusable.assign(static_cast<std::size_t>(a.g.n), 0u);
  bool any = false;
  for (int v : a.compute) {
    const fx::op_kind op = a.g.nodes[v].op;
    const bool pointwise = a.kind[v] == pl::nkind::pointwise;
    if (op == fx::op_kind::cat && pointwise) a.region_claim[v] = 0;
    if (op == fx::op_kind::cat || (pointwise && ((kinds >> (static_cast<int>(op) % 64)) & 1u))) a.fusable[v] = 1u;
    any = any || a.region_claim[v] >= 0;
  }
  if (!any) {
    a.region_claim.clear();
    a.fusable.clear();
  }
}

}  // namespace

TEST_CASE("planner properties over random DAGs", "[property][planner]") {
  int small = 0, exact_checked = 0, with_regions = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    fxt::gen_options opt;
    const bool tiny = seed % 3 != 0;
    opt.max_ops = tiny ? 8 : 24;
    auto rg = make(seed, opt);
    fxt::rng64 r{seed * 7919};
    std::vector<int> claims(rg.b.nodes.size(), -1);
    if (seed % 5 == 0)  // a user executor claims every cat, each an opaque singleton
      for (std::size_t v = 0; v < rg.b.nodes.size(); ++v)
        if (rg.b.nodes[v].op == fx::op_kind::cat) claims[v] = 0;
    // every other graph planned at random extents
    const fx::extent_hints hints = seed % 2 == 0 ? random_hints(rg, r) : fx::extent_hints{};
    pl::analysis a = pl::analyse(rg.ref(), fx::cost_model{}, claims, hints);
    if (seed % 5 == 1 || seed % 5 == 2) add_region_claims(a, r);  // claims that may grow regions
    INFO("seed " << seed << ", " << a.compute.size() << " compute nodes, " << hints.count << " hints, "
                 << (a.has_regions() ? "regions" : "no regions"));

    const pl::partition fused = pl::fused(a, 256, 1);
    const pl::partition unf = pl::unfused(a);
    const pl::partition gr = pl::greedy(a, unf.group_of, unf.ngroups, std::vector<char>(unf.ngroups, 0));
    REQUIRE(plan_ok(a, fused.group_of, fused.ngroups));
    REQUIRE(plan_ok(a, unf.group_of, unf.ngroups));
    REQUIRE(plan_ok(a, gr.group_of, gr.ngroups));

    const double cf = oracle_cost(a, fused.group_of);
    REQUIRE(cf == pl::cost_of(a, fused.group_of).total(a.model));
    REQUIRE(cf <= oracle_cost(a, unf.group_of));
    REQUIRE(cf <= oracle_cost(a, gr.group_of));
    if (a.has_regions()) {  // never worse than the greedy claim (Thunder's rule) under the same model
      ++with_regions;
      const pl::partition cg = pl::claim_greedy(a, 1);
      REQUIRE(plan_ok(a, cg.group_of, cg.ngroups));
      REQUIRE(cf <= oracle_cost(a, cg.group_of));
    }

    // "small": every graph of up to 12 nodes, and any with up to 10 compute nodes
    if (a.g.n <= 12 || a.compute.size() <= 10) {
      ++small;
      const double opt_cost = exhaustive_optimum(a);
      REQUIRE(cf == opt_cost);
      ++exact_checked;
    }
  }
  CHECK(exact_checked >= 300);
  CHECK(with_regions >= 20);
  WARN("planner property: 600 graphs; " << exact_checked << " compared with exhaustive search (" << small
                                         << " of up to 12 nodes or 10 compute nodes); " << with_regions
                                         << " with claimed regions");
}

// fx::candidates by hand at run time: each variant planned under its own
// cost model, the undominated ones kept (candidates.hpp), then picked at the
// extents of a run with an executor's launch cost, as fx::run does.
TEST_CASE("candidate plans: the run-time pick is never worse than the baselines", "[property][planner]") {
  int graphs = 0, runs = 0, several = 0, switched = 0;
  int kept_count[pl::num_candidate_variants] = {};
  int picked[pl::num_candidate_variants] = {};
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    fxt::gen_options opt;
    opt.max_ops = seed % 3 != 0 ? 8 : 24;
    auto rg = make(seed + 5000, opt);
    fxt::rng64 r{seed * 104729};
    std::vector<int> claims(rg.b.nodes.size(), -1);
    if (seed % 5 == 0)
      for (std::size_t v = 0; v < rg.b.nodes.size(); ++v)
        if (rg.b.nodes[v].op == fx::op_kind::cat) claims[v] = 0;
    const fx::extent_hints hints = seed % 2 == 0 ? random_hints(rg, r) : fx::extent_hints{};
    pl::analysis base = pl::analyse(rg.ref(), fx::cost_model{}, claims, hints);
    if (seed % 5 == 1 || seed % 5 == 2) add_region_claims(base, r);
    auto with_regions = [&](pl::analysis a) {
      a.region_claim = base.region_claim;
      a.fusable = base.fusable;
      return a;
    };
    INFO("seed " << seed + 5000 << ", " << base.compute.size() << " compute nodes, "
                 << (base.has_regions() ? "regions" : "no regions"));
    ++graphs;

    std::vector<pl::partition> variant;
    std::vector<const std::int32_t*> group_of;
    std::vector<int> ngroups;
    for (const pl::candidate_variant& cv : pl::candidate_variants) {
      const pl::analysis a = with_regions(pl::analyse(rg.ref(), pl::variant_model(fx::cost_model{}, cv), claims, hints));
      variant.push_back(pl::fused_partition(a, cv.greedy_claim, 256, 1));
      REQUIRE(plan_ok(a, variant.back().group_of, variant.back().ngroups));
    }
    for (const pl::partition& p : variant) {
      group_of.push_back(p.group_of.data());
      ngroups.push_back(p.ngroups);
    }
    const std::vector<char> keep = pl::undominated(group_of, ngroups, rg.ref().n);
    REQUIRE(keep[0] + keep[1] + keep[2] + keep[3] + keep[4] + keep[5] >= 1);
    const int kept = std::count(keep.begin(), keep.end(), 1);
    several += kept > 1;
    for (int k = 0; k < pl::num_candidate_variants; ++k) kept_count[k] += keep[k];
    const pl::partition unf = pl::unfused(base);
    const int greedy_claim = pl::num_candidate_variants - 1;

    int first_pick = -1;
    for (int run = 0; run < 8; ++run) {
      const fx::extent_hints actual = random_run(rg, r);
      const double launch = run % 2 == 0 ? fx::launch_costs::host.bytes() : fx::cost_model{}.launch_bytes;
      const pl::analysis a = with_regions(pl::analyse(rg.ref(), fx::cost_model{launch}, claims, actual));
      int pick = -1;
      double best = 0;
      for (int k = 0; k < pl::num_candidate_variants; ++k) {
        if (!keep[k]) continue;
        const double c = oracle_cost(a, variant[k].group_of);
        if (pick < 0 || c < best) {
          pick = k;
          best = c;
        }
      }
      ++runs;
      ++picked[pick];
      if (first_pick < 0) first_pick = pick;
      switched += pick != first_pick;
      REQUIRE(best <= oracle_cost(a, unf.group_of));
      REQUIRE(best <= oracle_cost(a, variant[greedy_claim].group_of));
      for (int k = 0; k < pl::num_candidate_variants; ++k) {  // a dropped variant costs no less anywhere
        INFO("variant " << k << " (" << pl::candidate_variants[k].why << ")");
        REQUIRE(best <= oracle_cost(a, variant[k].group_of));
      }
    }
  }
  CHECK(several >= 50);
  CHECK(switched > 0);            // some graphs' best plan depends on the run
  CHECK(picked[0] < runs);        // and the other candidates are picked
  WARN("candidate plans: " << graphs << " graphs, " << runs << " runs at random extents; " << several
                           << " graphs kept more than one candidate; the pick changed with the run " << switched
                           << " times; kept " << kept_count[0] << "/" << kept_count[1] << "/" << kept_count[2] << "/"
                           << kept_count[3] << "/" << kept_count[4] << "/" << kept_count[5] << ", picked " << picked[0]
                           << "/" << picked[1] << "/" << picked[2] << "/" << picked[3] << "/" << picked[4] << "/"
                           << picked[5]);
}
