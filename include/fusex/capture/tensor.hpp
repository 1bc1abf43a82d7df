#pragma once
// Handles used while tracing. A tensor<T, R> names one node of the graph
// being recorded: dtype and rank are part of its type, extents are symbolic
// indices. Using a handle twice uses the same node.

#include <type_traits>

#include "builder.hpp"
#include "index.hpp"

namespace fusex {

namespace detail {
template <int R>
constexpr int normalize_axis(int axis) {
  return axis < 0 ? axis + R : axis;
}
template <int R>
constexpr bool axis_in_range(int axis) {
  return axis >= -R && axis < R;
}
}  // namespace detail

template <class T, int R>
struct tensor {
  static_assert(is_element_type_v<T>,
                "fusex::tensor: unsupported element type (use float, double, int32_t, int64_t, bool, "
                "fusex::bf16 or fusex::f16)");
  static_assert(R >= 0 && R <= max_rank, "fusex::tensor: rank must be between 0 and 8");

  using value_type = T;
  static constexpr int rank = R;
  static constexpr dtype dt = dtype_v<T>;

  detail::builder* b_ = nullptr;
  std::int32_t id_ = -1;

  constexpr const node& node_() const { return b_->nodes[id_]; }

  // Extent along Axis (negative counts from the back).
  template <int Axis>
  constexpr index extent() const {
    static_assert(detail::axis_in_range<R>(Axis), "fusex::tensor::extent: axis out of range");
    return index(b_, node_().shape[detail::normalize_axis<R>(Axis)]);
  }
  // Extent along a run-time axis; an axis out of range stops compilation.
  constexpr index extent(int axis) const {
    if (axis < -R || axis >= R) detail::fusex_error_axis_out_of_range();
    return index(b_, node_().shape[axis < 0 ? axis + R : axis]);
  }
};

// A run-time scalar argument of the traced function, passed by value to
// kernels (an epsilon, a scale). It behaves as a rank-0 tensor.
template <class T>
struct scalar : tensor<T, 0> {};

// Free-function spelling of x.extent<Axis>(), which needs no `template`
// keyword inside generic code.
template <int Axis, class T, int R>
constexpr index extent(const tensor<T, R>& x) {
  static_assert(detail::axis_in_range<R>(Axis), "fusex::extent: axis out of range");
  return x.extent(Axis);
}

namespace detail {
template <class X>
struct is_tensor : std::false_type {};
template <class T, int R>
struct is_tensor<tensor<T, R>> : std::true_type {};
template <class T>
struct is_tensor<scalar<T>> : std::true_type {};

template <class T, int R>
constexpr tensor<T, R> handle(builder& b, std::int32_t id) {
  return tensor<T, R>{&b, id};
}
}  // namespace detail

}  // namespace fusex
