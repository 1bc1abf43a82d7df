#pragma once
// evaluate: run a program on host memory and get owning results back,
// for executors that write host memory (reference, host).
//
//   auto dx = fusex::evaluate(prog, fusex::reference, x, dy);   // host_tensor
//   auto [y, mean] = fusex::evaluate(prog2, fusex::reference, x, w, 1e-5f);

#include <tuple>

#include "../plan/plan.hpp"
#include "bind.hpp"
#include "view.hpp"

namespace fusex {

namespace detail {
template <class X>
struct host_result;
template <class T, int R>
struct host_result<tensor<T, R>> {
  using type = host_tensor<T, R>;
};

template <class X, graph_sizes S>
typename host_result<X>::type allocate_result(const shape_env<S>& env, int node) {
  extents_array<X::rank> e{};
  for (int i = 0; i < X::rank; ++i) e[i] = env.extent(node, i);
  return typename host_result<X>::type(e);
}
}  // namespace detail

namespace detail {
// Runs `runnable` (a program or a plan of P) into freshly allocated host
// outputs and returns them.
template <class P, class Runnable, class Exec, class... A>
auto evaluate_into_new(Runnable runnable, Exec exec, const A&... a) {
  const auto in = inputs(a...);
  const auto args = bind_args(P{}, in);
  const auto env = check_inputs(P::graph, args.data());
  return [&]<class... X>(type_list<X...>) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::tuple<typename host_result<X>::type...> res{allocate_result<X>(env, P::graph.outputs[I])...};
      run(runnable, exec, in, std::apply([](auto&... r) { return outputs(r...); }, res));
      if constexpr (sizeof...(X) == 1) return std::move(std::get<0>(res));
      else return res;
    }(std::index_sequence_for<X...>{});
  }(result_types<P>{});
}
}  // namespace detail

template <program_like P, class Exec, class... A>
auto evaluate(P p, Exec exec, const A&... a) {
  return detail::evaluate_into_new<P>(p, exec, a...);
}

// The same for a plan: evaluate(plan, fusex::host{}, x, dy).
template <class P, class Policy, class Exec, class... A>
auto evaluate(plan<P, Policy> pl, Exec exec, const A&... a) {
  return detail::evaluate_into_new<P>(pl, exec, a...);
}

}  // namespace fusex
