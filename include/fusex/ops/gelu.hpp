#pragma once
// GeLU, exact (erf) and tanh forms, and their hand-derived backward. The
// forward is written from prims, so it traces and fuses like any other code,
// and records a `gelu` region so that autodiff uses the backward below
// instead of differentiating the prims one by one. 16-bit inputs compute in
// f32 and round once at the end.
//
//   gelu(x)      = x * Phi(x) = x * (erf(x / sqrt 2) + 1) / 2 = h + h erf(x / sqrt 2), h = x / 2
//   d gelu / dx  = Phi(x) + x * phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi):
//     the prim dgelu (Thunder traces it as erf and exp apart: the seed of
//     Lightning Thunder #256, which tests/ builds from those prims)
//   gelu_tanh(x) = x * (tanh(sqrt(2/pi) * (x + 0.044715 x^3)) + 1) / 2

#include "composite.hpp"

namespace fusex::ops {

namespace detail {
inline constexpr double inv_sqrt2 = 0.70710678118654752440;
inline constexpr double inv_sqrt_2pi = 0.39894228040143267794;
inline constexpr double sqrt_2_over_pi = 0.79788456080286535588;
inline constexpr double tanh_cubic = 0.044715;
}  // namespace detail

// Hand-derived backward formulas, on untyped handles: autodiff applies them
// to recorded regions, and the typed *_backward functions wrap them.
namespace vjp {
using fusex::detail::dyn;

// dgelu is the prim for Phi(x) + x phi(x): one table lookup on the host
// where erf and exp apart cost twice the instructions.
constexpr dyn gelu(const dyn& x, const dyn& dy) {
  const dtype c = detail::compute_of(x.dt());
  return convert(convert(dy, c) * dgelu(convert(x, c)), x.dt());
}

// With u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u):
//   d/dx = (1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2
constexpr dyn gelu_tanh(const dyn& x, const dyn& dy) {
  const dtype c = detail::compute_of(x.dt());
  const dyn xf = convert(x, c), g = convert(dy, c);
  const dyn x2 = xf * xf;
  const dyn t = tanh(detail::sqrt_2_over_pi * (xf + detail::tanh_cubic * x2 * xf));
  const dyn du = detail::sqrt_2_over_pi * (1.0 + 3.0 * detail::tanh_cubic * x2);
  return convert(g * (0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * du), x.dt());
}
}  // namespace vjp

template <class T, int R>
constexpr tensor<T, R> gelu(tensor<T, R> x) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu: operand must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  // h + h erf(x / sqrt 2), h = x / 2 (exact): a multiply and an add that
  // contract into one FMA, with one rounding, where (erf + 1) / 2 * x took
  // three operations and three roundings
  auto h = 0.5 * xf;
  auto y = convert<T>(h + h * erf(xf * detail::inv_sqrt2));
  detail::record_region(*x.b_, composite::gelu, detail::ids(x.id_), detail::ids(y.id_));
  return y;
}

template <class T, int R>
constexpr tensor<T, R> gelu_tanh(tensor<T, R> x) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_tanh: operand must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto inner = detail::sqrt_2_over_pi * (xf + detail::tanh_cubic * xf * xf * xf);
  auto y = convert<T>(0.5 * xf * (tanh(inner) + 1.0));
  detail::record_region(*x.b_, composite::gelu_tanh, detail::ids(x.id_), detail::ids(y.id_));
  return y;
}

// dx = dy * (Phi(x) + x phi(x)), from x and dy.
template <class T, int R>
constexpr tensor<T, R> gelu_backward(tensor<T, R> x, tensor<T, R> dy) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_backward: operands must be floating point");
  return detail::as_tensor<T, R>(vjp::gelu(detail::as_dyn(x), detail::as_dyn(dy)));
}

template <class T, int R>
constexpr tensor<T, R> gelu_tanh_backward(tensor<T, R> x, tensor<T, R> dy) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::gelu_tanh_backward: operands must be floating point");
  return detail::as_tensor<T, R>(vjp::gelu_tanh(detail::as_dyn(x), detail::as_dyn(dy)));
}

}  // namespace fusex::ops
