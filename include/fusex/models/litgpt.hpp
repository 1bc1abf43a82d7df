#pragma once
// LitGPT's transformer `Block` from fusex ops, for the two families the seed
// cares about: Pythia (GPT-NeoX: LayerNorm, parallel residual, partial RoPE,
// exact-GeLU MLP, biases) and LLaMA (RMSNorm, grouped-query attention, full
// RoPE, SwiGLU MLP, sequential residuals, no biases). Called inside
// fx::trace, like any other op; fx::vjp differentiates them, applying the
// hand-derived backwards of layer_norm, rms_norm, gelu, swiglu and
// qkv_split_rope.
//
// Equal to litgpt 0.5.13's Block.forward (tests/litgpt, against data that
// litgpt itself wrote) with these conventions:
//  - Linear weights are (in_features, out_features), i.e. torch's
//    `linear.weight.T`: the layout `x @ w` reads.
//  - cos and sin are (T, rope_n_elem), litgpt's rope cache without its
//    leading batch axis.
//  - qkv is split in the layout of the litgpt release whose weights these
//    are (block_config::layout; ops::qkv_layout).
//  - Attention is causal and runs through prims: the (T x T) scores are
//    materialised, and the softmax is one fused row reduction. k and v are
//    not expanded to n_head heads: the q heads of a query group are stacked
//    on the rows of one matmul with their group's k and v (the same values
//    as litgpt's repeat_interleave, without the copies).

#include <limits>

#include "../capture/matmul.hpp"
#include "../capture/reduce.hpp"
#include "../capture/remap.hpp"
#include "../capture/source.hpp"
#include "../ops/gelu.hpp"
#include "../ops/layer_norm.hpp"
#include "../ops/rope.hpp"
#include "../ops/swiglu.hpp"

namespace fusex::models {

struct block_config {
  index n_head;
  index n_query_groups;
  index head_size;
  index rope_n_elem;  // int(rotary_percentage * head_size)
  double norm_eps = 1e-5;
  ops::qkv_layout layout = ops::qkv_layout::blocks;

