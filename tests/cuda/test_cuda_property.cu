// The random DAGs of the host property test (tests/property) on the CUDA
// executor: each plan runs on a stream, its outputs come back and are
// compared with the reference executor. f32 graphs of 8-16 ops, and
// mixed-dtype graphs of 20-40 ops (bf16/f16/f64 conversions, integer paths,
// where) whose cats also run claimed by a user executor (its CUDA kernel)
// under the fused and greedy-claim policies.
#include "../property/random_dag_check.hpp"
#include "device_support.hpp"

namespace {

struct cuda_runner {
  template <class Plan, class Prog, class... Args>
  auto operator()(Plan plan, Prog prog, const Args&... args) const {
    fxt::cuda::stream_guard s;
    return fxt::cuda::run_on_device(plan, prog, s, fusex::cuda_stream{}, args...);
  }
};

}  // namespace

TEST_CASE("cuda: random f32 DAGs equal the reference", "[cuda][property]") {
  fxt::dag::check_block<1000, false, false>(cuda_runner{}, std::make_index_sequence<16>{});
}

TEST_CASE("cuda: random mixed-dtype DAGs of up to 40 ops, cats also claimed, equal the reference", "[cuda][property]") {
  const int claimed_runs = fxt::dag::check_block<5000, true, true>(cuda_runner{}, std::make_index_sequence<4>{});
  INFO(claimed_runs << " of them also ran with a claimed cat");
  CHECK(claimed_runs > 0);
}
