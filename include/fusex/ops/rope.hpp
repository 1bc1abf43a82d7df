#pragma once
// LitGPT's qkv split and rotary position embedding, from prims, and the
// hand-derived backward.
//
// qkv is (B, T, (n_head + 2 * n_query_groups) * head_size), in one of the
// two layouts litgpt has used (qkv_layout below). RoPE applies to the first
// n_elem dims of each q and k head:
//   rotate_half(x) = cat(-x[..., h:n], x[..., :h]),   h = n / 2
//   roped = x * cos + rotate_half(x) * sin,   cos and sin of shape (T, n_elem)
// then concatenates the untouched rest. Every step is an index remap or an
// elementwise op, so the whole split fuses into one kernel writing q, k, v.
//
// The backward rotates by -theta: with z = dy * sin on the rotated dims,
//   dx[..., :n] = dy * cos + cat(z[..., n-h:n], -z[..., :n-h]),  dx[..., n:] = dy[..., n:]
// and the qkv backward concatenates dq, dk, dv back into dqkv's layout
// directly (summing k and v over the heads they were expanded to), with no
// padded intermediates.

#include <cstdint>
#include <tuple>

#include "../capture/reduce.hpp"
#include "../capture/remap.hpp"
#include "composite.hpp"

namespace fusex::ops {

// How q, k and v sit along qkv's last axis. The layout is part of the
// model's weights (litgpt converted its checkpoints when it changed), so it
// must match the litgpt version that produced them.
enum class qkv_layout : std::uint8_t {
  // q | k | v as contiguous blocks of n_head * hs, G * hs and G * hs:
  // `qkv.split((n_head * hs, G * hs, G * hs), dim=-1)`, litgpt >= 0.5.5.
  blocks,
  // per query group: q_per_kv q heads, then that group's k, then its v:
  // `qkv.view(B, T, G, q_per_kv + 2, hs)`, litgpt 0.5.0 to 0.5.4.
  grouped,
};

struct rope_config {
  index n_head;
  index n_query_groups;
  index head_size;
  index n_elem;  // rotary dims: int(rotary_percentage * head_size)
  qkv_layout layout = qkv_layout::blocks;
};

namespace detail {
// A region's flag: bit 0 = k and v expanded, bit 1 = the grouped layout.
constexpr int qkv_flag(bool expand_kv, qkv_layout l) { return (expand_kv ? 1 : 0) | (l == qkv_layout::grouped ? 2 : 0); }
}  // namespace detail

namespace detail {
template <class T, int R, class CS>
constexpr tensor<T, R> cos_sin_like(tensor<CS, 2> cs) {
  // (T, n) -> (1, ..., 1, T, n)
  index shape[R];
  for (int i = 0; i < R; ++i) shape[i] = i == R - 2 ? cs.extent(0) : i == R - 1 ? cs.extent(1) : index(1);
  return convert<T>(broadcast_in_dim<R - 2, R - 1>(cs, shape));
}
}  // namespace detail

namespace vjp {
using fusex::detail::dyn;

// (T, n) as (1, ..., 1, T, n) in dtype d.
constexpr dyn cos_sin_like(const dyn& cs, int r, dtype d) {
  std::int32_t shape[max_rank] = {};
  for (int i = 0; i < r; ++i) shape[i] = i == r - 2 ? cs.extent(0) : i == r - 1 ? cs.extent(1) : cs.b->constant(1);
  const int dims[2] = {r - 2, r - 1};
  return convert(broadcast(cs, dims, shape, r), d);
}

// d apply_rope / dx applied to dy.
constexpr dyn rope(const dyn& dy, const dyn& cos, const dyn& sin, std::int32_t n_elem) {
  fusex::detail::builder& b = *dy.b;
  const int r = dy.rank(), a = r - 1;
  const std::int32_t zero = b.constant(0);
  const std::int32_t half = b.binary(expr_kind::div, n_elem, b.constant(2));
  const std::int32_t rest = b.binary(expr_kind::sub, n_elem, half);  // n - h: the length of x2
  const dyn dr = slice(dy, a, zero, n_elem);
  const dyn z = dr * cos_sin_like(sin, r, dy.dt());
  // rotated = cat(-x2, x1): positions [0, n-h) read x2, [n-h, n) read x1
  const dyn rot_t = cat(slice(z, a, rest, n_elem), -slice(z, a, zero, rest), a);
  const dyn dxr = dr * cos_sin_like(cos, r, dy.dt()) + rot_t;
  return cat(dxr, slice(dy, a, n_elem, dy.extent(a)), a);
}

// dqkv (B, T, C) from dq (B, n_head, T, hs) and dk, dv (B, n_head or
// n_query_groups, T, hs); a cotangent with id < 0 is zero.
// btc: the extents of qkv; cfg: n_head, n_query_groups, head_size, n_elem.
constexpr dyn qkv_rope(dtype qkv_dt, const std::int32_t* btc, const dyn& cos, const dyn& sin, const std::int32_t* cfg,
                       bool expand_kv, qkv_layout layout, const dyn* dqkv_parts) {
  fusex::detail::builder& b = *cos.b;
  const std::int32_t B = btc[0], T = btc[1], C = btc[2];
  const std::int32_t n_head = cfg[0], groups = cfg[1], hs = cfg[2], n_elem = cfg[3];
  const std::int32_t q_per_kv = b.binary(expr_kind::div, n_head, groups);
  const std::int32_t one = b.constant(1);
  const std::int32_t heads_shape[4] = {B, n_head, T, hs};
  const std::int32_t kv_shape[4] = {B, expand_kv ? n_head : groups, T, hs};
  const std::int32_t q5_shape[5] = {B, groups, q_per_kv, T, hs};
  const std::int32_t kv5_shape[5] = {B, groups, one, T, hs};
  auto part = [&](int k, const std::int32_t* shape4) {
    return dqkv_parts[k].id >= 0 ? dqkv_parts[k] : fusex::detail::dynops::zeros(b, qkv_dt, 4, shape4);
  };
  // (B, heads, T, hs) -> (B, G, 1, T, hs), summing expanded heads; head
  // g * q_per_kv + j reads group g in both layouts (expand, repeat_interleave)
  auto to_group = [&](const dyn& d) {
    if (!expand_kv) return reshape(d, kv5_shape, 5);
    return sum(reshape(d, q5_shape, 5), 2, true);
  };
  const dyn dq = rope(part(0, heads_shape), cos, sin, n_elem);
  // rope's backward is linear and the same for every head of a group, so
  // expanded heads are summed first (the sum then needs no cos and sin)
  const dyn k5 = rope(to_group(part(1, kv_shape)), cos, sin, n_elem);
  const dyn v5 = to_group(part(2, kv_shape));
  const std::int32_t out_shape[3] = {B, T, C};
  if (layout == qkv_layout::grouped) {
    const dyn parts[3] = {reshape(dq, q5_shape, 5), k5, v5};
    const int to_btg[5] = {0, 3, 1, 2, 4};  // (B, G, q_per_kv + 2, T, hs) -> (B, T, G, q_per_kv + 2, hs)
    return convert(reshape(permute(cat(parts, 3, 2), to_btg), out_shape, 3), qkv_dt);
  }
  // blocks: each part (B, heads, T, hs) -> (B, T, heads * hs), then q | k | v
  const int to_bth[4] = {0, 2, 1, 3};
  auto flat = [&](const dyn& d4, std::int32_t heads) {
    const std::int32_t shape[3] = {B, T, b.binary(expr_kind::mul, heads, hs)};
    return reshape(permute(d4, to_bth), shape, 3);
  };
  const std::int32_t kv4_shape[4] = {B, groups, T, hs};
  const dyn parts[3] = {flat(dq, n_head), flat(reshape(k5, kv4_shape, 4), groups),
                        flat(reshape(v5, kv4_shape, 4), groups)};
  return convert(cat(parts, 3, 2), qkv_dt);
}
}  // namespace vjp

// x * cos + rotate_half(x) * sin on the first n_elem dims, then the rest.
template <class T, int R, class CS>
constexpr tensor<T, R> apply_rope(tensor<T, R> x, tensor<CS, 2> cos, tensor<CS, 2> sin, index n_elem) {
  static_assert(R >= 2, "fusex::ops::apply_rope: x must have rank >= 2 (..., T, head_size)");
  static_assert(is_floating(dtype_v<T>) && is_floating(dtype_v<CS>),
                "fusex::ops::apply_rope: x, cos and sin must be floating point");
  auto xr = slice<R - 1>(x, 0, n_elem);
  auto x1 = slice<R - 1>(xr, 0, n_elem / 2);
  auto x2 = slice<R - 1>(xr, n_elem / 2, n_elem);
  auto rotated = cat<R - 1>(-x2, x1);
  auto roped = xr * detail::cos_sin_like<T, R>(cos) + rotated * detail::cos_sin_like<T, R>(sin);
  auto y = cat<R - 1>(roped, slice<R - 1>(x, n_elem, x.extent(R - 1)));
  detail::record_region(*x.b_, composite::rope, detail::ids(x.id_, cos.id_, sin.id_), detail::ids(y.id_), detail::id_list{}, detail::ids(n_elem.id_in(*x.b_)));
  return y;
}

// The backward of apply_rope: rotation by -theta.
template <class T, int R, class CS>
constexpr tensor<T, R> apply_rope_backward(tensor<T, R> dy, tensor<CS, 2> cos, tensor<CS, 2> sin, index n_elem) {
  return detail::as_tensor<T, R>(
      vjp::rope(detail::as_dyn(dy), detail::as_dyn(cos), detail::as_dyn(sin), n_elem.id_in(*dy.b_)));
}

// Splits qkv into q (B, n_head, T, hs) and k, v, in the layout c.layout
// names. With ExpandKV, k and v are expanded to n_head heads, head
// g * q_per_kv + j reading group g (litgpt's training path does so whenever
// n_query_groups != n_head, multi-query included); otherwise they stay
// (B, n_query_groups, T, hs). RoPE is applied to q and k.
template <bool ExpandKV, class T, class CS>
constexpr auto qkv_split_rope(tensor<T, 3> qkv, tensor<CS, 2> cos, tensor<CS, 2> sin, const rope_config& c) {
  static_assert(is_floating(dtype_v<T>) && is_floating(dtype_v<CS>),
                "fusex::ops::qkv_split_rope: qkv, cos and sin must be floating point");
  const index B = qkv.extent(0), Tn = qkv.extent(1);
  const index q_per_kv = c.n_head / c.n_query_groups;
  auto heads = [&](auto y5) {  // (B, G, 1, T, hs) -> k or v
    if constexpr (ExpandKV) {
      auto e = expand(y5, {B, c.n_query_groups, q_per_kv, Tn, c.head_size});
      return reshape(e, {B, c.n_head, Tn, c.head_size});
    } else {
      return reshape(y5, {B, c.n_query_groups, Tn, c.head_size});
    }
  };
  auto split = [&] {
    if (c.layout == qkv_layout::grouped) {
      auto x = reshape(qkv, {B, Tn, c.n_query_groups, q_per_kv + 2, c.head_size});
      auto t = permute<0, 2, 3, 1, 4>(x);  // (B, G, q_per_kv + 2, T, hs)
      auto q = reshape(slice<2>(t, 0, q_per_kv), {B, c.n_head, Tn, c.head_size});
      return std::tuple{q, heads(slice<2>(t, q_per_kv, q_per_kv + 1)), heads(slice<2>(t, q_per_kv + 1, q_per_kv + 2))};
    }
    const index qs = c.n_head * c.head_size, ks = c.n_query_groups * c.head_size;
    auto q = permute<0, 2, 1, 3>(reshape(slice<2>(qkv, 0, qs), {B, Tn, c.n_head, c.head_size}));
    auto group5 = [&](index start) {  // (B, T, G * hs) block -> (B, G, 1, T, hs)
      auto g = reshape(slice<2>(qkv, start, start + ks), {B, Tn, c.n_query_groups, index(1), c.head_size});
      return permute<0, 2, 3, 1, 4>(g);
    };
    return std::tuple{q, heads(group5(qs)), heads(group5(qs + ks))};
  };
  auto [q, k, v] = split();
  auto qr = apply_rope(q, cos, sin, c.n_elem);
  auto kr = apply_rope(k, cos, sin, c.n_elem);
  fusex::detail::builder& b = *qkv.b_;
  detail::record_region(b, composite::qkv_rope, detail::ids(qkv.id_, cos.id_, sin.id_), detail::ids(qr.id_, kr.id_, v.id_), detail::id_list{},
                        detail::ids(c.n_head.id_in(b), c.n_query_groups.id_in(b), c.head_size.id_in(b), c.n_elem.id_in(b)),
                        detail::qkv_flag(ExpandKV, c.layout));
  return std::tuple{qr, kr, v};
}

// The backward of qkv_split_rope: dq (B, n_head, T, hs) and dk, dv (B,
// n_head heads with ExpandKV, else n_query_groups, T, hs) to dqkv (B, T, C)
// in c.layout.
template <bool ExpandKV, class T, class CS>
constexpr tensor<T, 3> qkv_split_rope_backward(tensor<T, 4> dq, tensor<T, 4> dk, tensor<T, 4> dv, tensor<CS, 2> cos,
                                               tensor<CS, 2> sin, const rope_config& c) {
  fusex::detail::builder& b = *dq.b_;
  const index C = c.n_query_groups * (c.n_head / c.n_query_groups + 2) * c.head_size;
  const std::int32_t btc[3] = {dq.extent(0).id_in(b), dq.extent(2).id_in(b), C.id_in(b)};
  const std::int32_t cfg[4] = {c.n_head.id_in(b), c.n_query_groups.id_in(b), c.head_size.id_in(b), c.n_elem.id_in(b)};
  const fusex::detail::dyn parts[3] = {detail::as_dyn(dq), detail::as_dyn(dk), detail::as_dyn(dv)};
  return detail::as_tensor<T, 3>(
      vjp::qkv_rope(dtype_v<T>, btc, detail::as_dyn(cos), detail::as_dyn(sin), cfg, ExpandKV, c.layout, parts));
}

}  // namespace fusex::ops