  constexpr ops::rope_config rope() const { return {n_head, n_query_groups, head_size, rope_n_elem, layout}; }
};

// x @ w (+ b) over the last axis of a (B, T, in) activation; w is (in, out).
template <class T>
constexpr tensor<T, 3> linear(tensor<T, 3> x, tensor<T, 2> w) {
  const index B = x.extent(0), Tn = x.extent(1);
  auto y = matmul(reshape(x, {B * Tn, x.extent(2)}), w);
  return reshape(y, {B, Tn, w.extent(1)});
}
template <class T>
constexpr tensor<T, 3> linear(tensor<T, 3> x, tensor<T, 2> w, tensor<T, 1> b) {
  auto y = linear(x, w);
  return y + broadcast_in_dim<2>(b, {y.extent(0), y.extent(1), b.extent(0)});
}

// Causal scaled dot-product attention of q (B, n_head, T, hs) over k, v
// (B, n_query_groups, T, hs): softmax(q k^T / sqrt(hs) + causal mask) v, as
// (B, T, n_head * hs), the heads side by side (litgpt's reshape before proj).
// The scores are scaled and soft-maxed in f32 (f64 for f64 input).
template <class T>
constexpr tensor<T, 3> causal_attention(tensor<T, 4> q, tensor<T, 4> k, tensor<T, 4> v, const block_config& c) {
  using C = ops::detail::compute_type<T>;
  const index B = q.extent(0), Tn = q.extent(2), hs = c.head_size, G = c.n_query_groups;
  const index q_per_kv = c.n_head / G;
  // head g * q_per_kv + j attends with group g's k and v: stack a group's q
  // heads. The scores stay in the matmul's shape (B, G, q_per_kv * T, T), so
  // the softmax's row kernel writes exactly what the second matmul reads (a
  // reshape to (B, n_head, T, T) after the row sums would not keep the row
  // domain, and would put the normalisation in a kernel of its own).
  const index rows = q_per_kv * Tn;
  auto qg = reshape(q, {B, G, rows, hs});
  auto scores = matmul(qg, transpose<2, 3>(k));
  auto s = convert<C>(scores) * rsqrt(index_value<C>(hs, q));
  // query row r of a stacked group is position r mod T
  auto r = iota<std::int32_t>(rows);
  auto tn = index_value<std::int32_t>(Tn, q);
  auto row = broadcast_in_dim<2>(r - (r / tn) * tn, {index(1), index(1), rows, Tn});
  auto col = broadcast_in_dim<3>(iota<std::int32_t>(Tn), {index(1), index(1), rows, Tn});
  auto masked = where(col > row, -std::numeric_limits<double>::infinity(), s);
  // softmax over the keys: every row keeps its diagonal, so its max is finite
  auto e = exp(masked - amax<3>(masked, keepdim));
  auto p = convert<T>(e / sum<3>(e, keepdim));
  auto y = matmul(p, v);  // (B, G, q_per_kv * T, hs)
  auto heads = permute<0, 2, 1, 3>(reshape(y, {B, c.n_head, Tn, hs}));
  return reshape(heads, {B, Tn, c.n_head * hs});
}

// ---- Pythia (GPT-NeoX) ------------------------------------------------------

// The parameters of one Pythia block, named as in litgpt's state dict.
template <class T>
struct pythia_params {
  tensor<T, 1> norm_1_weight, norm_1_bias;
  tensor<T, 2> qkv_weight;  // attn.qkv: (n_embd, (n_head + 2 G) hs)
  tensor<T, 1> qkv_bias;
  tensor<T, 2> proj_weight;  // attn.proj: (n_head hs, n_embd)
  tensor<T, 1> proj_bias;
  tensor<T, 1> norm_2_weight, norm_2_bias;
  tensor<T, 2> fc_weight;  // mlp.fc: (n_embd, intermediate)
  tensor<T, 1> fc_bias;
  tensor<T, 2> mlp_proj_weight;  // mlp.proj: (intermediate, n_embd)
  tensor<T, 1> mlp_proj_bias;
};

// litgpt Block with parallel_residual, separate norm_1 and norm_2 and
// GptNeoxMLP (exact GeLU):
//   attn(norm_1(x)) + mlp(norm_2(x)) + x
template <class T>
constexpr tensor<T, 3> pythia_block(tensor<T, 3> x, tensor<T, 2> cos, tensor<T, 2> sin, const pythia_params<T>& p,
                                    const block_config& c) {
  auto n1 = ops::layer_norm(x, p.norm_1_weight, p.norm_1_bias, c.norm_eps).y;
  auto [q, k, v] = ops::qkv_split_rope<false>(linear(n1, p.qkv_weight, p.qkv_bias), cos, sin, c.rope());
  auto attn = linear(causal_attention(q, k, v, c), p.proj_weight, p.proj_bias);
  auto n2 = ops::layer_norm(x, p.norm_2_weight, p.norm_2_bias, c.norm_eps).y;
  auto mlp = linear(ops::gelu(linear(n2, p.fc_weight, p.fc_bias)), p.mlp_proj_weight, p.mlp_proj_bias);
  return mlp + (attn + x);
}

// ---- LLaMA ------------------------------------------------------------------

template <class T>
struct llama_params {
  tensor<T, 1> norm_1_weight;
  tensor<T, 2> qkv_weight;   // (n_embd, (n_head + 2 G) hs)
  tensor<T, 2> proj_weight;  // (n_head hs, n_embd)
  tensor<T, 1> norm_2_weight;
  tensor<T, 2> fc_1_weight, fc_2_weight;  // (n_embd, intermediate)
  tensor<T, 2> mlp_proj_weight;           // (intermediate, n_embd)
};

// litgpt Block with sequential residuals, RMSNorm (add_unit_offset false;
// Gemma's true is rms_norm(x, 1 + weight, eps)) and LLaMAMLP:
//   h = attn(norm_1(x)) + x;   mlp(norm_2(h)) + h,   mlp(y) = proj(silu(fc_1 y) * fc_2 y)
template <class T>
constexpr tensor<T, 3> llama_block(tensor<T, 3> x, tensor<T, 2> cos, tensor<T, 2> sin, const llama_params<T>& p,
                                   const block_config& c) {
  auto n1 = ops::rms_norm(x, p.norm_1_weight, c.norm_eps);
  auto [q, k, v] = ops::qkv_split_rope<false>(linear(n1, p.qkv_weight), cos, sin, c.rope());
  auto h = linear(causal_attention(q, k, v, c), p.proj_weight) + x;
  auto n2 = ops::rms_norm(h, p.norm_2_weight, c.norm_eps);
  auto gated = ops::swiglu(linear(n2, p.fc_1_weight), linear(n2, p.fc_2_weight));
  return linear(gated, p.mlp_proj_weight) + h;
}

}  // namespace fusex::models
