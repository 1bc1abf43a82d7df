#pragma once
// One random DAG (tests/random_graph.hpp) run through an executor and
// compared with the reference executor: shared by the host property test
// (exec_property.cpp) and the CUDA one (tests/cuda/test_cuda_property.cu).
//
// A runner is a callable run(plan, prog, args...) returning the outputs on
// the host, shaped like fx::evaluate's. Plain function templates over index
// sequences throughout: nvcc's front end does not expand packs through
// nested generic lambdas.
#include <catch2/catch.hpp>

#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "../random_graph.hpp"
#include "../support.hpp"
#include "../../examples/seed/seed_programs.hpp"

namespace fxt::dag {

namespace fx = fusex;

template <class T>
constexpr bool is_float = std::is_floating_point_v<T> || std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>;

// Mixed-dtype graphs round to bf16/f16 at the same prims in every executor,
// but an f32 difference of an ulp can flip such a rounding and carry it
// downstream: their float outputs are compared at 16-bit tolerances.
// Integer outputs are exact either way.
template <class T, int R>
void compare(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref, std::uint64_t seed, int out, bool mixed,
             const char* what) {
  REQUIRE(got.extents() == ref.extents());
  const fxt::tolerance t = mixed && is_float<T> ? fxt::tolerance{4e-2, 1e-2} : fxt::tol<T>();
  for (fx::index_t i = 0; i < got.size(); ++i) {
    const double g = fxt::to_double(got.values()[i]), e = fxt::to_double(ref.values()[i]);
    INFO("seed " << seed << " (" << what << ") output " << out << " element " << i << ": got " << g << ", reference " << e);
    if constexpr (is_float<T>) REQUIRE(fxt::close(g, e, t));
    else REQUIRE(g == e);
  }
}

template <class Got, class Ref, std::size_t... O>
void compare_all(const Got& got, const Ref& ref, std::uint64_t seed, bool mixed, const char* what, std::index_sequence<O...>) {
  (compare(std::get<O>(got), std::get<O>(ref), seed, static_cast<int>(O), mixed, what), ...);
}
template <class Got, class Ref>
void compare_outputs(const Got& got, const Ref& ref, std::uint64_t seed, bool mixed, const char* what) {
  if constexpr (requires { got.values(); }) compare(got, ref, seed, 0, mixed, what);
  else compare_all(got, ref, seed, mixed, what, std::make_index_sequence<std::tuple_size_v<Got>>{});
}

template <class P>
constexpr bool has_cat() {
  for (int v = 0; v < P::sizes.nodes; ++v)
    if (P::graph.nodes[v].op == fx::op_kind::cat) return true;
  return false;
}

// The f32 graphs: 8 ops, 16 for every fourth seed; the mixed ones 20-40.
template <std::uint64_t Seed, bool Mixed>
using program_of = fxt::random_program<Seed, Mixed ? 40 : (Seed % 4 == 0 ? 16 : 8), Mixed>;

// Inputs of seed Seed: (rows, cols) with odd extents, sometimes 1.
template <std::uint64_t Seed, bool Mixed>
std::vector<fx::host_tensor<float, 2>> inputs_of() {
  using P = program_of<Seed, Mixed>;
  const int rows = 1 + static_cast<int>(Seed % 5), cols = 2 + static_cast<int>((Seed / 5) % 7);
  std::mt19937 g(static_cast<unsigned>(Seed));
  std::uniform_real_distribution<float> d(Mixed ? -4.0f : -1.5f, Mixed ? 4.0f : 1.5f);
  std::vector<fx::host_tensor<float, 2>> in;
  for (int p = 0; p < P::sizes.params; ++p) {
    in.emplace_back(fx::extents_array<2>{rows, cols});
    for (auto& v : in.back().values()) v = d(g);
  }
  return in;
}

// Runs seed Seed's plan through `run` and compares it with the reference;
// graphs with a cat also run with a user executor claiming it, under the
// fused policy (a region or an opaque claim) and Thunder's greedy claim.
// Returns whether the claimed plans ran.
template <std::uint64_t Seed, bool Mixed, bool Claims, class Runner, std::size_t... I>
bool check_seed_with(const Runner& run, const std::vector<fx::host_tensor<float, 2>>& in, std::index_sequence<I...>) {
  using P = program_of<Seed, Mixed>;
  constexpr auto plan = fx::partition(P{});
  static_assert(plan.invariants_hold());
  const auto ref = fx::evaluate(P{}, fx::reference, in[I]...);
  compare_outputs(run(plan, P{}, in[I]...), ref, Seed, Mixed, "fused");
  if constexpr (Claims && has_cat<P>()) {
    constexpr auto claimed = fx::partition(P{}, fx::policy::fused<seed::cat_executor>{});
    constexpr auto greedy = fx::partition(P{}, fx::policy::greedy_claim<seed::cat_executor>{});
    static_assert(claimed.invariants_hold() && greedy.invariants_hold());
    compare_outputs(run(claimed, P{}, in[I]...), ref, Seed, Mixed, "cat claimed, fused policy");
    compare_outputs(run(greedy, P{}, in[I]...), ref, Seed, Mixed, "cat claimed, greedy claim");
    return true;
  }
  return false;
}
template <std::uint64_t Seed, bool Mixed, bool Claims, class Runner>
bool check_seed(const Runner& run) {
  using P = program_of<Seed, Mixed>;
  return check_seed_with<Seed, Mixed, Claims>(run, inputs_of<Seed, Mixed>(),
                                             std::make_index_sequence<static_cast<std::size_t>(P::sizes.params)>{});
}

// Seeds Base + K; returns how many also ran with a claimed cat.
template <std::uint64_t Base, bool Mixed, bool Claims, class Runner, std::size_t... K>
int check_block(const Runner& run, std::index_sequence<K...>) {
  return (0 + ... + static_cast<int>(check_seed<Base + K, Mixed, Claims>(run)));
}

}  // namespace fxt::dag
