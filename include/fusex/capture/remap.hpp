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
inline void fusex_error_slice_bounds_out_of_range() { throw std::logic_error("fusex: slice bounds out of range"); }
inline void fusex_error_pad_width_negative() { throw std::logic_error("fusex: pad width negative"); }
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
constexpr std::int32_t numel_expr(builder& b, const node& n) {
  std::int32_t e = b.constant(1);
  for (int i = 0; i < n.rank; ++i) e = b.binary(expr_kind::mul, e, n.shape[i]);
  return e;
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
  node nd;
  nd.op = op_kind::broadcast_in_dim;
  nd.dt = x.dt;
  nd.rank = RO;
  const int dims[R > 0 ? R : 1] = {Dims...};
  for (int j = 0; j < R; ++j) nd.map[j] = static_cast<std::int8_t>(dims[j]);
  for (int i = 0; i < RO; ++i) nd.shape[i] = shape[i].id_in(b);
  bool identity = RO == R;
  for (int j = 0; j < R; ++j) {
    const std::int32_t in = b.nodes[x.id_].shape[j], out = nd.shape[dims[j]];
    identity = identity && in == out;
    if (b.is_const(in) && b.is_const(out) && !b.is_const(in, 1)) b.unify(in, out);
  }
  if (identity) return {x.b_, x.id_};
  const std::int32_t ids[1] = {x.id_};
  return {x.b_, b.add(nd, ids, 1)};
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
  // A reshape of a reshape reads the original row-major order directly.
  if (b.nodes[x.id_].op == op_kind::reshape) x.id_ = b.args[b.nodes[x.id_].arg0];
  node nd;
  nd.op = op_kind::reshape;
  nd.dt = x.dt;
  nd.rank = RO;
  int inferred = -1;
  for (int i = 0; i < RO; ++i) {
    if (shape[i].is_constant() && shape[i].constant_value() == -1) {
      if (inferred >= 0) detail::fusex_error_reshape_more_than_one_inferred_extent();
      inferred = i;
    } else {
      nd.shape[i] = shape[i].id_in(b);
    }
  }
  const std::int32_t in_count = detail::numel_expr(b, b.nodes[x.id_]);
  if (inferred >= 0) {
    std::int32_t rest = b.constant(1);
    for (int i = 0; i < RO; ++i)
      if (i != inferred) rest = b.binary(expr_kind::mul, rest, nd.shape[i]);
    nd.shape[inferred] = b.binary(expr_kind::div, in_count, rest);
  }
  const std::int32_t out_count = detail::numel_expr(b, nd);
  if (b.is_const(in_count) && b.is_const(out_count) && b.exprs[in_count].value != b.exprs[out_count].value)
    detail::fusex_error_reshape_element_count_differs();
  bool identity = RO == R;
  for (int i = 0; identity && i < RO; ++i) identity = nd.shape[i] == b.nodes[x.id_].shape[i];
  if (identity) return {x.b_, x.id_};
  const std::int32_t ids[1] = {x.id_};
  return {x.b_, b.add(nd, ids, 1)};
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
    detail::builder& b = *x.b_;
    node nd;
    nd.op = op_kind::reshape;
    nd.dt = x.dt;
    nd.rank = 0;
    const std::int32_t ids[1] = {x.id_};
    return {x.b_, b.add(nd, ids, 1)};
  } else {
    return reshape(x, shape);
  }
}

