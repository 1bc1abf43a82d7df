// Prints the trace and the plan of the seed's dGeLU, then the plans of the
// parallel-residual backward with a claimed cat under the fused and the
// greedy-claim policies, planned at Pythia-6.9b's shapes and at those of
// examples/seed_cases (extent hints: their bytes are the real bytes at those
// shapes), checks the plans' properties at compile time, and shows the
// candidates the planner keeps and which one runs at each shape.
#include <iostream>

#include "seed/seed_programs.hpp"

namespace fx = fusex;

constexpr auto dgelu_plan = fx::partition(seed::dgelu);
static_assert(dgelu_plan.kernels() == 1);          // the seed's region stays whole
static_assert(dgelu_plan.bytes_at_minimum());      // x and dy read once, dx written once

template <seed::residual_shape S>
void residual_plans(const char* shape) {
  constexpr auto h = fx::hints<seed::residual_hints(S)>;
  constexpr auto fused = fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, h);
  constexpr auto greedy = fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{}, h);
  static_assert(fused.cost() <= greedy.cost());  // the default is never worse than the greedy claim
  std::cout << "## parallel-residual backward at " << shape << ", fused policy (default)\n" << fx::explain(fused)
            << "\n## parallel-residual backward at " << shape << ", greedy claim (Thunder's torchcompile_cat)\n"
            << fx::explain(greedy) << "\n";
}

// Arguments of parallel_residual_backward at shape S: views of those extents
// over one small buffer (explain and choose only read their extents).
template <seed::residual_shape S>
auto residual_views() {
  using bf = fx::bf16;
  constexpr long N = S.B * S.T, Cqkv = (S.n_head + 2 * S.groups) * S.hs;
  alignas(64) static const bf nothing[64] = {};
  auto v2 = [&](long a, long b) { return fx::view<const bf, 2>(nothing, {a, b}); };
  auto v4 = [&](long a, long b, long c, long d) { return fx::view<const bf, 4>(nothing, {a, b, c, d}); };
  return fx::inputs(v2(N, S.C), v2(N, S.I), v2(S.C, S.I), v2(S.I, S.C), v4(S.B, S.n_head, S.T, S.hs),
                    v4(S.B, S.groups, S.T, S.hs), v4(S.B, S.groups, S.T, S.hs), v2(S.T, S.n_elem), v2(S.T, S.n_elem),
                    v2(Cqkv, S.C), static_cast<int>(S.n_head), static_cast<int>(S.groups), static_cast<int>(S.hs),
                    static_cast<int>(S.n_elem));
}

int main() {
  std::cout << seed::dgelu << "\n" << fx::explain(dgelu_plan) << "\n";
  residual_plans<seed::pythia_6_9b>("Pythia-6.9b shapes (B 1, T 2048)");
  residual_plans<seed::seed_case_shape>("the seed_cases shapes (B 2, T 64)");
  // The plans the planner keeps for Pythia-6.9b's hints, compiled ahead; at
  // run time the cheapest for the arguments' extents on the executor runs.
  constexpr auto pythia = fx::hints<seed::residual_hints(seed::pythia_6_9b)>;
  constexpr auto plans = fx::candidates(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, pythia);
  static_assert(plans.candidate<0>().cost() ==
                fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, pythia).cost());
  std::cout << "## the candidates kept for Pythia-6.9b's hints, for arguments at Pythia-6.9b shapes, on the host\n"
            << fx::explain(plans, fx::host{}, residual_views<seed::pythia_6_9b>())
            << "\n## the same for arguments at the seed_cases shapes, on the host\n"
            << fx::explain(plans, fx::host{}, residual_views<seed::seed_case_shape>())
            << "\n## the same at the seed_cases shapes, at the cost model's launch cost\n"
            << fx::explain(plans, residual_views<seed::seed_case_shape>());
  return 0;
}
