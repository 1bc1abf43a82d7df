#pragma once
// A choice among plans compiled ahead: each candidate is a plan of the same
// program, instantiated at compile time; fx::run picks, for the actual
// extents, the candidate the cost model finds cheapest (bytes at those
// extents plus launches at the executor's measured launch cost,
// launch_cost.hpp), with no JIT and no warm-up. fx::candidates
// (candidates.hpp) makes the choice the planner keeps; fx::choice takes
// plans the user lists.
//
//   constexpr auto plans = fx::choice(fx::partition(prog, fx::policy::fused<>{}, fx::hints<small>),
//                                     fx::partition(prog, fx::policy::fused<>{}, fx::hints<large>));
//   static_assert(plans.candidate<1>().kernels() <= 4);
//   fx::run(plans, fx::host{}, fx::inputs(x, w), fx::outputs(y));   // the cheaper at x's extents
//   std::cout << fx::explain(plans, fx::inputs(x, w));               // which, and why
//
// Candidates whose partitions are equal are instantiated once.

#include <string>
#include <tuple>
#include <utility>

#include "explain.hpp"
#include "launch_cost.hpp"

namespace fusex {

template <class... Plans>
struct plan_choice {
  static_assert(sizeof...(Plans) >= 1, "fusex::choice: give at least one plan");
  using first = std::tuple_element_t<0, std::tuple<Plans...>>;
  using program_type = typename first::program_type;
  static_assert((std::is_same_v<typename Plans::program_type, program_type> && ...),
                "fusex::choice: every candidate must be a plan of the same program");
  static constexpr int size = sizeof...(Plans);

  template <int I>
  static constexpr auto candidate() {
    return std::tuple_element_t<static_cast<std::size_t>(I), std::tuple<Plans...>>{};
  }
  // The first candidate with the same partition as candidate I.
  template <int I>
  static constexpr int canonical() {
    return first_same<I>(std::make_index_sequence<sizeof...(Plans)>{});
  }

