#pragma once
// The seed's cases, as programs: the ones whose fusion broke in Lightning
// Thunder #256, #446 and NVIDIA/Fuser #1597, #1473. Shared by the seed
// example, the seed tests and the benchmarks.

#include <tuple>

#include <fusex/fusex.hpp>

namespace seed {

namespace fx = fusex;

// The RoPE backward as Thunder derives it from the forward's prims: each
// slice's VJP is a pad, the cat's VJP slices, and the pieces add up
// (fusex::ops::apply_rope_backward is the hand-derived, pad-free form).
template <class T, int R, class CS>
constexpr fx::tensor<T, R> rope_backward_from_prims(fx::tensor<T, R> dy, fx::tensor<CS, 2> cos, fx::tensor<CS, 2> sin,
                                                    fx::index n_elem) {
  auto like = [&](fx::tensor<CS, 2> cs) {
    fx::index shape[R];
    for (int i = 0; i < R; ++i) shape[i] = i == R - 2 ? cs.extent(0) : i == R - 1 ? cs.extent(1) : fx::index(1);
    return fx::convert<T>(fx::broadcast_in_dim<R - 2, R - 1>(cs, shape));
  };
  auto dr = fx::slice<R - 1>(dy, 0, n_elem);
  auto direct = dr * like(cos);
  auto drot = dr * like(sin);
  const fx::index half = n_elem / 2, rest = n_elem - n_elem / 2;
  // rotated = cat(-x2, x1): its first half flows to x2 (negated), its second to x1
  auto dx1 = fx::pad<R - 1>(fx::slice<R - 1>(drot, half, n_elem), 0, rest);
  auto dx2 = fx::pad<R - 1>(-fx::slice<R - 1>(drot, 0, half), half, 0);
  auto dxr = direct + dx1 + dx2;
  return fx::cat<R - 1>(dxr, fx::slice<R - 1>(dy, n_elem, dy.extent(R - 1)));
}

// dq (B, n_head, T, hs), dk, dv (B, n_query_groups, T, hs) -> dqkv (B, T, C),
// in the per-group layout (fusex::ops::qkv_layout::grouped).
template <class T, class CS>
constexpr fx::tensor<T, 3> qkv_backward_from_prims(fx::tensor<T, 4> dq, fx::tensor<T, 4> dk, fx::tensor<T, 4> dv,
                                                   fx::tensor<CS, 2> cos, fx::tensor<CS, 2> sin,
                                                   const fx::ops::rope_config& c) {
  const fx::index B = dq.extent(0), Tn = dq.extent(2);
  const fx::index q_per_kv = c.n_head / c.n_query_groups;
  auto q5 = fx::reshape(rope_backward_from_prims(dq, cos, sin, c.n_elem), {B, c.n_query_groups, q_per_kv, Tn, c.head_size});
  auto k5 = fx::unsqueeze<2>(rope_backward_from_prims(dk, cos, sin, c.n_elem));
  auto v5 = fx::unsqueeze<2>(dv);
  auto t = fx::cat<2>(q5, k5, v5);         // (B, G, q_per_kv + 2, T, hs)
  auto x = fx::permute<0, 3, 1, 2, 4>(t);  // (B, T, G, q_per_kv + 2, hs)
  return fx::reshape(x, {B, Tn, c.n_query_groups * (q_per_kv + 2) * c.head_size});
}

// dGeLU, exact erf form, as Thunder decomposes it: erf and exp apart
// (fusex::ops::gelu_backward uses the one prim dgelu), so that the seed's
// partitioning problem, a dozen elementwise nodes, stays as it was.
template <class T, int R>
constexpr fx::tensor<T, R> gelu_backward_from_prims(fx::tensor<T, R> x, fx::tensor<T, R> dy) {
  auto xf = fx::convert<float>(x);
  auto g = fx::convert<float>(dy);
  auto cdf = 0.5f * (fx::erf(xf * 0.70710678118654752f) + 1.0f);
  auto pdf = fx::exp(-0.5f * xf * xf) * 0.39894228040143268f;
  return fx::convert<T>(g * cdf + g * xf * pdf);
}

// dGeLU, bf16 in and out.
inline constexpr auto dgelu = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 2> dy) {
  return gelu_backward_from_prims(x, dy);
});

