#pragma once
// Index remaps: broadcast_in_dim, reshape, transpose (permute), slice, pad and
// cat. Each output element reads at most one input element, so the planner
// fuses them gather-style: a consumer computes its producer at the remapped
// index instead of reading a materialised tensor.

#include <stdexcept>
#include <utility>

#include "elementwise.hpp"

namespace fusex {

namespace detail {
inline void fusex_error_reshape_more_than_one_inferred_extent() { throw std::logic_error("fusex: reshape more than one inferred extent"); }

template <int... P>
constexpr bool is_permutation() {
  constexpr int n = sizeof...(P);
  const int p[n > 0 ? n : 1] = {P...};
  for (int i = 0; i < n; ++i) {
    if (p[i] < 0 || p[i] >= n) return false;
    for (int j = 0; j < i; ++j)
      if (p[j] == p[i]) return false;
  }
  return true;
}
template <int RO, int... D>
constexpr bool strictly_increasing_in_range() {
  constexpr int n = sizeof...(D);
  const int d[n > 0 ? n : 1] = {D...};
  for (int i = 0; i < n; ++i) {
    if (d[i] < 0 || d[i] >= RO) return false;
    if (i > 0 && d[i] <= d[i - 1]) return false;
  }
  return true;
}
}  // namespace detail

// broadcast_in_dim: input axis j becomes output axis Dims[j]; the other output
// axes are new. An input extent must equal its output extent or be 1.
template <int... Dims, class T, int R, int RO>
constexpr tensor<T, RO> broadcast_in_dim(tensor<T, R> x, const index (&shape)[RO]) {
  static_assert(sizeof...(Dims) == R,
                "fusex::broadcast_in_dim: give one output axis (broadcast dimension) per input axis");
  static_assert(RO >= R && RO <= max_rank, "fusex::broadcast_in_dim: output rank must be >= input rank and <= 8");
  static_assert(detail::strictly_increasing_in_range<RO, Dims...>(),
                "fusex::broadcast_in_dim: broadcast dimensions must be strictly increasing output axes");
  detail::builder& b = *x.b_;
  const int dims[R > 0 ? R : 1] = {Dims...};
  std::int32_t ids[RO > 0 ? RO : 1] = {};
  for (int i = 0; i < RO; ++i) ids[i] = shape[i].id_in(b);
  return {x.b_, detail::broadcast_node(b, x.id_, dims, ids, RO)};
}

// expand: broadcast_in_dim onto the same rank (extents of 1 grow).
template <class T, int R>
constexpr tensor<T, R> expand(tensor<T, R> x, const index (&shape)[R]) {
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return broadcast_in_dim<I...>(x, shape);
  }(std::make_integer_sequence<int, R>{});
}

// unsqueeze: a new axis of extent 1 at Axis.
template <int Axis, class T, int R>
constexpr tensor<T, R + 1> unsqueeze(tensor<T, R> x) {
  static_assert(Axis >= -(R + 1) && Axis <= R, "fusex::unsqueeze: axis out of range");
  constexpr int a = Axis < 0 ? Axis + R + 1 : Axis;
  index shape[R + 1];
  for (int i = 0, j = 0; i < R + 1; ++i) shape[i] = i == a ? index(1) : x.extent(j++);
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return broadcast_in_dim<(I < a ? I : I + 1)...>(x, shape);
  }(std::make_integer_sequence<int, R>{});
}

// reshape: row-major reinterpretation; element counts must agree. One extent
// may be -1 and is inferred.
template <class T, int R, int RO>
constexpr tensor<T, RO> reshape(tensor<T, R> x, const index (&shape)[RO]) {
  static_assert(RO <= max_rank, "fusex::reshape: output rank must be <= 8");
  detail::builder& b = *x.b_;
  std::int32_t ids[RO > 0 ? RO : 1] = {};
  int inferred = -1;
  for (int i = 0; i < RO; ++i) {
    if (shape[i].is_constant() && shape[i].constant_value() == -1) {
      if (inferred >= 0) detail::fusex_error_reshape_more_than_one_inferred_extent();
      inferred = i;
    } else {
      ids[i] = shape[i].id_in(b);
    }
  }
  if (inferred >= 0) {
    // the inferred extent counts the original row-major elements
    std::int32_t src = x.id_;
    if (b.nodes[src].op == op_kind::reshape) src = b.args[b.nodes[src].arg0];
    std::int32_t rest = b.constant(1);
    for (int i = 0; i < RO; ++i)
      if (i != inferred) rest = b.binary(expr_kind::mul, rest, ids[i]);
    ids[inferred] = b.binary(expr_kind::div, detail::numel_expr(b, b.nodes[src]), rest);
  }
  return {x.b_, detail::reshape_node(b, x.id_, ids, RO)};
}

