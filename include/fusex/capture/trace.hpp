#pragma once
// fusex::trace: runs a function over symbolic handles while the C++ compiles
// and returns a program whose graph is a constexpr value.
//
//   constexpr auto prog = fusex::trace([](fusex::tensor<fusex::bf16, 2> x) { ... });
//
// The function's parameters declare the program's arguments, in order:
// tensor<T, R> (device or host memory), scalar<T> (a run-time number) and
// index (a run-time integer usable in extents and slice bounds). It returns
// one tensor or a std::tuple of tensors.

#include <tuple>
#include <type_traits>
#include <utility>

#include "builder.hpp"
#include "extents.hpp"
#include "index.hpp"
#include "tensor.hpp"

namespace fusex {

namespace detail {

template <class... A>
struct type_list {
  static constexpr int size = sizeof...(A);
  template <std::size_t I>
  using at = std::tuple_element_t<I, std::tuple<A...>>;
};

template <class M>
struct fn_traits {
  static constexpr bool valid = false;
};
template <class C, class Ret, class... A>
struct fn_traits<Ret (C::*)(A...) const> {
  static constexpr bool valid = true;
  using result = Ret;
  using args = type_list<std::remove_cvref_t<A>...>;
};
template <class C, class Ret, class... A>
struct fn_traits<Ret (C::*)(A...)> : fn_traits<Ret (C::*)(A...) const> {};

template <class F, class = void>
struct call_traits {
  static constexpr bool valid = false;
};
template <class F>
struct call_traits<F, std::void_t<decltype(&F::operator())>> : fn_traits<decltype(&F::operator())> {};

template <class A>
struct arg_traits {
  static constexpr bool valid = false;
};
template <class T, int R>
struct arg_traits<tensor<T, R>> {
  static constexpr bool valid = true;
  static constexpr arg_kind kind = arg_kind::tensor;
};
template <class T>
struct arg_traits<scalar<T>> {
  static constexpr bool valid = true;
  static constexpr arg_kind kind = arg_kind::scalar;
};
template <>
struct arg_traits<index> {
  static constexpr bool valid = true;
  static constexpr arg_kind kind = arg_kind::index;
};

// Axes a fixed extent may name: a tensor argument's.
template <class A>
constexpr int rank_of() {
  if constexpr (arg_traits<A>::kind == arg_kind::tensor) return A::rank;
  else return 0;
}

inline void fusex_error_fixed_extent_names_no_argument_axis() {
  throw argument_error("fusex::fixed_extents: an entry names no tensor axis or index argument of the trace");
}

// The value fixed for axis `axis` of argument `pos` (-1: an index's value), or -1.
constexpr std::int64_t fixed_value(const extent_hints& fixed, int pos, int axis) {
  for (int i = 0; i < fixed.count; ++i)
    if (fixed.hint[i].arg == pos && fixed.hint[i].axis == axis) return fixed.hint[i].value;
  return -1;
}

template <class A>
constexpr A make_arg(builder& b, int pos, const extent_hints& fixed) {
  if constexpr (std::is_same_v<A, index>) {
    const std::int64_t v = fixed_value(fixed, pos, -1);
    const std::int32_t e = v >= 0 ? b.constant(v) : b.push_expr({expr_kind::param, -1, -1, pos});
    b.params.push_back({arg_kind::index, dtype::i64, 0, -1, v});
    return index(&b, e);
  } else {
    node nd;
    nd.dt = A::dt;
    nd.rank = A::rank;
    nd.slot = pos;
    nd.op = arg_traits<A>::kind == arg_kind::scalar ? op_kind::scalar_param : op_kind::input;
    // a fixed axis is a constant of the trace; check_inputs holds the argument to it
    for (int i = 0; i < A::rank; ++i) {
      const std::int64_t v = fixed_value(fixed, pos, i);
      nd.shape[i] = v >= 0 ? b.constant(v) : b.push_expr({expr_kind::extent, pos, i, 0});
    }
    const std::int32_t id = b.add(nd, nullptr, 0);
    b.params.push_back({arg_traits<A>::kind, A::dt, static_cast<std::int8_t>(A::rank), id});
    A a{};
    a.b_ = &b;
    a.id_ = id;
    return a;
  }
}

template <class R>
struct result_traits {
  static constexpr bool valid = false;
};
template <class T, int R>
struct result_traits<tensor<T, R>> {
  static constexpr bool valid = true;
  static constexpr void collect(builder& b, const tensor<T, R>& t) { b.outputs.push_back(t.id_); }
};
template <class T>
struct result_traits<scalar<T>> : result_traits<tensor<T, 0>> {};
template <class... X>
struct result_traits<std::tuple<X...>> {
  static constexpr bool valid = sizeof...(X) > 0 && (result_traits<std::remove_cvref_t<X>>::valid && ...);
  static constexpr void collect(builder& b, const std::tuple<X...>& t) {
    std::apply([&](const auto&... x) { (b.outputs.push_back(x.id_), ...); }, t);
  }
};

template <class F, class... A, std::size_t... I>
constexpr void record_impl(builder& b, type_list<A...>, std::index_sequence<I...>, const extent_hints& fixed) {
  for (int k = 0; k < fixed.count; ++k) {  // every fixed entry names an axis of a tensor or an index argument
    bool found = false;
    int pos = 0;
    ((found = found || (pos == fixed.hint[k].arg &&
                        (std::is_same_v<A, index> ? fixed.hint[k].axis == -1
                                                  : fixed.hint[k].axis >= 0 && fixed.hint[k].axis < rank_of<A>())),
      ++pos),
     ...);
    if (!found) fusex_error_fixed_extent_names_no_argument_axis();
  }
  std::tuple<A...> args{make_arg<A>(b, static_cast<int>(I), fixed)...};  // braces: left-to-right
  auto result = std::apply(F{}, args);
  result_traits<decltype(result)>::collect(b, result);
}

template <class F, extent_hints Fixed>
constexpr void record(builder& b) {
  using args = typename call_traits<F>::args;
  [&]<class... A>(type_list<A...> l) {
    record_impl<F>(b, l, std::index_sequence_for<A...>{}, Fixed);
  }(args{});
}

template <class F, extent_hints Fixed>
constexpr graph_sizes measure() {
  builder b;
  record<F, Fixed>(b);
  b.prune();
  return b.sizes();
}

template <class F, graph_sizes S, extent_hints Fixed>
constexpr graph<S> build() {
  builder b;
  record<F, Fixed>(b);
  b.prune();
  return b.template freeze<S>();
}

template <class L>
struct args_valid;
template <class... A>
struct args_valid<type_list<A...>> {
  static constexpr bool value = (arg_traits<A>::valid && ...);
};

template <class F>
constexpr bool check_traceable() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "fusex::trace: the traced function must not capture anything (pass run-time values as "
                "fusex::scalar or fusex::index parameters)");
  static_assert(call_traits<F>::valid,
                "fusex::trace: the traced function must be a non-generic lambda or function object "
                "(declare parameter types: fusex::tensor<T, R>, fusex::scalar<T> or fusex::index)");
  if constexpr (call_traits<F>::valid) {
    static_assert(args_valid<typename call_traits<F>::args>::value,
                  "fusex::trace: every parameter must be fusex::tensor<T, R>, fusex::scalar<T> or fusex::index");
    static_assert(result_traits<std::remove_cvref_t<typename call_traits<F>::result>>::valid,
                  "fusex::trace: the traced function must return a fusex::tensor or a std::tuple of them");
  }
  return true;
}

}  // namespace detail

