// Property test over random DAGs built at compile time (each a program type):
// the plan's invariants hold (asserted when the plan is made) and the fused
// host execution equals the reference executor's output within f32
// tolerance. This file is compiled several times with different seed blocks.
#include "random_dag_check.hpp"

#define FUSEX_STR2(x) #x
#define FUSEX_STR(x) FUSEX_STR2(x)
#define FUSEX_BLOCK_NAME FUSEX_STR(FUSEX_SEED_BLOCK)
#ifndef FUSEX_SEED_BLOCK
#define FUSEX_SEED_BLOCK 0
#endif
#ifndef FUSEX_SEEDS_PER_BLOCK
#define FUSEX_SEEDS_PER_BLOCK 50
#endif

namespace {

struct host_runner {
  template <class Plan, class Prog, class... Args>
  auto operator()(Plan plan, Prog, const Args&... args) const {
    return fusex::evaluate(plan, fusex::host{}, args...);
  }
};

}  // namespace

#ifndef FUSEX_MIXED_BLOCK
TEST_CASE("random DAGs: fused host execution equals the reference, block " FUSEX_BLOCK_NAME,
          "[property][executor]") {
  constexpr std::uint64_t base = 1000 + FUSEX_SEED_BLOCK * FUSEX_SEEDS_PER_BLOCK;
  fxt::dag::check_block<base, false, false>(host_runner{}, std::make_index_sequence<FUSEX_SEEDS_PER_BLOCK>{});
}
#else
// 20 to 40 ops with bf16/f16/f64 conversions, integer paths and where; the
// graphs with a cat also run with it claimed by a user executor.
TEST_CASE("random mixed-dtype DAGs of up to 40 ops: fused host execution equals the reference, block " FUSEX_BLOCK_NAME,
          "[property][executor]") {
  constexpr std::uint64_t base = 5000 + FUSEX_SEED_BLOCK * FUSEX_SEEDS_PER_BLOCK;
  const int claimed_runs =
      fxt::dag::check_block<base, true, true>(host_runner{}, std::make_index_sequence<FUSEX_SEEDS_PER_BLOCK>{});
  INFO(claimed_runs << " of them also ran with a claimed cat");
  CHECK(claimed_runs > 0);
}
#endif
