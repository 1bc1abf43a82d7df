#pragma once
// fusex::vjp: reverse-mode autodiff of a traced program, at compile time.
//
//   constexpr auto f = fusex::trace([](tensor<bf16, 2> x, tensor<bf16, 1> b, tensor<bf16, 2> w) {
//     return fusex::matmul(fusex::ops::gelu(x + b), w);
//   });
//   constexpr auto g = fusex::vjp(f);
//   // g.forward:  f's arguments -> f's outputs, then the values saved for the backward
//   // g.backward: f's arguments, everything g.forward returned, one cotangent per
//   //             output -> one gradient per floating-point tensor argument
//   auto r = fusex::value_and_grad(g, fusex::host{}, fusex::inputs(x, b, w), fusex::cotangents(dy));
//
// Both are programs like any other: partition them, run them on any
// executor, explain their plans. fusex::vjp<fusex::vjp_options{...}>(f)
// chooses the arguments to differentiate and whether composite ops use
// their hand-derived backward.

#include <array>
#include <string>
#include <tuple>
#include <utility>

#include "../capture/trace.hpp"
#include "../plan/plan.hpp"
#include "../runtime/bind.hpp"
#include "../runtime/evaluate.hpp"
#include "transform.hpp"

namespace fusex {

namespace detail {

template <dtype D, int R, arg_kind K>
struct handle_of {
  using type = tensor<type_of<D>, R>;
};
template <dtype D, int R>
struct handle_of<D, R, arg_kind::scalar> {
  using type = scalar<type_of<D>>;
};
template <dtype D, int R>
struct handle_of<D, R, arg_kind::index> {
  using type = index;
};

// The handle types of a graph's outputs (a std::tuple) and arguments (a type_list).
template <const auto& G, std::size_t... I>
std::tuple<typename handle_of<G.nodes[G.outputs[I]].dt, G.nodes[G.outputs[I]].rank, arg_kind::tensor>::type...>
output_handles(std::index_sequence<I...>);
template <const auto& G, std::size_t... I>
type_list<typename handle_of<G.params[I].dt, G.params[I].rank, G.params[I].kind>::type...> param_handles(
    std::index_sequence<I...>);

}  // namespace detail

// The two programs of a vjp, and what the forward saves for the backward.
template <class P, vjp_options O>
struct vjp_program {
  // Checked here, not in the vjp's constant evaluation: there g++ reports a
  // check that every evaluation fails as "not usable as a constexpr
  // function", without naming it.
  static_assert(P::sizes.params <= 64,
                "fusex::vjp: the program has more than 64 arguments (vjp_options::wrt is a 64-bit mask)");
  static constexpr vjp_options options = O;
  static constexpr detail::vjp_shape shape = detail::vjp_measure(P::graph, O);
  static constexpr int num_saved = shape.nsaved;
  // Composite ops (gelu, layer_norm, ...) differentiated by their hand-derived formula.
  static constexpr int composites_applied = shape.composites;
  static constexpr auto built = detail::vjp_build<shape.sizes, shape.nsaved>(P::graph, O);

  struct forward_program {
    static constexpr graph_sizes sizes = [] {
      graph_sizes s = P::sizes;
      s.outputs += num_saved;
      return s;
    }();
    static constexpr fusex::graph<sizes> graph =
        detail::with_saved_outputs<sizes, P::sizes, num_saved>(P::graph, built.saved);
    using arg_types = typename P::arg_types;
    using result_type =
        decltype(detail::output_handles<graph>(std::make_index_sequence<static_cast<std::size_t>(sizes.outputs)>{}));
  };

  struct backward_program {
    static constexpr graph_sizes sizes = shape.sizes;
    static constexpr fusex::graph<sizes> graph = built.backward;
    using arg_types =
        decltype(detail::param_handles<graph>(std::make_index_sequence<static_cast<std::size_t>(sizes.params)>{}));
    using result_type =
        decltype(detail::output_handles<graph>(std::make_index_sequence<static_cast<std::size_t>(sizes.outputs)>{}));
  };

  static constexpr forward_program forward{};
  static constexpr backward_program backward{};

