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

template <program_like P, class Exec, class... A>
auto evaluate(P p, Exec exec, const A&... a) {
  const auto in = inputs(a...);
  const auto args = bind_args(p, in);
  const auto env = check_inputs(P::graph, args.data());
  return [&]<class... X>(detail::type_list<X...>) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::tuple<typename detail::host_result<X>::type...> res{
          detail::allocate_result<X>(env, P::graph.outputs[I])...};
      run(p, exec, in, std::apply([](auto&... r) { return outputs(r...); }, res));
      if constexpr (sizeof...(X) == 1) return std::move(std::get<0>(res));
      else return res;
    }(std::index_sequence_for<X...>{});
  }(result_types<P>{});
}

// The same for a plan: evaluate(plan, fusex::host{}, x, dy).
template <class P, class Policy, class Exec, class... A>
auto evaluate(plan<P, Policy> pl, Exec exec, const A&... a) {
  const auto in = inputs(a...);
  const auto args = bind_args(P{}, in);
  const auto env = check_inputs(P::graph, args.data());
  return [&]<class... X>(detail::type_list<X...>) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::tuple<typename detail::host_result<X>::type...> res{
          detail::allocate_result<X>(env, P::graph.outputs[I])...};
      run(pl, exec, in, std::apply([](auto&... r) { return outputs(r...); }, res));
      if constexpr (sizeof...(X) == 1) return std::move(std::get<0>(res));
      else return res;
    }(std::index_sequence_for<X...>{});
  }(result_types<P>{});
}

}  // namespace fusex