// permute: output axis i is input axis P[i].
template <int... P, class T, int R>
constexpr tensor<T, R> permute(tensor<T, R> x) {
  static_assert(sizeof...(P) == R, "fusex::permute: give one source axis per axis");
  static_assert(detail::is_permutation<P...>(), "fusex::permute: axes must be a permutation of 0..rank-1");
  detail::builder& b = *x.b_;
  const int p[R > 0 ? R : 1] = {P...};
  bool identity = true;
  node nd;
  nd.op = op_kind::permute;
  nd.dt = x.dt;
  nd.rank = R;
  for (int i = 0; i < R; ++i) {
    nd.map[i] = static_cast<std::int8_t>(p[i]);
    nd.shape[i] = b.nodes[x.id_].shape[p[i]];
    identity = identity && p[i] == i;
  }
  if (identity) return x;
  const std::int32_t ids[1] = {x.id_};
  return {x.b_, b.add(nd, ids, 1)};
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
  node nd = b.nodes[x.id_];
  const std::int32_t s = start.id_in(b), e = stop.id_in(b), st = step.id_in(b), ext = nd.shape[a];
  if ((b.is_const(s) && b.exprs[s].value < 0) || (b.is_const(st) && b.exprs[st].value < 1) ||
      (b.is_const(s) && b.is_const(e) && b.exprs[e].value < b.exprs[s].value) ||
      (b.is_const(e) && b.is_const(ext) && b.exprs[e].value > b.exprs[ext].value))
    detail::fusex_error_slice_bounds_out_of_range();
  if (s == b.constant(0) && e == ext && b.is_const(st, 1)) return x;
  nd = node{};
  nd.op = op_kind::slice;
  nd.dt = x.dt;
  nd.rank = R;
  nd.axis = a;
  for (int i = 0; i < R; ++i) nd.shape[i] = b.nodes[x.id_].shape[i];
  const std::int32_t span = b.binary(expr_kind::sub, e, s);
  nd.shape[a] = b.is_const(st, 1)
                    ? span
                    : b.binary(expr_kind::div, b.binary(expr_kind::sub, b.binary(expr_kind::add, span, st), b.constant(1)), st);
  nd.iparam[0] = s;
  nd.iparam[1] = e;
  nd.iparam[2] = st;
  const std::int32_t ids[1] = {x.id_};
  return {x.b_, b.add(nd, ids, 1)};
}

// pad: `low` and `high` elements of `value` around Axis (both >= 0).
template <int Axis, class T, int R>
constexpr tensor<T, R> pad(tensor<T, R> x, index low, index high, double value = 0.0) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::pad: axis out of range");
  constexpr int a = detail::normalize_axis<R>(Axis);
  detail::builder& b = *x.b_;
  const std::int32_t lo = low.id_in(b), hi = high.id_in(b);
  if ((b.is_const(lo) && b.exprs[lo].value < 0) || (b.is_const(hi) && b.exprs[hi].value < 0))
    detail::fusex_error_pad_width_negative();
  if (b.is_const(lo, 0) && b.is_const(hi, 0)) return x;
  node nd;
  nd.op = op_kind::pad;
  nd.dt = x.dt;
  nd.rank = R;
  nd.axis = a;
  nd.value = value;
  for (int i = 0; i < R; ++i) nd.shape[i] = b.nodes[x.id_].shape[i];
  nd.shape[a] = b.binary(expr_kind::add, b.binary(expr_kind::add, lo, nd.shape[a]), hi);
  nd.iparam[0] = lo;
  nd.iparam[1] = hi;
  const std::int32_t ids[1] = {x.id_};
  return {x.b_, b.add(nd, ids, 1)};
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
    detail::builder& b = *x0.b_;
    const std::int32_t ids[1 + sizeof...(T)] = {x0.id_, xs.id_...};
    node nd;
    nd.op = op_kind::cat;
    nd.dt = out;
    nd.rank = R0;
    nd.axis = a;
    for (int i = 0; i < R0; ++i) nd.shape[i] = b.nodes[ids[0]].shape[i];
    for (std::size_t k = 1; k < 1 + sizeof...(T); ++k) {
      const node& xk = b.nodes[ids[k]];
      for (int i = 0; i < R0; ++i)
        if (i != a) b.unify(nd.shape[i], xk.shape[i]);
      nd.shape[a] = b.binary(expr_kind::add, nd.shape[a], xk.shape[a]);
    }
    return tensor<detail::type_of<out>, R0>{x0.b_, b.add(nd, ids, 1 + static_cast<int>(sizeof...(T)))};
  }
}

}  // namespace fusex
