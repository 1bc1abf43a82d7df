#pragma once
// The Pythia and LLaMA blocks as traced programs, and their vjps: shared by
// the block examples, the litgpt tests and the benchmarks. The arguments are
// x, cos, sin, then the parameters in litgpt's state-dict order, then the
// attention extents (n_head, n_query_groups, head_size, rope_n_elem).

#include <fusex/fusex.hpp>
#include <fusex/models/litgpt.hpp>

namespace blocks {

namespace fx = fusex;

template <class T, fx::ops::qkv_layout L = fx::ops::qkv_layout::blocks>
inline constexpr auto pythia = fx::trace(
    [](fx::tensor<T, 3> x, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::tensor<T, 1> norm_1_w,
       fx::tensor<T, 1> norm_1_b, fx::tensor<T, 2> qkv_w, fx::tensor<T, 1> qkv_b, fx::tensor<T, 2> proj_w,
       fx::tensor<T, 1> proj_b, fx::tensor<T, 1> norm_2_w, fx::tensor<T, 1> norm_2_b, fx::tensor<T, 2> fc_w,
       fx::tensor<T, 1> fc_b, fx::tensor<T, 2> mlp_proj_w, fx::tensor<T, 1> mlp_proj_b, fx::index n_head,
       fx::index n_query_groups, fx::index head_size, fx::index rope_n_elem) {
      const fx::models::pythia_params<T> p{norm_1_w, norm_1_b, qkv_w,    qkv_b, proj_w,     proj_b,
                                           norm_2_w, norm_2_b, fc_w,     fc_b,  mlp_proj_w, mlp_proj_b};
      return fx::models::pythia_block(x, cos, sin, p, {n_head, n_query_groups, head_size, rope_n_elem, 1e-5, L});
    });

template <class T, fx::ops::qkv_layout L = fx::ops::qkv_layout::blocks>
inline constexpr auto llama = fx::trace(
    [](fx::tensor<T, 3> x, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::tensor<T, 1> norm_1_w,
       fx::tensor<T, 2> qkv_w, fx::tensor<T, 2> proj_w, fx::tensor<T, 1> norm_2_w, fx::tensor<T, 2> fc_1_w,
       fx::tensor<T, 2> fc_2_w, fx::tensor<T, 2> mlp_proj_w, fx::index n_head, fx::index n_query_groups,
       fx::index head_size, fx::index rope_n_elem) {
      const fx::models::llama_params<T> p{norm_1_w, qkv_w, proj_w, norm_2_w, fc_1_w, fc_2_w, mlp_proj_w};
      return fx::models::llama_block(x, cos, sin, p, {n_head, n_query_groups, head_size, rope_n_elem, 1e-5, L});
    });

// cos and sin are buffers in litgpt: gradients for x and every parameter.
inline constexpr fx::vjp_options pythia_wrt{.wrt = fx::wrt({0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})};
inline constexpr fx::vjp_options llama_wrt{.wrt = fx::wrt({0, 3, 4, 5, 6, 7, 8, 9})};

template <class T, fx::ops::qkv_layout L = fx::ops::qkv_layout::blocks>
inline constexpr auto pythia_grad = fx::vjp<pythia_wrt>(pythia<T, L>);
template <class T, fx::ops::qkv_layout L = fx::ops::qkv_layout::blocks>
inline constexpr auto llama_grad = fx::vjp<llama_wrt>(llama<T, L>);

}  // namespace blocks
