// Prints the trace and the plan of the seed's dGeLU, the plan of the
// parallel-residual backward with a claimed cat under the fused and the
// greedy-claim policies, and checks the plan's properties at compile time.
#include <iostream>

#include "seed/seed_programs.hpp"

namespace fx = fusex;

constexpr auto dgelu_plan = fx::partition(seed::dgelu);
static_assert(dgelu_plan.kernels() == 1);          // the seed's region stays whole
static_assert(dgelu_plan.bytes_at_minimum());      // x and dy read once, dx written once

int main() {
  std::cout << seed::dgelu << "\n" << fx::explain(dgelu_plan) << "\n";
  std::cout << fx::explain(fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}))
            << "\n";
  std::cout << fx::explain(fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{}));
  return 0;
}
