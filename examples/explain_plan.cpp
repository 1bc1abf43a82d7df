// Prints the trace and the plan of the seed's dGeLU, then the plans of the
// parallel-residual backward with a claimed cat under the fused and the
// greedy-claim policies, planned at Pythia-6.9b's shapes and at those of
// examples/seed_cases (extent hints: their bytes are the real bytes at those
// shapes), and checks the plans' properties at compile time.
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

int main() {
  std::cout << seed::dgelu << "\n" << fx::explain(dgelu_plan) << "\n";
  residual_plans<seed::pythia_6_9b>("Pythia-6.9b shapes (B 1, T 2048)");
  residual_plans<seed::seed_case_shape>("the seed_cases shapes (B 2, T 64)");
  return 0;
}
