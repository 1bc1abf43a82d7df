#pragma once
// Reductions along one axis: sum, amax and var_mean. The axis is removed,
// or kept with extent 1 when `fusex::keepdim` is passed, so the result
// broadcasts back over the rows it summarises.

#include "emit.hpp"
#include "tensor.hpp"

namespace fusex {

struct keepdim_t {};
inline constexpr keepdim_t keepdim{};

namespace detail {
template <dtype D>
constexpr dtype sum_dtype() {
  return (D == dtype::b8 || is_integral(D)) ? dtype::i64 : D;
}
}  // namespace detail

#define FUSEX_REDUCTION(fn, kind, out_dtype)                                                                 \
  template <int Axis, class T, int R>                                                                        \
  constexpr auto fn(tensor<T, R> x) {                                                                        \
    static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::" #fn ": reduction axis out of range");   \
    constexpr dtype out = out_dtype;                                                                         \
    return tensor<detail::type_of<out>, R - 1>{                                                              \
        x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::kind, out, detail::normalize_axis<R>(Axis), false)}; \
  }                                                                                                          \
  template <int Axis, class T, int R>                                                                        \
  constexpr auto fn(tensor<T, R> x, keepdim_t) {                                                             \
    static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::" #fn ": reduction axis out of range");   \
    constexpr dtype out = out_dtype;                                                                         \
    return tensor<detail::type_of<out>, R>{                                                                  \
        x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::kind, out, detail::normalize_axis<R>(Axis), true)};      \
  }

FUSEX_REDUCTION(sum, sum, detail::sum_dtype<dtype_v<T>>())
FUSEX_REDUCTION(amax, amax, dtype_v<T>)
#undef FUSEX_REDUCTION

template <class T, int R>
struct var_mean_result {
  tensor<T, R> var;
  tensor<T, R> mean;
};

// var_mean: variance (dividing by n - correction) and mean along Axis.
template <int Axis, class T, int R>
constexpr var_mean_result<T, R - 1> var_mean(tensor<T, R> x, double correction = 0) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::var_mean: reduction axis out of range");
  static_assert(is_floating(dtype_v<T>), "fusex::var_mean: operand must be floating point");
  constexpr int a = detail::normalize_axis<R>(Axis);
  return {{x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, a, false, 0, correction)},
          {x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, a, false, 2, correction)}};
}
template <int Axis, class T, int R>
constexpr var_mean_result<T, R> var_mean(tensor<T, R> x, double correction, keepdim_t) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::var_mean: reduction axis out of range");
  static_assert(is_floating(dtype_v<T>), "fusex::var_mean: operand must be floating point");
  constexpr int a = detail::normalize_axis<R>(Axis);
  return {{x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, a, true, 0, correction)},
          {x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, a, true, 2, correction)}};
}

// mean along Axis: the mean output of var_mean on its own.
template <int Axis, class T, int R>
constexpr tensor<T, R - 1> mean(tensor<T, R> x) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::mean: reduction axis out of range");
  static_assert(is_floating(dtype_v<T>), "fusex::mean: operand must be floating point");
  return {x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, detail::normalize_axis<R>(Axis), false, 2, 0)};
}
template <int Axis, class T, int R>
constexpr tensor<T, R> mean(tensor<T, R> x, keepdim_t) {
  static_assert(R > 0 && detail::axis_in_range<R>(Axis), "fusex::mean: reduction axis out of range");
  static_assert(is_floating(dtype_v<T>), "fusex::mean: operand must be floating point");
  return {x.b_, detail::reduction_node(*x.b_, x.id_, op_kind::var_mean, dtype_v<T>, detail::normalize_axis<R>(Axis), true, 2, 0)};
}

}  // namespace fusex
