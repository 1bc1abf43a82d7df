#pragma once
// LayerNorm and RMSNorm over the last axis, written from prims (var_mean,
// normalise, scale), and their hand-derived backward. Each forward fuses
// into one row kernel; 16-bit inputs compute in f32. The forward keeps the
// per-row statistics in f32 for the backward: mean and rstd (LayerNorm),
// rstd (RMSNorm).
//
// With xhat = (x - mean) * rstd, g = dy * weight and means over the row:
//   LayerNorm  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   RMSNorm    dx = rstd * (g - xhat * mean(g * xhat))          (xhat = x * rstd)
//   dweight = sum over rows of dy * xhat,   dbias = sum over rows of dy

#include <tuple>

#include "../capture/reduce.hpp"
#include "../capture/remap.hpp"
#include "composite.hpp"

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
using norm_compute = compute_type<T>;
}  // namespace detail

namespace vjp {
using fusex::detail::dyn;

struct norm_grads {
  dyn dx, dweight, dbias;
};

// LayerNorm backward from x, weight, the saved f32 mean and rstd (..., 1),
// and the cotangents of y and (when used) of mean and rstd (id < 0: none).
constexpr norm_grads layer_norm(const dyn& x, const dyn& weight, dtype bias_dt, const dyn& mean, const dyn& rstd,
                                const dyn& dy, const dyn& dmean, const dyn& drstd) {
  const int r = x.rank(), a = r - 1;
  const dtype c = mean.dt();
  const dyn xhat = (convert(x, c) - mean) * rstd;
  const dyn gf = convert(dy, c);
  const dyn g = gf * along_last_axis(convert(weight, c), r, x.extent(a));
  dyn dx = rstd * (g - fusex::detail::dynops::mean(g, a, true) - xhat * fusex::detail::dynops::mean(g * xhat, a, true));
  if (dmean.id >= 0 || drstd.id >= 0) {
    // mean and rstd as outputs: d mean / dx = 1 / C, d rstd / dx = -rstd^2 xhat / C
    const dyn n = index_value(x, x.extent(a));
    if (dmean.id >= 0) dx = dx + convert(dmean, c) / n;
    if (drstd.id >= 0) dx = dx - convert(drstd, c) * rstd * rstd * xhat / n;
  }
  // dweight and dbias sum over rows in their own (column) kernel; their
  // producers are recomputed there from x and dy rather than written out.
  const fusex::detail::recompute_scope again(*x.b);
  const dyn xhat_c = (convert(x, c) - mean) * rstd, gf_c = convert(dy, c);
  return {convert(dx, x.dt()), convert(sum(as_rows(gf_c * xhat_c), 0, false), weight.dt()),
          convert(sum(as_rows(gf_c), 0, false), bias_dt)};
}

// RMSNorm backward from x, weight, the saved f32 rstd (..., 1) and the
// cotangent of y.
constexpr norm_grads rms_norm(const dyn& x, const dyn& weight, const dyn& rstd, const dyn& dy) {
  const int r = x.rank(), a = r - 1;
  const dtype c = rstd.dt();
  const dyn xhat = convert(x, c) * rstd;
  const dyn gf = convert(dy, c);
  const dyn g = gf * along_last_axis(convert(weight, c), r, x.extent(a));
  const dyn dx = rstd * (g - xhat * mean(g * xhat, a, true));
  const fusex::detail::recompute_scope again(*x.b);
  const dyn xhat_c = convert(x, c) * rstd, gf_c = convert(dy, c);
  return {convert(dx, x.dt()), convert(sum(as_rows(gf_c * xhat_c), 0, false), weight.dt()), {}};
}
}  // namespace vjp

template <class T, int R, class C>
struct layer_norm_result {
  tensor<T, R> y;
  tensor<C, R> mean;  // (..., 1)
  tensor<C, R> rstd;  // (..., 1)
};

// y = (x - mean) * rsqrt(var + eps) * weight + bias over the last axis;
// weight and bias have shape (C), eps is a number or a scalar argument.
// Also returns mean and rstd (what the backward needs).
template <class T, int R, class WT, class E>
constexpr auto layer_norm(tensor<T, R> x, tensor<WT, 1> weight, tensor<WT, 1> bias, E eps) {
  static_assert(R >= 1, "fusex::ops::layer_norm: operand must have rank >= 1");
  static_assert(is_floating(dtype_v<T>) && is_floating(dtype_v<WT>),
                "fusex::ops::layer_norm: operands must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto e = detail::rank0_value<C>(x, eps);
  auto [var, mean] = var_mean<-1>(xf, 0.0, keepdim);
  auto rstd = rsqrt(var + e);
  auto w = detail::along_last_axis<R>(convert<C>(weight), x);
  auto b = detail::along_last_axis<R>(convert<C>(bias), x);
  auto y = convert<T>((xf - mean) * rstd * w + b);
  detail::record_region(*x.b_, composite::layer_norm, detail::ids(x.id_, weight.id_, bias.id_, e.id_),
                        detail::ids(y.id_, mean.id_, rstd.id_), detail::ids(mean.id_, rstd.id_));
  return layer_norm_result<T, R, C>{y, mean, rstd};
}

// RMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight over the last axis.
template <class T, int R, class WT, class E>
constexpr tensor<T, R> rms_norm(tensor<T, R> x, tensor<WT, 1> weight, E eps) {
  static_assert(R >= 1, "fusex::ops::rms_norm: operand must have rank >= 1");
  static_assert(is_floating(dtype_v<T>) && is_floating(dtype_v<WT>),
                "fusex::ops::rms_norm: operands must be floating point");
  using C = detail::compute_type<T>;
  auto xf = convert<C>(x);
  auto e = detail::rank0_value<C>(x, eps);
  auto rstd = rsqrt(mean<-1>(xf * xf, keepdim) + e);
  auto w = detail::along_last_axis<R>(convert<C>(weight), x);
  auto y = convert<T>(xf * rstd * w);
  detail::record_region(*x.b_, composite::rms_norm, detail::ids(x.id_, weight.id_, e.id_), detail::ids(y.id_), detail::ids(rstd.id_));
  return y;
}

// The typed backward: dx, dweight, dbias from the forward's saved values.
template <class T, int R, class WT, class C>
constexpr auto layer_norm_backward(tensor<T, R> x, tensor<WT, 1> weight, tensor<C, R> mean, tensor<C, R> rstd,
                                   tensor<T, R> dy) {
  const auto g = vjp::layer_norm(detail::as_dyn(x), detail::as_dyn(weight), dtype_v<WT>, detail::as_dyn(mean),
                                 detail::as_dyn(rstd), detail::as_dyn(dy), {}, {});
  return std::tuple{detail::as_tensor<T, R>(g.dx), detail::as_tensor<WT, 1>(g.dweight),
                    detail::as_tensor<WT, 1>(g.dbias)};
}

}  // namespace fusex::ops
