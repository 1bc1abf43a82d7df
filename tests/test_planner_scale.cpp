// A 500-node random graph planned at compile time (the bound: under
// 10 s of g++ on a 2-core machine; bench/planner_compile_time.sh measures it).
// The invariants are asserted when the plan is made.
#include <catch2/catch.hpp>

#include "random_graph.hpp"

namespace {
namespace fx = fusex;

constexpr fxt::gen_options big() {
  fxt::gen_options o;
  o.min_ops = 500;
  o.max_ops = 500;
  return o;
}
struct big_program {
  static constexpr fx::graph_sizes sizes = [] {
    fx::detail::builder b;
    fxt::generate(b, 1, big());
    return b.sizes();
  }();
  static constexpr fx::graph<sizes> graph = [] {
    fx::detail::builder b;
    fxt::generate(b, 1, big());
    return b.template freeze<sizes>();
  }();
  using arg_types = fx::detail::type_list<>;
  using result_type = std::tuple<>;
};
static_assert(big_program::sizes.nodes >= 500);

#if !defined(FUSEX_SCALE_BASELINE)
constexpr auto plan = fx::partition(big_program{});
static_assert(plan.invariants_hold());
#endif
}  // namespace

TEST_CASE("a 500-node graph plans at compile time", "[planner][scale]") {
#if !defined(FUSEX_SCALE_BASELINE)
  CHECK(plan.kernels() > 0);
  CHECK(plan.kernels() < big_program::sizes.nodes / 2);
  WARN("500-node plan: " << big_program::sizes.nodes << " nodes in " << plan.kernels() << " kernels");
#endif
}