// squeeze: drops Axis, whose extent must be 1.
template <int Axis, class T, int R>
constexpr tensor<T, R - 1> squeeze(tensor<T, R> x) {
  static_assert(R > 0 && Axis >= -R && Axis < R, "fusex::squeeze: axis out of range");
  constexpr int a = Axis < 0 ? Axis + R : Axis;
  index shape[R > 1 ? R - 1 : 1];
  for (int i = 0, j = 0; i < R; ++i)
    if (i != a) shape[j++] = x.extent(i);
  if constexpr (R == 1) {
    return {x.b_, detail::reshape_node(*x.b_, x.id_, nullptr, 0)};
  } else {
    return reshape(x, shape);
  }
}

// permute: output axis i is input axis P[i].
template <int... P, class T, int R>
constexpr tensor<T, R> permute(tensor<T, R> x) {
  static_assert(sizeof...(P) == R, "fusex::permute: give one source axis per axis");
  static_assert(detail::is_permutation<P...>(), "fusex::permute: axes must be a permutation of 0..rank-1");
  const int p[R > 0 ? R : 1] = {P...};
  return {x.b_, detail::permute_node(*x.b_, x.id_, p)};
}

// transpose: swaps axes A and B.
template <int A, int B, class T, int R>
constexpr tensor<T, R> transpose(tensor<T, R> x) {
  static_assert(detail::axis_in_range<R>(A) && detail::axis_in_range<R>(B), "fusex::transpose: axis out of range");
  constexpr int a = detail::normalize_axis<R>(A), c = detail::normalize_axis<R>(B);
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return permute<(I == a ? c : I == c ? a : I)...>(x);
  }(std::make_integer_sequence<int, R>{});
}

// slice: elements start, start+step, ... below stop along Axis.
// Requires 0 <= start <= stop <= extent and step >= 1.
template <int Axis, class T, int R>
constexpr tensor<T, R> slice(tensor<T, R> x, index start, index stop, index step = 1) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::slice: axis out of range");
  constexpr int a = detail::normalize_axis<R>(Axis);
  detail::builder& b = *x.b_;
  const std::int32_t s = start.id_in(b), e = stop.id_in(b), st = step.id_in(b);
  return {x.b_, detail::slice_node(b, x.id_, a, s, e, st)};
}

// pad: `low` and `high` elements of `value` around Axis (both >= 0).
template <int Axis, class T, int R>
constexpr tensor<T, R> pad(tensor<T, R> x, index low, index high, double value = 0.0) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::pad: axis out of range");
  constexpr int a = detail::normalize_axis<R>(Axis);
  detail::builder& b = *x.b_;
  const std::int32_t lo = low.id_in(b), hi = high.id_in(b);
  return {x.b_, detail::pad_node(b, x.id_, a, lo, hi, value)};
}

// cat: joins tensors of one rank along Axis; the other extents must agree.
template <int Axis, class T0, int R0, class... T, int... R>
constexpr auto cat(tensor<T0, R0> x0, tensor<T, R>... xs) {
  static_assert(((R == R0) && ...), "fusex::cat: operands must have the same rank");
  static_assert(R0 > 0 && detail::axis_in_range<R0>(Axis), "fusex::cat: axis out of range");
  constexpr int a = detail::normalize_axis<R0>(Axis);
  constexpr dtype out = [] {
    dtype d = dtype_v<T0>;
    ((d = promote(d, dtype_v<T>)), ...);
    return d;
  }();
  if constexpr (sizeof...(T) == 0) {
    return convert<detail::type_of<out>>(x0);
  } else {
    const std::int32_t ids[1 + sizeof...(T)] = {x0.id_, xs.id_...};
    return tensor<detail::type_of<out>, R0>{
        x0.b_, detail::cat_node(*x0.b_, ids, 1 + static_cast<int>(sizeof...(T)), a, out)};
  }
}

}  // namespace fusex
