#pragma once
// SiLU and the SwiGLU product of the LLaMA MLP, from prims, with their
// hand-derived backward. With s = sigmoid(a):
//   silu(a) = a * s,            d silu / da = s * (1 + a * (1 - s))
//   swiglu(a, b) = silu(a) * b: da = dy * b * s * (1 + a (1 - s)),  db = dy * silu(a)

#include <tuple>

#include "composite.hpp"

namespace fusex::ops {

namespace vjp {
using fusex::detail::dyn;

constexpr dyn silu(const dyn& a, const dyn& dy) {
  const dtype c = detail::compute_of(a.dt());
  const dyn af = convert(a, c);
  const dyn s = sigmoid(af);
  return convert(convert(dy, c) * s * (1.0 + af * (1.0 - s)), a.dt());
}

struct swiglu_grads {
  dyn da, db;
};
constexpr swiglu_grads swiglu(const dyn& a, const dyn& b, const dyn& dy) {
  const dtype c = detail::compute_of(promote(a.dt(), b.dt()));
  const dyn af = convert(a, c), g = convert(dy, c);
  const dyn s = sigmoid(af);
  return {convert(g * convert(b, c) * s * (1.0 + af * (1.0 - s)), a.dt()), convert(g * af * s, b.dt())};
}
}  // namespace vjp

template <class T, int R>
constexpr tensor<T, R> silu(tensor<T, R> a) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::silu: operand must be floating point");
  using C = detail::compute_type<T>;
  auto af = convert<C>(a);
  auto y = convert<T>(af * sigmoid(af));
  detail::record_region(*a.b_, composite::silu, detail::ids(a.id_), detail::ids(y.id_));
  return y;
}

// silu(a) * b, the gate of the LLaMA MLP.
template <class T, int R>
constexpr tensor<T, R> swiglu(tensor<T, R> a, tensor<T, R> b) {
  static_assert(is_floating(dtype_v<T>), "fusex::ops::swiglu: operands must be floating point");
  using C = detail::compute_type<T>;
  auto af = convert<C>(a);
  auto y = convert<T>(af * sigmoid(af) * convert<C>(b));
  detail::record_region(*a.b_, composite::swiglu, detail::ids(a.id_, b.id_), detail::ids(y.id_));
  return y;
}

template <class T, int R>
constexpr tensor<T, R> silu_backward(tensor<T, R> a, tensor<T, R> dy) {
  return detail::as_tensor<T, R>(vjp::silu(detail::as_dyn(a), detail::as_dyn(dy)));
}

template <class T, int R>
constexpr std::tuple<tensor<T, R>, tensor<T, R>> swiglu_backward(tensor<T, R> a, tensor<T, R> b, tensor<T, R> dy) {
  const auto g = vjp::swiglu(detail::as_dyn(a), detail::as_dyn(b), detail::as_dyn(dy));
  return {detail::as_tensor<T, R>(g.da), detail::as_tensor<T, R>(g.db)};
}

}  // namespace fusex::ops
