// fx::candidates: the plans the planner keeps (candidates.hpp), the pick at
// run time per extents and per executor's launch cost (choice.hpp,
// launch_cost.hpp), and the refinement rule that drops dominated plans. The
// random-DAG property of the pick is in test_partition_property.cpp.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "random_graph.hpp"
#include "support.hpp"

namespace fx = fusex;
namespace pl = fusex::detail::planning;

namespace {

// A random DAG (found by the property test) whose candidates trade bytes for
// launches: a column reduction that also writes its subtracted input for a
// cat, and a pointwise group that takes the cat first instead. At 1024^2 the
// first moves 28 MiB in 3 launches, the second 24 MiB in 4.
using tradeoff = fxt::random_program<5499, 8>;
constexpr auto tradeoff_plans = fx::candidates(tradeoff{});

template <class C, std::size_t... I>
int cheapest(const auto& in, double launch_bytes, std::index_sequence<I...>) {
  int best = -1;
  double best_cost = 0;
  ((void)[&] {
    const double c = fx::modelled_cost(C::template candidate<static_cast<int>(I)>(), in, launch_bytes);
    if (best < 0 || c < best_cost) {
      best = static_cast<int>(I);
      best_cost = c;
    }
  }(), ...);
  return best;
}

template <class T, int R>
void require_equal_values(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref) {
  REQUIRE(got.extents() == ref.extents());
  for (fx::index_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(fxt::close(fxt::to_double(got.values()[i]), fxt::to_double(ref.values()[i]), fxt::tol<T>()));
  }
}

}  // namespace

TEST_CASE("candidates: the plan at the modelled extents comes first, dominated plans are dropped", "[planner][candidates]") {
  using C = decltype(tradeoff_plans);
  STATIC_REQUIRE(C::size >= 2);
  constexpr auto first = tradeoff_plans.candidate<0>();
  constexpr auto plain = fx::partition(tradeoff{});
  STATIC_REQUIRE(first.kernels() == plain.kernels());
  STATIC_REQUIRE(first.cost() == plain.cost());
  // no kept candidate refines another: each is the cheapest somewhere
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    const std::vector<const std::int32_t*> go{C::template candidate<static_cast<int>(I)>().data.group_of...};
    const std::vector<int> ng{C::template candidate<static_cast<int>(I)>().data.ngroups...};
    for (std::size_t i = 0; i < go.size(); ++i)
      for (std::size_t j = 0; j < go.size(); ++j)
        if (i != j) CHECK_FALSE(pl::refines(go[i], ng[i], go[j], tradeoff::sizes.nodes));
  }(std::make_index_sequence<C::size>{});
  // a program with one sensible plan keeps one
  constexpr auto gelu = fx::trace([](fx::tensor<float, 2> x) { return x * 0.5f * (1.0f + fx::erf(x * 0.70710678f)); });
  STATIC_REQUIRE(decltype(fx::candidates(gelu))::size == 1);
  STATIC_REQUIRE(fx::candidates(gelu).candidate<0>().kernels() == 1);
}

TEST_CASE("candidates: refinement", "[planner][candidates]") {
  // nodes 0 and 1 are sources; 2..5 compute
  const std::int32_t unfused[] = {-1, -1, 0, 1, 2, 3};
  const std::int32_t pairs[] = {-1, -1, 0, 0, 1, 1};
  const std::int32_t crossed[] = {-1, -1, 0, 1, 0, 1};
  const std::int32_t one[] = {-1, -1, 0, 0, 0, 0};
  CHECK(pl::refines(unfused, 4, pairs, 6));
  CHECK(pl::refines(pairs, 2, one, 6));
  CHECK(pl::refines(pairs, 2, pairs, 6));
  CHECK_FALSE(pl::refines(pairs, 2, crossed, 6));
  CHECK_FALSE(pl::refines(one, 1, pairs, 6));
  // of these, only the one-group plan survives; of two equal plans, the first
  const auto keep = pl::undominated({unfused, pairs, crossed, one}, {4, 2, 2, 1}, 6);
  CHECK(keep == std::vector<char>{0, 0, 0, 1});
  const auto twins = pl::undominated({pairs, crossed, pairs}, {2, 2, 2}, 6);
  CHECK(twins == std::vector<char>{1, 1, 0});
}

TEST_CASE("candidates: fx::run picks per run and per executor's launch cost", "[planner][candidates]") {
  using C = decltype(tradeoff_plans);
  STATIC_REQUIRE(fx::launch_costs::host.measured);
  STATIC_REQUIRE(fx::launch_bytes_for<fx::host>() == fx::launch_costs::host.bytes());
  STATIC_REQUIRE(fx::launch_bytes_for<int>() == fx::cost_model{}.launch_bytes);  // an executor with no measured cost
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  int picks[2] = {-1, -1};
  for (int side : {8, 1024}) {
    fx::host_tensor<float, 2> x({side, side});
    for (auto& v : x.values()) v = d(g);
    const auto in = fx::inputs(x);
    const int pick = fx::choose(tradeoff_plans, fx::host{}, in);
    INFO(side << "x" << side << "\n" << fx::explain(tradeoff_plans, fx::host{}, in));
    // the pick is the least modelled cost with the host's measured launch cost
    REQUIRE(pick == cheapest<C>(in, fx::launch_costs::host.bytes(), std::make_index_sequence<C::size>{}));
    REQUIRE(fx::choose(tradeoff_plans, in) == cheapest<C>(in, fx::cost_model{}.launch_bytes, std::make_index_sequence<C::size>{}));
    picks[side == 8 ? 0 : 1] = pick;
    const std::string why = fx::explain(tradeoff_plans, fx::host{}, in);
    CHECK(why.find("measured on this executor") != std::string::npos);
    CHECK(why.find("picked candidate " + std::to_string(pick)) != std::string::npos);
    CHECK(why.find("kept as the plan at the modelled extents") != std::string::npos);
    // values: the picked plan against the reference executor
    const auto ref = fx::evaluate(tradeoff{}, fx::reference, x);
    const auto got = fx::evaluate(tradeoff_plans, fx::host{}, x);
    [&]<std::size_t... O>(std::index_sequence<O...>) {
      (require_equal_values(std::get<O>(got), std::get<O>(ref)), ...);
    }(std::make_index_sequence<tradeoff::sizes.outputs>{});
  }
  // small runs are launch-bound: the fewest launches; large runs on the host
  // (a launch is cheap there) take the plan with fewer bytes
  CHECK(picks[0] == 0);
  CHECK(picks[1] != 0);
  fx::host_tensor<float, 2> big({1024, 1024});
  CHECK(fx::choose(tradeoff_plans, fx::inputs(big)) == 0);  // with the model's 8 MiB launch, fewer launches still win
}