 private:
  template <int I, std::size_t... J>
  static constexpr int first_same(std::index_sequence<J...>) {
    using PI = decltype(candidate<I>());
    int r = I;
    ((r = r == I && static_cast<int>(J) < I && same_partition<decltype(candidate<static_cast<int>(J)>()), PI>()
              ? static_cast<int>(J)
              : r),
     ...);
    return r;
  }
  template <class A, class B>
  static constexpr bool same_partition() {
    if (A::data.ngroups != B::data.ngroups) return false;
    for (int v = 0; v < program_type::sizes.nodes; ++v)
      if (A::data.group_of[v] != B::data.group_of[v]) return false;
    for (int g = 0; g < A::data.ngroups; ++g)
      if (A::data.groups[g].executor != B::data.groups[g].executor || A::data.groups[g].kind != B::data.groups[g].kind)
        return false;
    return true;
  }
};

template <class... P, class... Policy>
consteval plan_choice<plan<P, Policy>...> choice(plan<P, Policy>...) {
  return {};
}

// The launch cost, in bytes, that the choice weighs on an executor: its
// measured value (launch_cost.hpp), else the cost model's.
template <class Exec>
constexpr double launch_bytes_for() {
  if constexpr (requires { Exec::launch; })
    return Exec::launch.measured ? Exec::launch.bytes() : cost_model{}.launch_bytes;
  else
    return cost_model{}.launch_bytes;
}

// Modelled cost of a plan for these arguments: bytes at their extents plus
// launches at `launch_bytes` each (by default the cost model's).
template <class P, class Policy, class... A>
double modelled_cost(plan<P, Policy> pl, const inputs_t<A...>& in, double launch_bytes = cost_model{}.launch_bytes) {
  const traffic t = modelled_traffic(pl, in);
  return t.bytes + t.launches * launch_bytes;
}

namespace detail {
// (function templates per index, not lambdas inside pack expansions: nvcc's
// front end cannot expand a pack through a nested lambda)
template <class C, class In>
void choose_from(const In&, double, int&, double&, std::index_sequence<>) {}
template <class C, class In, std::size_t I, std::size_t... Rest>
void choose_from(const In& in, double launch_bytes, int& best, double& best_cost, std::index_sequence<I, Rest...>) {
  const double c = modelled_cost(C::template candidate<static_cast<int>(I)>(), in, launch_bytes);
  if (best < 0 || c < best_cost) {
    best = static_cast<int>(I);
    best_cost = c;
  }
  choose_from<C>(in, launch_bytes, best, best_cost, std::index_sequence<Rest...>{});
}

// Why the planner kept a candidate of fx::candidates; empty for listed plans.
template <class Policy>
constexpr const char* candidate_reason() {
  if constexpr (requires { planning::policy_traits<Policy>::variant; }) return planning::policy_traits<Policy>::variant.why;
  else return "";
}

template <class C, class In>
void explain_candidates(const In&, double, int, std::string&, std::index_sequence<>) {}
template <class C, class In, std::size_t I, std::size_t... Rest>
void explain_candidates(const In& in, double launch_bytes, int pick, std::string& s, std::index_sequence<I, Rest...>) {
  constexpr auto p = C::template candidate<static_cast<int>(I)>();
  constexpr int canon = C::template canonical<static_cast<int>(I)>();
  const std::string why = candidate_reason<typename decltype(p)::policy_type>();
  const traffic t = modelled_traffic(p, in);
  s += std::string(static_cast<int>(I) == pick ? "* " : "  ") + "candidate " + std::to_string(I) + ": " +
       std::to_string(t.launches) + (t.launches == 1 ? " kernel, " : " kernels, ") + format_bytes(t.bytes) +
       " at these extents, cost " + format_bytes(t.bytes + t.launches * launch_bytes) +
       (canon != static_cast<int>(I) ? " (same plan as candidate " + std::to_string(canon) + ")" : "") +
       (why.empty() ? "" : "; kept as " + why) + "\n";
  explain_candidates<C>(in, launch_bytes, pick, s, std::index_sequence<Rest...>{});
}

template <class C, std::size_t... I>
constexpr int canonical_of(int pick, std::index_sequence<I...>) {
  int canon = pick;
  ((canon = static_cast<int>(I) == pick ? C::template canonical<static_cast<int>(I)>() : canon), ...);
  return canon;
}

template <class C, class Exec, class In, class Out>
void run_candidate(int, Exec, const In&, const Out&, std::index_sequence<>) {}
template <class C, class Exec, class In, class Out, std::size_t I, std::size_t... Rest>
void run_candidate(int pick, Exec exec, const In& in, const Out& out, std::index_sequence<I, Rest...>) {
  if constexpr (C::template canonical<static_cast<int>(I)>() == static_cast<int>(I)) {
    if (static_cast<int>(I) == pick) {
      run(C::template candidate<static_cast<int>(I)>(), exec, in, out);
      return;
    }
  }
  run_candidate<C>(pick, exec, in, out, std::index_sequence<Rest...>{});
}
}  // namespace detail

namespace detail {
template <class... Plans, class... A>
int choose_at(const inputs_t<A...>& in, double launch_bytes) {
  int best = -1;
  double best_cost = 0;
  choose_from<plan_choice<Plans...>>(in, launch_bytes, best, best_cost, std::index_sequence_for<Plans...>{});
  return best;
}
}  // namespace detail

// The candidate fx::run uses for these arguments on executor exec: the
// cheapest under the cost model at their extents with exec's launch cost,
// the first on a tie.
template <class... Plans, class Exec, class... A>
int choose(plan_choice<Plans...>, const Exec&, const inputs_t<A...>& in) {
  return detail::choose_at<Plans...>(in, launch_bytes_for<Exec>());
}
// The same with the cost model's launch cost (no executor named).
template <class... Plans, class... A>
int choose(plan_choice<Plans...>, const inputs_t<A...>& in) {
  return detail::choose_at<Plans...>(in, cost_model{}.launch_bytes);
}

template <class... Plans, class Exec, class... A, class... O>
void run(plan_choice<Plans...> c, Exec exec, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  using C = plan_choice<Plans...>;
  // a duplicate runs its canonical twin, instantiated once
  const int canon = detail::canonical_of<C>(choose(c, exec, in), std::index_sequence_for<Plans...>{});
  detail::run_candidate<C>(canon, exec, in, out, std::index_sequence_for<Plans...>{});
}

template <class... Plans, class Exec, class... A>
auto evaluate(plan_choice<Plans...> c, Exec exec, const A&... a) {
  return detail::evaluate_into_new<typename plan_choice<Plans...>::program_type>(c, exec, a...);
}

namespace detail {
template <class... Plans, class... A>
std::string explain_choice(const inputs_t<A...>& in, double launch_bytes, const std::string& where) {
  using C = plan_choice<Plans...>;
  const int pick = choose_at<Plans...>(in, launch_bytes);
  std::string s = "# fusex plan choice: " + std::to_string(C::size) + " candidates compiled ahead; a launch costs " +
                  format_bytes(launch_bytes) + " (" + where + ")\n";
  explain_candidates<C>(in, launch_bytes, pick, s, std::index_sequence_for<Plans...>{});
  s += "picked candidate " + std::to_string(pick) +
       ": the least modelled cost (bytes + launches x launch cost) at these extents\n";
  return s;
}
}  // namespace detail

// Which candidate runs for these arguments on executor exec, and why: each
// candidate's kernels, bytes and cost at their extents.
template <class... Plans, class Exec, class... A>
std::string explain(plan_choice<Plans...>, const Exec&, const inputs_t<A...>& in) {
  constexpr bool measured = requires { Exec::launch; } && launch_bytes_for<Exec>() != cost_model{}.launch_bytes;
  return detail::explain_choice<Plans...>(in, launch_bytes_for<Exec>(),
                                          measured ? "measured on this executor" : "the cost model's");
}
// The same with the cost model's launch cost.
template <class... Plans, class... A>
std::string explain(plan_choice<Plans...>, const inputs_t<A...>& in) {
  return detail::explain_choice<Plans...>(in, cost_model{}.launch_bytes, "the cost model's");
}

}  // namespace fusex
