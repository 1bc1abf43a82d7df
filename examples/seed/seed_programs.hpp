#pragma once
// The seed's cases, as programs: the ones whose fusion broke in Lightning
// Thunder #256, #446 and NVIDIA/Fuser #1597, #1473. Shared by the seed
// example, the seed tests and the benchmarks.

#include <tuple>

#include <fusex/fusex.hpp>

namespace seed {

namespace fx = fusex;

// dGeLU, exact erf form, bf16 in and out, as Thunder decomposes it.
inline constexpr auto dgelu = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 2> dy) {
  return fx::ops::gelu_backward(x, dy);
});

// LitGPT qkv split + RoPE forward with GQA (k, v expanded to n_head heads)
// and n_elem < head_size.
inline constexpr auto rope_forward = fx::trace([](fx::tensor<fx::bf16, 3> qkv, fx::tensor<fx::bf16, 2> cos,
                                                  fx::tensor<fx::bf16, 2> sin, fx::index n_head,
                                                  fx::index n_query_groups, fx::index head_size, fx::index n_elem) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
});

// Its backward: dq (B, n_head, T, hs), dk, dv (B, n_query_groups, T, hs) -> dqkv.
inline constexpr auto rope_backward = fx::trace(
    [](fx::tensor<fx::bf16, 4> dq, fx::tensor<fx::bf16, 4> dk, fx::tensor<fx::bf16, 4> dv, fx::tensor<fx::bf16, 2> cos,
       fx::tensor<fx::bf16, 2> sin, fx::index n_head, fx::index n_query_groups, fx::index head_size,
       fx::index n_elem) {
      return fx::ops::qkv_split_rope_backward(dq, dk, dv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
    });

// LayerNorm forward (var_mean, normalise, affine), bf16 in and out.
inline constexpr auto layer_norm = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 1> w,
                                                fx::tensor<fx::bf16, 1> b, fx::scalar<float> eps) {
  return fx::ops::layer_norm(x, w, b, eps).y;
});

