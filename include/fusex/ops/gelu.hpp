#pragma once
// GeLU and its backward, written from prims so that they trace (and fuse)
// like any other code. 16-bit inputs compute in f32 and round once at the end.
//
//   gelu(x)      = x * (erf(x / sqrt 2) + 1) / 2
//   gelu_tanh(x) = x * (tanh(sqrt(2/pi) * (x + 0.044715 x^3)) + 1) / 2
//   d gelu      = dy * (erf(x / sqrt 2) + 1) / 2 + dy * x * exp(-x^2 / 2) / sqrt(2 pi)
//     (the decomposition Thunder traces, the seed of Lightning Thunder #256)

#include "../capture/elementwise.hpp"

namespace fusex::ops {

namespace detail {
template <class T>
using compute_type = std::conditional_t<std::is_same_v<T, double>, double, float>;
inline constexpr double inv_sqrt2 = 0.70710678118654752440;
inline constexpr double inv_sqrt_2pi = 0.39894228040143267794;
inline constexpr double sqrt_2_over_pi = 0.79788456080286535588;
}  // namespace detail

template <class T, int R>
constexpr tensor<T, R> gelu(tensor<T, R> x) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu: operand must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto cdf = 0.5 * (erf(xf * detail::inv_sqrt2) + 1.0);
  return convert<T>(xf * cdf);
}

template <class T, int R>
constexpr tensor<T, R> gelu_tanh(tensor<T, R> x) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_tanh: operand must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto inner = detail::sqrt_2_over_pi * (xf + 0.044715 * xf * xf * xf);
  return convert<T>(0.5 * xf * (tanh(inner) + 1.0));
}

template <class T, int R>
constexpr tensor<T, R> gelu_backward(tensor<T, R> x, tensor<T, R> dy) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_backward: operands must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto g = convert<C>(dy);
  auto cdf = 0.5 * (erf(xf * detail::inv_sqrt2) + 1.0);
  auto pdf = exp(-0.5 * xf * xf) * detail::inv_sqrt_2pi;
  return convert<T>(g * cdf + g * xf * pdf);
}

// d/dx of gelu_tanh: with u = sqrt(2/pi) (x + 0.044715 x^3), t = tanh(u):
//   0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
template <class T, int R>
constexpr tensor<T, R> gelu_tanh_backward(tensor<T, R> x, tensor<T, R> dy) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_tanh_backward: operands must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto g = convert<C>(dy);
  auto x2 = xf * xf;
  auto t = tanh(detail::sqrt_2_over_pi * (xf + 0.044715 * x2 * xf));
  auto du = detail::sqrt_2_over_pi * (1.0 + 3.0 * 0.044715 * x2);
  return convert<T>(g * (0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * du));
}

}  // namespace fusex::ops
