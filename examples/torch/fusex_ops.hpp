#pragma once
// The fusex operators PyTorch sees (torch.ops.fusex.*): each composite op's
// vjp as a forward and a backward plan, for one element type T. Norms and
// activations are planned at rank 3, LitGPT's (B, T, C); inputs of other
// ranks are viewed as rank 3 without a copy (fusex_torch::with_rank) and the
// results get the caller's shape back.

#include <string>
#include <vector>

#include "fusex_torch.hpp"

namespace fusex_torch::ops {

template <class T>
struct programs {
  static constexpr auto gelu = fx::trace([](fx::tensor<T, 3> x) { return fx::ops::gelu(x); });
  static constexpr auto gelu_tanh = fx::trace([](fx::tensor<T, 3> x) { return fx::ops::gelu_tanh(x); });
  static constexpr auto swiglu = fx::trace([](fx::tensor<T, 3> a, fx::tensor<T, 3> b) { return fx::ops::swiglu(a, b); });
  static constexpr auto layer_norm = fx::trace([](fx::tensor<T, 3> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b,
                                                  fx::scalar<float> eps) { return fx::ops::layer_norm(x, w, b, eps).y; });
  static constexpr auto rms_norm = fx::trace(
      [](fx::tensor<T, 3> x, fx::tensor<T, 1> w, fx::scalar<float> eps) { return fx::ops::rms_norm(x, w, eps); });
  // k and v expanded to n_head heads, as litgpt's training path does.
  static constexpr auto qkv_split_rope =
      fx::trace([](fx::tensor<T, 3> qkv, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::index n_head,
                   fx::index n_query_groups, fx::index head_size, fx::index n_elem) {
        return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, n_query_groups, head_size, n_elem});
      });
};

// Gradients for qkv only: cos and sin are buffers in LitGPT.
inline constexpr fx::vjp_options qkv_only{.wrt = fx::wrt({0})};

template <class T>
struct op_set {
  static std::vector<at::Tensor> gelu(const at::Tensor& x, const std::string& approximate);
  static at::Tensor gelu_backward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& dy,
                                  const std::string& approximate);
  static std::vector<at::Tensor> swiglu(const at::Tensor& a, const at::Tensor& b);
  static std::vector<at::Tensor> swiglu_backward(const at::Tensor& a, const at::Tensor& b, const at::Tensor& y,
                                                 const at::Tensor& dy);
  static std::vector<at::Tensor> layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps);
  static std::vector<at::Tensor> layer_norm_backward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                                     double eps, const at::Tensor& y, const at::Tensor& mean,
                                                     const at::Tensor& rstd, const at::Tensor& dy);
  static std::vector<at::Tensor> rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);
  static std::vector<at::Tensor> rms_norm_backward(const at::Tensor& x, const at::Tensor& w, double eps,
                                                   const at::Tensor& y, const at::Tensor& rstd, const at::Tensor& dy);
  static std::vector<at::Tensor> qkv_split_rope(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                                                std::int64_t n_head, std::int64_t n_query_groups,
                                                std::int64_t head_size, std::int64_t n_elem);
  static at::Tensor qkv_split_rope_backward(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                                            std::int64_t n_head, std::int64_t n_query_groups, std::int64_t head_size,
                                            std::int64_t n_elem, const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v, const at::Tensor& dq, const at::Tensor& dk,
                                            const at::Tensor& dv);
};

}  // namespace fusex_torch::ops
