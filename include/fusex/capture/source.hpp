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
  node nd;
  nd.op = op_kind::full;
  nd.dt = dtype_v<T>;
  nd.rank = R;
  nd.value = value;
  for (int i = 0; i < R; ++i) nd.shape[i] = shape[i].id_in(b);
  return {&b, b.add(nd, nullptr, 0)};
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
