#pragma once
// fx::candidates: the plans the planner itself keeps for a program, compiled
// ahead, from which fx::run picks the cheapest at the actual extents and on
// the executor it runs on (choice.hpp).
//
//   constexpr auto plans = fx::candidates(prog, fx::policy::fused<>{}, fx::hints<typical>);
//   static_assert(plans.candidate<0>().kernels() <= 4);     // the plan at the modelled extents
//   fx::run(plans, fx::host{}, fx::inputs(x, w), fx::outputs(y));
//
// The planner plans the program several ways (plan.hpp, candidate_variants):
// at the modelled extents, for small and for large runs (every free extent
// / 16 and x 16), for the fewest bytes, for the fewest launches, and the
// greedy-claim baseline under the same rules. It keeps those that no other
// dominates. Plan B dominates plan A at every extent and launch cost when A
// refines B (each group of A lies inside one of B): a merged group reads at
// most what its parts read, less what they passed each other, writes at most
// what they wrote, and launches once. So the unfused plan, which refines
// every plan, is never kept, and whatever is picked at run time costs no more
// than the unfused plan or the greedy-claim baseline at those extents.

#include <cstdint>
#include <utility>
#include <vector>

#include "choice.hpp"

namespace fusex {

namespace detail::planning {

// Does `fine` refine `coarse` (every group of fine inside one group of coarse)?
constexpr bool refines(const std::int32_t* fine, int nfine, const std::int32_t* coarse, int nnodes) {
  std::vector<int> into(static_cast<std::size_t>(nfine > 0 ? nfine : 1), -1);
  for (int v = 0; v < nnodes; ++v) {
    if (fine[v] < 0) continue;
    int& to = into[static_cast<std::size_t>(fine[v])];
    if (to < 0) to = coarse[v];
    else if (to != coarse[v]) return false;
  }
  return true;
}

// Which of these partitions to keep: drop one that refines another (of
// equal partitions, the first stays).
constexpr std::vector<char> undominated(const std::vector<const std::int32_t*>& group_of, const std::vector<int>& ngroups,
                                        int nnodes) {
  const int k = static_cast<int>(group_of.size());
  std::vector<char> keep(static_cast<std::size_t>(k), 1);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k && keep[i]; ++j) {
      if (j == i || !refines(group_of[i], ngroups[i], group_of[j], nnodes)) continue;
      const bool equal = refines(group_of[j], ngroups[j], group_of[i], nnodes);
      if (!equal || j < i) keep[i] = 0;
    }
  return keep;
}

struct kept_variants {
  int count = 0;
  int index[num_candidate_variants] = {};
};

template <class P, class Policy, std::size_t... K>
constexpr kept_variants keep_variants(std::index_sequence<K...>) {
  const std::vector<const std::int32_t*> group_of{plan<P, policy::candidate<Policy, static_cast<int>(K)>>::data.group_of...};
  const std::vector<int> ngroups{plan<P, policy::candidate<Policy, static_cast<int>(K)>>::data.ngroups...};
  const std::vector<char> keep = undominated(group_of, ngroups, P::sizes.nodes);
  kept_variants r;
  for (int i = 0; i < static_cast<int>(keep.size()); ++i)
    if (keep[i]) r.index[r.count++] = i;
  return r;
}

template <class P, class Policy>
struct candidate_set {
  static constexpr kept_variants kept = keep_variants<P, Policy>(std::make_index_sequence<num_candidate_variants>{});
  template <std::size_t... I>
  static constexpr auto choice_of(std::index_sequence<I...>) {
    return plan_choice<plan<P, policy::candidate<Policy, kept.index[I]>>...>{};
  }
  using type = decltype(choice_of(std::make_index_sequence<static_cast<std::size_t>(kept.count)>{}));
};

}  // namespace detail::planning

// The candidates the planner keeps for prog under a fused policy, as a
// choice: fx::run, fx::evaluate, fx::choose and fx::explain take it.
template <program_like P, class Policy = policy::fused<>>
consteval auto candidates(P, Policy = {}) {
  return typename detail::planning::candidate_set<P, Policy>::type{};
}
template <program_like P, class Policy, extent_hints H>
consteval auto candidates(P, Policy, hints_t<H>) {
  return typename detail::planning::candidate_set<P, policy::hinted<Policy, H>>::type{};
}

}  // namespace fusex
