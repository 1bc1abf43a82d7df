#pragma once
// Tensors made inside the trace: full and iota. Their extents come from the
// given indices; at least one must be a run-time index (or use the *_like
// forms), since that is how the source finds the trace it belongs to.

#include <stdexcept>
#include "elementwise.hpp"

namespace fusex {

namespace detail {
inline void fusex_error_full_needs_a_runtime_extent_or_full_like() { throw std::logic_error("fusex: full needs a runtime extent or full like"); }

template <int R>
constexpr builder* builder_of(const index (&shape)[R]) {
  for (int i = 0; i < R; ++i)
    if (shape[i].builder_()) return shape[i].builder_();
  return nullptr;
}

template <class T, int R>
constexpr tensor<T, R> full_node(builder& b, const index (&shape)[R], double value) {
  std::int32_t ids[R > 0 ? R : 1] = {};
  for (int i = 0; i < R; ++i) ids[i] = shape[i].id_in(b);
  return {&b, full_node(b, dtype_v<T>, R, ids, value)};
}
}  // namespace detail

// A tensor of the given extents, every element `value`.
template <class T, int R>
constexpr tensor<T, R> full(const index (&shape)[R], double value) {
  static_assert(is_element_type_v<T>, "fusex::full: unsupported element type");
  detail::builder* b = detail::builder_of(shape);
  if (b == nullptr) detail::fusex_error_full_needs_a_runtime_extent_or_full_like();
  return detail::full_node<T, R>(*b, shape, value);
}

// A tensor shaped like x, every element `value`.
template <class T, int R>
constexpr tensor<T, R> full_like(tensor<T, R> x, double value) {
  if constexpr (R == 0) {
    return constant_like<T>(x, value);
  } else {
    index shape[R];
    for (int i = 0; i < R; ++i) shape[i] = x.extent(i);
    return detail::full_node<T, R>(*x.b_, shape, value);
  }
}

// A run-time index (an extent, a parameter) as a rank-0 value of type T,
// for arithmetic such as dividing by an extent. `like` is any handle of the
// trace (a compile-time index has no trace of its own).
template <class T, class X>
constexpr tensor<T, 0> index_value(index n, const X& like) {
  static_assert(is_element_type_v<T> && !std::is_same_v<T, bool>, "fusex::index_value: unsupported element type");
  return {like.b_, detail::index_value_node(*like.b_, dtype_v<T>, n.id_in(*like.b_))};
}

// iota: [start, start + step, ...] with n elements, rank 1.
template <class T>
constexpr tensor<T, 1> iota(index n, double start = 0, double step = 1) {
  static_assert(is_element_type_v<T> && !std::is_same_v<T, bool>, "fusex::iota: unsupported element type");
  if (n.builder_() == nullptr) detail::fusex_error_full_needs_a_runtime_extent_or_full_like();
  detail::builder& b = *n.builder_();
  node nd;
  nd.op = op_kind::iota;
  nd.dt = dtype_v<T>;
  nd.rank = 1;
  nd.value = start;
  nd.value2 = step;
  nd.shape[0] = n.id_in(b);
  return {&b, b.add(nd, nullptr, 0)};
}

}  // namespace fusex
