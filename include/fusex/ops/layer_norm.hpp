#pragma once
// LayerNorm and RMSNorm over the last axis, written from prims (var_mean,
// normalise, scale). Each fuses into one row kernel; 16-bit inputs compute
// in f32.

#include "../capture/elementwise.hpp"
#include "../capture/reduce.hpp"
#include "../capture/remap.hpp"

namespace fusex::ops {

namespace detail {
// A (C) vector as (1, ..., 1, C), broadcasting over the rows of a rank-R tensor.
template <int R, class T, class X>
constexpr tensor<T, R> along_last_axis(tensor<T, 1> v, const X& like) {
  index shape[R];
  for (int i = 0; i < R; ++i) shape[i] = i == R - 1 ? like.extent(R - 1) : index(1);
  return broadcast_in_dim<R - 1>(v, shape);
}
template <class T>
using norm_compute = std::conditional_t<std::is_same_v<T, double>, double, float>;
}  // namespace detail

template <class T, int R, class C>
struct layer_norm_result {
  tensor<T, R> y;
  tensor<C, R> mean;  // (..., 1)
  tensor<C, R> rstd;  // (..., 1)
};

// y = (x - mean) * rsqrt(var + eps) * weight + bias over the last axis;
// weight and bias have shape (C). Also returns mean and rstd (what the
// backward needs).
template <class T, int R, class WT, class E>
constexpr auto layer_norm(tensor<T, R> x, tensor<WT, 1> weight, tensor<WT, 1> bias, E eps) {
  static_assert(R >= 1, "fusex::ops::layer_norm: operand must have rank >= 1");
  using C = detail::norm_compute<T>;
  auto xf = convert<C>(x);
  auto [var, mean] = var_mean<-1>(xf, 0.0, keepdim);
  auto rstd = rsqrt(var + eps);
  auto w = detail::along_last_axis<R>(convert<C>(weight), x);
  auto b = detail::along_last_axis<R>(convert<C>(bias), x);
  return layer_norm_result<T, R, C>{convert<T>((xf - mean) * rstd * w + b), mean, rstd};
}

// RMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight over the last axis.
template <class T, int R, class WT, class E>
constexpr tensor<T, R> rms_norm(tensor<T, R> x, tensor<WT, 1> weight, E eps) {
  static_assert(R >= 1, "fusex::ops::rms_norm: operand must have rank >= 1");
  using C = detail::norm_compute<T>;
  auto xf = convert<C>(x);
  auto ms = mean<-1>(xf * xf, keepdim);
  auto w = detail::along_last_axis<R>(convert<C>(weight), x);
  return convert<T>(xf * rsqrt(ms + eps) * w);
}

}  // namespace fusex::ops