  // Forward nodes returned for the backward, after the function's outputs.
  static constexpr int saved_node(int k) { return built.saved[k]; }
  static constexpr int num_outputs() { return P::sizes.outputs; }
  static constexpr int num_gradients() { return shape.sizes.outputs; }
};

template <vjp_options O = vjp_options{}, program_like P>
consteval vjp_program<P, O> vjp(P) {
  return {};
}

// ---- running both halves -------------------------------------------------

template <class... C>
struct cotangents_t {
  std::tuple<C...> values;
};
// One cotangent per output of the differentiated function, in its order.
template <class... C>
auto cotangents(const C&... c) {
  return cotangents_t<decltype(detail::input_value(c))...>{{detail::input_value(c)...}};
}

template <class Outputs, class Gradients>
struct vjp_values {
  Outputs outputs;      // the function's outputs (host tensors)
  Gradients gradients;  // one per differentiated argument, in argument order
};

namespace detail {
template <class X>
auto as_tuple(X&& x) {
  if constexpr (requires { std::tuple_size<std::remove_cvref_t<X>>::value; }) return std::forward<X>(x);
  else return std::tuple<std::remove_cvref_t<X>>{std::forward<X>(x)};
}
template <std::size_t Offset, class Tuple, std::size_t... I>
auto take(Tuple&& t, std::index_sequence<I...>) {
  return std::tuple{std::move(std::get<Offset + I>(t))...};
}
}  // namespace detail

// Runs the forward and the backward on host memory with their default
// (fused) plans: the function's outputs and the gradients, in one call.
template <class P, vjp_options O, class Exec, class... A, class... C>
auto value_and_grad(vjp_program<P, O>, Exec exec, const inputs_t<A...>& in, const cotangents_t<C...>& cot) {
  using V = vjp_program<P, O>;
  static_assert(sizeof...(C) == P::sizes.outputs,
                "fusex::value_and_grad: give one cotangent per output of the differentiated function");
  constexpr auto forward_plan = partition(V::forward);
  constexpr auto backward_plan = partition(V::backward);
  auto fwd = detail::as_tuple(std::apply([&](const auto&... a) { return evaluate(forward_plan, exec, a...); }, in.values));
  auto grads = std::apply(
      [&](const auto&... a) {
        return std::apply(
            [&](const auto&... r) {
              return std::apply([&](const auto&... c) { return evaluate(backward_plan, exec, a..., r..., c...); },
                                cot.values);
            },
            fwd);
      },
      in.values);
  auto outs = detail::take<0>(std::move(fwd), std::make_index_sequence<static_cast<std::size_t>(P::sizes.outputs)>{});
  auto g = detail::as_tuple(std::move(grads));
  return vjp_values<decltype(outs), decltype(g)>{std::move(outs), std::move(g)};
}

// What the forward saves for the backward, per value: the op that made it
// (the composite op when one asked for it), its dtype and extents, and its
// bytes for these inputs.
template <class P, vjp_options O, class... A>
std::string explain_saved(vjp_program<P, O>, const inputs_t<A...>& in) {
  using V = vjp_program<P, O>;
  const auto args = bind_args(P{}, in);
  const auto env = check_inputs(P::graph, args.data());
  std::string s = "# saved for the backward (besides the arguments and outputs)\n";
  index_t total = 0;
  for (int k = 0; k < V::num_saved; ++k) {
    const int n = V::saved_node(k);
    const node& nd = P::graph.nodes[n];
    std::string by = name(nd.op);
    for (int r = 0; r < P::sizes.regions; ++r)
      for (int j = 0; j < P::graph.regions[r].nsave; ++j)
        if (P::graph.regions[r].save[j] == n) by = name(P::graph.regions[r].kind);
    const index_t bytes = env.numel(n) * size_of(nd.dt);
    total += bytes;
    s += "t" + std::to_string(n) + " from " + by + ": " + name(nd.dt) + env.dims(n) + " " + std::to_string(bytes) +
         " bytes\n";
  }
  s += "total " + std::to_string(total) + " bytes in " + std::to_string(V::num_saved) + " values\n";
  return s;
}

}  // namespace fusex
