#pragma once
// LitGPT's qkv split and rotary position embedding, from prims, and its
// backward.
//
// qkv is (B, T, (n_head + 2 * n_query_groups) * head_size), grouped per
// query group as q_per_kv q heads, then k, then v (litgpt 0.5). RoPE applies
// to the first n_elem dims of each q and k head:
//   rotate_half(x) = cat(-x[..., n/2:n], x[..., :n/2])
//   roped = x * cos + rotate_half(x) * sin,   cos and sin of shape (T, n_elem)
// then concatenates the untouched rest. Every step is an index remap or an
// elementwise op, so the whole split fuses into one kernel writing q, k, v.

#include <tuple>

#include "../capture/elementwise.hpp"
#include "../capture/remap.hpp"

namespace fusex::ops {

struct rope_config {
  index n_head;
  index n_query_groups;
  index head_size;
  index n_elem;  // rotary dims: int(rotary_percentage * head_size)
};

namespace detail {
template <class T, int R, class CS>
constexpr tensor<T, R> cos_sin_like(tensor<CS, 2> cs) {
  // (T, n) -> (1, ..., 1, T, n)
  index shape[R];
  for (int i = 0; i < R; ++i) shape[i] = i == R - 2 ? cs.extent(0) : i == R - 1 ? cs.extent(1) : index(1);
  return convert<T>(broadcast_in_dim<R - 2, R - 1>(cs, shape));
}
}  // namespace detail

// x * cos + rotate_half(x) * sin on the first n_elem dims, then the rest.
template <class T, int R, class CS>
constexpr tensor<T, R> apply_rope(tensor<T, R> x, tensor<CS, 2> cos, tensor<CS, 2> sin, index n_elem) {
  auto xr = slice<R - 1>(x, 0, n_elem);
  auto x1 = slice<R - 1>(xr, 0, n_elem / 2);
  auto x2 = slice<R - 1>(xr, n_elem / 2, n_elem);
  auto rotated = cat<R - 1>(-x2, x1);
  auto roped = xr * detail::cos_sin_like<T, R>(cos) + rotated * detail::cos_sin_like<T, R>(sin);
  return cat<R - 1>(roped, slice<R - 1>(x, n_elem, x.extent(R - 1)));
}

// The vector-Jacobian product of apply_rope (slice, pad, neg, mul, add, cat).
template <class T, int R, class CS>
constexpr tensor<T, R> apply_rope_backward(tensor<T, R> dy, tensor<CS, 2> cos, tensor<CS, 2> sin, index n_elem) {
  auto dr = slice<R - 1>(dy, 0, n_elem);
  auto direct = dr * detail::cos_sin_like<T, R>(cos);
  auto drot = dr * detail::cos_sin_like<T, R>(sin);
  const index half = n_elem / 2, rest = n_elem - n_elem / 2;
  // rotated = cat(-x2, x1): its first half flows to x2 (negated), its second to x1
  auto dx1 = pad<R - 1>(slice<R - 1>(drot, half, n_elem), 0, rest);
  auto dx2 = pad<R - 1>(-slice<R - 1>(drot, 0, half), half, 0);
  auto dxr = direct + dx1 + dx2;
  return cat<R - 1>(dxr, slice<R - 1>(dy, n_elem, dy.extent(R - 1)));
}

// Splits qkv into q (B, n_head, T, hs) and k, v. With ExpandKV, k and v are
// expanded to n_head heads (LitGPT does so when 1 < n_query_groups < n_head);
// otherwise they stay (B, n_query_groups, T, hs). RoPE is applied to q and k.
template <bool ExpandKV, class T, class CS>
constexpr auto qkv_split_rope(tensor<T, 3> qkv, tensor<CS, 2> cos, tensor<CS, 2> sin, const rope_config& c) {
  const index B = qkv.extent(0), Tn = qkv.extent(1);
  const index q_per_kv = c.n_head / c.n_query_groups;
  auto x = reshape(qkv, {B, Tn, c.n_query_groups, q_per_kv + 2, c.head_size});
  auto t = permute<0, 2, 3, 1, 4>(x);  // (B, G, q_per_kv + 2, T, hs)
  auto q = reshape(slice<2>(t, 0, q_per_kv), {B, c.n_head, Tn, c.head_size});
  auto k5 = slice<2>(t, q_per_kv, q_per_kv + 1);  // (B, G, 1, T, hs)
  auto v5 = slice<2>(t, q_per_kv + 1, q_per_kv + 2);
  auto heads = [&](auto y5) {
    if constexpr (ExpandKV) {
      auto e = expand(y5, {B, c.n_query_groups, q_per_kv, Tn, c.head_size});
      return reshape(e, {B, c.n_head, Tn, c.head_size});
    } else {
      return reshape(y5, {B, c.n_query_groups, Tn, c.head_size});
    }
  };
  auto k = heads(k5);
  auto v = heads(v5);
  return std::tuple{apply_rope(q, cos, sin, c.n_elem), apply_rope(k, cos, sin, c.n_elem), v};
}

// The backward of qkv_split_rope without expansion: dq (B, n_head, T, hs),
// dk and dv (B, n_query_groups, T, hs) back to dqkv (B, T, C).
template <class T, class CS>
constexpr tensor<T, 3> qkv_split_rope_backward(tensor<T, 4> dq, tensor<T, 4> dk, tensor<T, 4> dv, tensor<CS, 2> cos,
                                               tensor<CS, 2> sin, const rope_config& c) {
  const index B = dq.extent(0), Tn = dq.extent(2);
  const index q_per_kv = c.n_head / c.n_query_groups;
  auto dqr = apply_rope_backward(dq, cos, sin, c.n_elem);
  auto dkr = apply_rope_backward(dk, cos, sin, c.n_elem);
  auto q5 = reshape(dqr, {B, c.n_query_groups, q_per_kv, Tn, c.head_size});
  auto k5 = unsqueeze<2>(dkr);
  auto v5 = unsqueeze<2>(dv);
  auto t = cat<2>(q5, k5, v5);         // (B, G, q_per_kv + 2, T, hs)
  auto x = permute<0, 3, 1, 2, 4>(t);  // (B, T, G, q_per_kv + 2, hs)
  return reshape(x, {B, Tn, c.n_query_groups * (q_per_kv + 2) * c.head_size});
}

}  // namespace fusex::ops