// LitGPT qkv split + RoPE forward with GQA (k, v expanded to n_head heads)
// and n_elem < head_size, in the per-group qkv layout of the litgpt the seed
// ran (0.5.0 - 0.5.4; see fusex::ops::qkv_layout).
inline constexpr auto rope_forward = fx::trace([](fx::tensor<fx::bf16, 3> qkv, fx::tensor<fx::bf16, 2> cos,
                                                  fx::tensor<fx::bf16, 2> sin, fx::index n_head,
                                                  fx::index n_query_groups, fx::index head_size, fx::index n_elem) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin,
                                       {n_head, n_query_groups, head_size, n_elem, fx::ops::qkv_layout::grouped});
});

// Its backward from prims (slice, pad, cat, add, reshape): dq (B, n_head, T, hs),
// dk, dv (B, n_query_groups, T, hs) -> dqkv.
inline constexpr auto rope_backward = fx::trace(
    [](fx::tensor<fx::bf16, 4> dq, fx::tensor<fx::bf16, 4> dk, fx::tensor<fx::bf16, 4> dv, fx::tensor<fx::bf16, 2> cos,
       fx::tensor<fx::bf16, 2> sin, fx::index n_head, fx::index n_query_groups, fx::index head_size,
       fx::index n_elem) {
      return qkv_backward_from_prims(dq, dk, dv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
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
      auto d_fc = gelu_backward_from_prims(fc, d_act); // (N, I)
      auto d_mlp = fx::matmul(d_fc, w_fc);             // (N, C)
      // attention branch: the RoPE backward's cat, then the qkv projection
      auto dqkv = qkv_backward_from_prims(dq, dk, dv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
      auto d2 = fx::reshape(dqkv, {dqkv.extent<0>() * dqkv.extent<1>(), dqkv.extent<2>()});
      auto d_attn = fx::matmul(d2, w_attn);            // (N, C)
      auto dx = fx::convert<float>(dy) + fx::convert<float>(d_mlp) + fx::convert<float>(d_attn);
      return fx::convert<fx::bf16>(dx);
    });

// Typical extents of parallel_residual_backward, for the planner
// (fusex/plan/extents.hpp). Arguments: dy (N, C), fc (N, I), w_proj (C, I),
// w_fc (I, C), dq (B, n_head, T, hs), dk, dv (B, groups, T, hs), cos, sin
// (T, n_elem), w_attn ((n_head + 2 groups) hs, C), then the index arguments.
struct residual_shape {
  std::int64_t B, T, C, I, n_head, groups, hs, n_elem;
};
constexpr fx::extent_hints residual_hints(residual_shape s) {
  const std::int64_t N = s.B * s.T, Cqkv = (s.n_head + 2 * s.groups) * s.hs;
  return fx::extent_hints{}
      .shape(0, {N, s.C})
      .shape(1, {N, s.I})
      .shape(2, {s.C, s.I})
      .shape(3, {s.I, s.C})
      .shape(4, {s.B, s.n_head, s.T, s.hs})
      .shape(5, {s.B, s.groups, s.T, s.hs})
      .shape(6, {s.B, s.groups, s.T, s.hs})
      .shape(7, {s.T, s.n_elem})
      .shape(8, {s.T, s.n_elem})
      .shape(9, {Cqkv, s.C})
      .value(10, s.n_head)
      .value(11, s.groups)
      .value(12, s.hs)
      .value(13, s.n_elem);
}
// Pythia-6.9b at T 2048 (litgpt config: n_embd 4096, intermediate 16384,
// 32 heads of 128, MHA, rotary_percentage 0.25) and the shapes of
// examples/seed_cases.cpp.
inline constexpr residual_shape pythia_6_9b{1, 2048, 4096, 16384, 32, 32, 128, 32};
inline constexpr residual_shape seed_case_shape{2, 64, 128, 512, 8, 2, 64, 16};

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