// A parallel-residual block's backward, where the RoPE backward's cat meets
// the MLP's GeLU backward: dx = dy + dqkv @ W_attn + dgelu(fc, dy @ W_proj) @ W_fc.
inline constexpr auto parallel_residual_backward = fx::trace(
    [](fx::tensor<fx::bf16, 2> dy, fx::tensor<fx::bf16, 2> fc, fx::tensor<fx::bf16, 2> w_proj,
       fx::tensor<fx::bf16, 2> w_fc, fx::tensor<fx::bf16, 4> dq, fx::tensor<fx::bf16, 4> dk,
       fx::tensor<fx::bf16, 4> dv, fx::tensor<fx::bf16, 2> cos, fx::tensor<fx::bf16, 2> sin,
       fx::tensor<fx::bf16, 2> w_attn, fx::index n_head, fx::index n_query_groups, fx::index head_size,
       fx::index n_elem) {
      // MLP branch: the GeLU backward between two matmuls
      auto d_act = fx::matmul(dy, w_proj);             // (N, I)
      auto d_fc = fx::ops::gelu_backward(fc, d_act);   // (N, I)
      auto d_mlp = fx::matmul(d_fc, w_fc);             // (N, C)
      // attention branch: the RoPE backward's cat, then the qkv projection
      auto dqkv = fx::ops::qkv_split_rope_backward(dq, dk, dv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
      auto d2 = fx::reshape(dqkv, {dqkv.extent<0>() * dqkv.extent<1>(), dqkv.extent<2>()});
      auto d_attn = fx::matmul(d2, w_attn);            // (N, C)
      auto dx = fx::convert<float>(dy) + fx::convert<float>(d_mlp) + fx::convert<float>(d_attn);
      return fx::convert<fx::bf16>(dx);
    });

// A user executor with a hand-written cat kernel (host and device). It
// claims every cat; under the greedy-claim policy it also grows over the ops
// Thunder's torchcompile_cat executor fused around a cat.
struct cat_executor {
  static constexpr const char* name = "user-cat";
  static constexpr bool claims(const fx::node& n) { return n.op == fx::op_kind::cat; }
  static constexpr bool can_fuse(const fx::node& n) {
    switch (n.op) {
      case fx::op_kind::add:
      case fx::op_kind::mul:
      case fx::op_kind::neg:
      case fx::op_kind::div:
      case fx::op_kind::erf:
      case fx::op_kind::cat:
      case fx::op_kind::pad:
      case fx::op_kind::slice:
      case fx::op_kind::reshape:
      case fx::op_kind::permute:
      case fx::op_kind::broadcast_in_dim:
      case fx::op_kind::convert:
      case fx::op_kind::full:
        return true;
      default:
        return false;
    }
  }
  // Copies each operand's block into the output along the cat axis.
  static void run_host(const fx::claimed_call& c) {
    const int r = c.out.rank, axis = c.n->axis;
    const int elem = fx::size_of(c.out.dt);
    fx::index_t offset = 0;
    for (int k = 0; k < c.nin; ++k) {
      const fx::bound_arg& in = c.in[k];
      fx::index_t total = 1;
      for (int i = 0; i < r; ++i) total *= in.ext[i];
      for (fx::index_t e = 0; e < total; ++e) {
        fx::index_t rem = e, so = 0, dof = 0;
        for (int i = r - 1; i >= 0; --i) {
          const fx::index_t ii = rem % in.ext[i];
          rem /= in.ext[i];
          so += ii * in.str[i];
          dof += (i == axis ? ii + offset : ii) * c.out.str[i];
        }
        fx::detail::store_double(const_cast<void*>(c.out.data), c.out.dt, dof,
                                 fx::detail::round_to(c.out.dt, fx::detail::load_double(in.data, in.dt, so)));
      }
      offset += in.ext[axis];
      (void)elem;
    }
  }
#if defined(__CUDACC__)
  static void run_cuda(const fx::claimed_call& c, cudaStream_t stream);
#endif
};

#if defined(__CUDACC__)
// Device side of the user's cat: one strided block copy per operand.
struct cat_block {
  const unsigned char* src;
  unsigned char* dst;
  int rank, elem;
  fx::index_t ext[fx::max_rank], src_str[fx::max_rank], dst_str[fx::max_rank];
};
__global__ inline void cat_block_copy(const cat_block b, fx::index_t total) {
  for (fx::index_t i = blockIdx.x * static_cast<fx::index_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<fx::index_t>(gridDim.x) * blockDim.x) {
    fx::index_t rem = i, so = 0, dof = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
      const fx::index_t c = rem % b.ext[d];
      rem /= b.ext[d];
      so += c * b.src_str[d];
      dof += c * b.dst_str[d];
    }
    for (int k = 0; k < b.elem; ++k) b.dst[dof * b.elem + k] = b.src[so * b.elem + k];
  }
}
inline void cat_executor::run_cuda(const fx::claimed_call& c, cudaStream_t stream) {
  fx::index_t offset = 0;
  for (int k = 0; k < c.nin; ++k) {
    const fx::bound_arg& in = c.in[k];
    if (in.dt != c.out.dt) throw fx::argument_error("user-cat: operands must have the output's dtype");
    cat_block b{};
    b.src = static_cast<const unsigned char*>(in.data);
    b.elem = fx::size_of(in.dt);
    b.rank = in.rank;
    b.dst = static_cast<unsigned char*>(const_cast<void*>(c.out.data)) +
            offset * c.out.str[c.n->axis] * b.elem;
    fx::index_t total = 1;
    for (int d = 0; d < in.rank; ++d) {
      b.ext[d] = in.ext[d];
      b.src_str[d] = in.str[d];
      b.dst_str[d] = c.out.str[d];
      total *= in.ext[d];
    }
    if (total > 0) cat_block_copy<<<static_cast<unsigned>((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096), 256, 0, stream>>>(b, total);
    offset += in.ext[c.n->axis];
  }
}
#endif

}  // namespace seed
