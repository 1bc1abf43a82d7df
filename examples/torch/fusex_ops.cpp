// torch.ops.fusex: the schemas and the CPU (and, built with nvcc, CUDA)
// kernels of the fusex operators. Each forward returns its outputs and then
// what its backward needs; autograd and the fake (meta) kernels are
// registered from Python (fusex_torch/__init__.py), where torch.compile
// looks for them.

#include <torch/library.h>

#include <tuple>

#include "fusex_ops.hpp"

namespace {

using namespace fusex_torch;
using at::Tensor;

// Runs f on the op_set of x's dtype.
template <class F>
auto on_dtype(const char* op, const Tensor& x, F&& f) {
  if (!x.defined()) fail(op, "the first argument is an undefined tensor");
  switch (x.scalar_type()) {
    case at::kFloat: return f(ops::op_set<float>{});
    case at::kBFloat16: return f(ops::op_set<fx::bf16>{});
    default: fail(op, "tensors of dtype ", x.scalar_type(), " are not supported (float32 or bfloat16)");
  }
}

template <std::size_t... I>
auto as_tuple(std::vector<Tensor> v, std::index_sequence<I...>) {
  return std::tuple{std::move(v[I])...};
}
template <std::size_t N>
auto as_tuple(std::vector<Tensor> v) {
  return as_tuple(std::move(v), std::make_index_sequence<N>{});
}

Tensor gelu(const Tensor& x, c10::string_view approximate) {
  return on_dtype("fusex::gelu", x, [&](auto s) { return s.gelu(x, std::string(approximate))[0]; });
}
Tensor gelu_backward(const Tensor& x, const Tensor& y, const Tensor& dy, c10::string_view approximate) {
  return on_dtype("fusex::gelu_backward", x,
                  [&](auto s) { return s.gelu_backward(x, y, dy, std::string(approximate)); });
}
Tensor swiglu(const Tensor& a, const Tensor& b) {
  return on_dtype("fusex::swiglu", a, [&](auto s) { return s.swiglu(a, b)[0]; });
}
std::tuple<Tensor, Tensor> swiglu_backward(const Tensor& a, const Tensor& b, const Tensor& y, const Tensor& dy) {
  return on_dtype("fusex::swiglu_backward", a, [&](auto s) { return as_tuple<2>(s.swiglu_backward(a, b, y, dy)); });
}
std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  return on_dtype("fusex::layer_norm", x, [&](auto s) { return as_tuple<3>(s.layer_norm(x, w, b, eps)); });
}
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& x, const Tensor& w, const Tensor& b, double eps,
                                                       const Tensor& y, const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& dy) {
  return on_dtype("fusex::layer_norm_backward", x,
                  [&](auto s) { return as_tuple<3>(s.layer_norm_backward(x, w, b, eps, y, mean, rstd, dy)); });
}
std::tuple<Tensor, Tensor> rms_norm(const Tensor& x, const Tensor& w, double eps) {
  return on_dtype("fusex::rms_norm", x, [&](auto s) { return as_tuple<2>(s.rms_norm(x, w, eps)); });
}
std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor& x, const Tensor& w, double eps, const Tensor& y,
                                             const Tensor& rstd, const Tensor& dy) {
  return on_dtype("fusex::rms_norm_backward", x,
                  [&](auto s) { return as_tuple<2>(s.rms_norm_backward(x, w, eps, y, rstd, dy)); });
}
std::tuple<Tensor, Tensor, Tensor> qkv_split_rope(const Tensor& qkv, const Tensor& cos, const Tensor& sin,
                                                  std::int64_t n_head, std::int64_t groups, std::int64_t hs,
                                                  std::int64_t n_elem) {
  return on_dtype("fusex::qkv_split_rope", qkv, [&](auto s) {
    return as_tuple<3>(s.qkv_split_rope(qkv, cos, sin, n_head, groups, hs, n_elem));
  });
}
Tensor qkv_split_rope_backward(const Tensor& qkv, const Tensor& cos, const Tensor& sin, std::int64_t n_head,
                               std::int64_t groups, std::int64_t hs, std::int64_t n_elem, const Tensor& q,
                               const Tensor& k, const Tensor& v, const Tensor& dq, const Tensor& dk,
                               const Tensor& dv) {
  return on_dtype("fusex::qkv_split_rope_backward", qkv, [&](auto s) {
    return s.qkv_split_rope_backward(qkv, cos, sin, n_head, groups, hs, n_elem, q, k, v, dq, dk, dv);
  });
}

template <class M>
void implement(M& m) {
  m.impl("gelu", &gelu);
  m.impl("gelu_backward", &gelu_backward);
  m.impl("swiglu", &swiglu);
  m.impl("swiglu_backward", &swiglu_backward);
  m.impl("layer_norm", &layer_norm);
  m.impl("layer_norm_backward", &layer_norm_backward);
  m.impl("rms_norm", &rms_norm);
  m.impl("rms_norm_backward", &rms_norm_backward);
  m.impl("qkv_split_rope", &qkv_split_rope);
  m.impl("qkv_split_rope_backward", &qkv_split_rope_backward);
}

}  // namespace

TORCH_LIBRARY(fusex, m) {
  m.def("gelu(Tensor x, str approximate='none') -> Tensor");
  m.def("gelu_backward(Tensor x, Tensor y, Tensor dy, str approximate='none') -> Tensor");
  m.def("swiglu(Tensor a, Tensor b) -> Tensor");
  m.def("swiglu_backward(Tensor a, Tensor b, Tensor y, Tensor dy) -> (Tensor, Tensor)");
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)");
  m.def(
      "layer_norm_backward(Tensor x, Tensor weight, Tensor bias, float eps, Tensor y, Tensor mean, Tensor rstd, "
      "Tensor dy) -> (Tensor, Tensor, Tensor)");
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)");
  m.def(
      "rms_norm_backward(Tensor x, Tensor weight, float eps, Tensor y, Tensor rstd, Tensor dy) -> (Tensor, Tensor)");
  m.def(
      "qkv_split_rope(Tensor qkv, Tensor cos, Tensor sin, int n_head, int n_query_groups, int head_size, int n_elem)"
      " -> (Tensor, Tensor, Tensor)");
  m.def(
      "qkv_split_rope_backward(Tensor qkv, Tensor cos, Tensor sin, int n_head, int n_query_groups, int head_size, "
      "int n_elem, Tensor q, Tensor k, Tensor v, Tensor dq, Tensor dk, Tensor dv) -> Tensor");
}

TORCH_LIBRARY_IMPL(fusex, CPU, m) { implement(m); }
#ifdef FUSEX_TORCH_CUDA
TORCH_LIBRARY_IMPL(fusex, CUDA, m) { implement(m); }
#endif