// A traced program. Empty: everything lives in the type, so it can be copied
// into any constexpr context and its graph read at compile time. `Fixed`:
// extents the trace takes as constants (fusex::fixed_extents).
template <class F, extent_hints Fixed = extent_hints{}>
struct program {
  static_assert(detail::check_traceable<F>());
  using function_type = F;
  using arg_types = typename detail::call_traits<F>::args;
  using result_type = std::remove_cvref_t<typename detail::call_traits<F>::result>;
  static constexpr extent_hints fixed = Fixed;

  static constexpr graph_sizes sizes = detail::measure<F, Fixed>();
  static constexpr fusex::graph<sizes> graph = detail::build<F, sizes, Fixed>();

  constexpr int num_nodes() const { return sizes.nodes; }
  constexpr int num_outputs() const { return sizes.outputs; }
  constexpr int num_params() const { return sizes.params; }
};

template <class F>
consteval program<F> trace(F) {
  return {};
}

// Extents known when the program is written (hidden size, head size, head
// counts, rotary dims): fusex::trace(f, fusex::fixed_extents<E>) makes them
// constants of the trace, so planning counts exact bytes, kernels fold them,
// and a run with other extents is an error naming the argument and axis.
template <extent_hints E>
struct fixed_extents_t {};
template <extent_hints E>
inline constexpr fixed_extents_t<E> fixed_extents{};

template <class F, extent_hints E>
consteval program<F, E> trace(F, fixed_extents_t<E>) {
  return {};
}

// Anything with a graph, its sizes, and the argument and result handle types
// of a traced function can be planned and run: fusex::program, or a graph
// built another way (tests generate random ones).
template <class P>
concept program_like = requires {
  P::graph;
  P::sizes;
  typename P::arg_types;
  typename P::result_type;
};

template <class P>
struct is_program : std::false_type {};
template <class F>
struct is_program<program<F>> : std::true_type {};

}  // namespace fusex
