// Property test over random DAGs built at compile time (each a program type):
// the plan's invariants hold (asserted when the plan is made) and the fused
// host execution equals the reference executor's output within f32
// tolerance. This file is compiled several times with different seed blocks.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "../random_graph.hpp"
#include "../support.hpp"
#ifdef FUSEX_MIXED_BLOCK
#include "../../examples/seed/seed_programs.hpp"
#endif

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

namespace fx = fusex;

#ifdef FUSEX_MIXED_BLOCK
int claimed_runs = 0;
template <class P>
constexpr bool has_cat() {
  for (int v = 0; v < P::sizes.nodes; ++v)
    if (P::graph.nodes[v].op == fx::op_kind::cat) return true;
  return false;
}
#endif

template <class T>
constexpr bool is_float = std::is_floating_point_v<T> || std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>;

// Mixed-dtype graphs round to bf16/f16 at the same prims in both executors,
// but an f32 difference of an ulp can flip such a rounding and carry it
// downstream: their float outputs are compared at 16-bit tolerances.
// Integer outputs are exact either way.
template <class T, int R>
void compare(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref, std::uint64_t seed, int out, bool mixed) {
  REQUIRE(got.extents() == ref.extents());
  const fxt::tolerance t = mixed && is_float<T> ? fxt::tolerance{4e-2, 1e-2} : fxt::tol<T>();
  for (fx::index_t i = 0; i < got.size(); ++i) {
    const double g = fxt::to_double(got.values()[i]), e = fxt::to_double(ref.values()[i]);
    INFO("seed " << seed << " output " << out << " element " << i << ": fused " << g << ", reference " << e);
    if constexpr (is_float<T>) REQUIRE(fxt::close(g, e, t));
    else REQUIRE(g == e);
  }
}

template <std::uint64_t Seed, bool Mixed = false>
void check_seed() {
  using P = fxt::random_program<Seed, Mixed ? 40 : (Seed % 4 == 0 ? 16 : 8), Mixed>;
  constexpr auto plan = fx::partition(P{});
  static_assert(plan.invariants_hold());
  // extents: odd, sometimes 1
  const int rows = 1 + static_cast<int>(Seed % 5), cols = 2 + static_cast<int>((Seed / 5) % 7);
  std::mt19937 g(static_cast<unsigned>(Seed));
  std::uniform_real_distribution<float> d(Mixed ? -4.0f : -1.5f, Mixed ? 4.0f : 1.5f);
  std::vector<fx::host_tensor<float, 2>> in;
  for (int p = 0; p < P::sizes.params; ++p) {
    in.emplace_back(fx::extents_array<2>{rows, cols});
    for (auto& v : in.back().values()) v = d(g);
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    const auto ref = fx::evaluate(P{}, fx::reference, in[I]...);
    auto check = [&](const auto& got) {
      if constexpr (P::sizes.outputs == 1) {
        compare(got, ref, Seed, 0, Mixed);
      } else {
        [&]<std::size_t... O>(std::index_sequence<O...>) {
          (compare(std::get<O>(got), std::get<O>(ref), Seed, static_cast<int>(O), Mixed), ...);
        }(std::make_index_sequence<static_cast<std::size_t>(P::sizes.outputs)>{});
      }
    };
    check(fx::evaluate(plan, fx::host{}, in[I]...));
#ifdef FUSEX_MIXED_BLOCK
    // Graphs with a cat also run with a user executor claiming it, under the
    // fused policy (an opaque claim) and Thunder's greedy claim.
    if constexpr (has_cat<P>()) {
      constexpr auto claimed = fx::partition(P{}, fx::policy::fused<seed::cat_executor>{});
      constexpr auto greedy = fx::partition(P{}, fx::policy::greedy_claim<seed::cat_executor>{});
      static_assert(claimed.invariants_hold() && greedy.invariants_hold());
      check(fx::evaluate(claimed, fx::host{}, in[I]...));
      check(fx::evaluate(greedy, fx::host{}, in[I]...));
      ++claimed_runs;
    }
#endif
  }(std::make_index_sequence<static_cast<std::size_t>(P::sizes.params)>{});
}

template <std::uint64_t Base, bool Mixed, std::size_t... K>
void check_block(std::index_sequence<K...>) {
  (check_seed<Base + K, Mixed>(), ...);
}

}  // namespace

#ifndef FUSEX_MIXED_BLOCK
TEST_CASE("random DAGs: fused host execution equals the reference, block " FUSEX_BLOCK_NAME,
          "[property][executor]") {
  constexpr std::uint64_t base = 1000 + FUSEX_SEED_BLOCK * FUSEX_SEEDS_PER_BLOCK;
  check_block<base, false>(std::make_index_sequence<FUSEX_SEEDS_PER_BLOCK>{});
}
#else
// 20 to 40 ops with bf16/f16/f64 conversions, integer paths and where; the
// graphs with a cat also run with it claimed by a user executor.
TEST_CASE("random mixed-dtype DAGs of up to 40 ops: fused host execution equals the reference, block " FUSEX_BLOCK_NAME,
          "[property][executor]") {
  constexpr std::uint64_t base = 5000 + FUSEX_SEED_BLOCK * FUSEX_SEEDS_PER_BLOCK;
  check_block<base, true>(std::make_index_sequence<FUSEX_SEEDS_PER_BLOCK>{});
  INFO(claimed_runs << " of them also ran with a claimed cat");
  CHECK(claimed_runs > 0);
}
#endif
