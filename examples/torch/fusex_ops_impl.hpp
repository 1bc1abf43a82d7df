#pragma once
// Definitions of fusex_torch::ops::op_set<T>, instantiated once per element
// type in its own translation unit (fusex_ops_f32.cpp, fusex_ops_bf16.cpp)
// so that the plans of each type compile in parallel.

#include "fusex_ops.hpp"

namespace fusex_torch::ops {

namespace detail {

// r (rank 3, leading dimensions merged) with x's leading dimensions back and
// `last` as its last extent.
inline at::Tensor like_rows(const at::Tensor& r, const at::Tensor& x, std::int64_t last) {
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  if (shape.empty()) shape.push_back(1);
  shape.back() = last;
  return r.view(shape);
}

inline void check_same_shape(const char* op, const at::Tensor& t, const char* name, const at::Tensor& x,
                             const char* xname) {
  if (!t.defined()) fail(op, name, " is an undefined tensor");
  if (t.sizes() != x.sizes()) fail(op, name, " has shape ", t.sizes(), ", ", xname, " has shape ", x.sizes());
}

inline void check_row_vector(const char* op, const at::Tensor& v, const char* name, const at::Tensor& x) {
  if (!v.defined()) fail(op, name, " is an undefined tensor");
  if (x.dim() < 1) fail(op, "x must have at least one dimension");
  if (v.dim() != 1 || v.size(0) != x.size(-1))
    fail(op, name, " has shape ", v.sizes(), ", expected [", x.size(-1), "] (x has shape ", x.sizes(),
         " and normalises its last dimension)");
}

inline void check_rows_stat(const char* op, const at::Tensor& s, const char* name, const at::Tensor& x) {
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = 1;
  if (!s.defined() || s.sizes() != at::IntArrayRef(shape))
    fail(op, name, " has shape ", s.defined() ? s.sizes() : at::IntArrayRef{}, ", expected ", at::IntArrayRef(shape),
         " (what the forward returned for x of shape ", x.sizes(), ")");
}

inline bool tanh_form(const char* op, const std::string& approximate) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  fail(op, "approximate must be 'none' or 'tanh', got '", approximate, "'");
}

inline void check_qkv(const char* op, const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                      std::int64_t n_head, std::int64_t groups, std::int64_t hs, std::int64_t n_elem) {
  if (!qkv.defined() || qkv.dim() != 3) fail(op, "qkv must have shape (B, T, C), got ", qkv.sizes());
  if (n_head <= 0 || groups <= 0 || n_head % groups != 0)
    fail(op, "n_head (", n_head, ") must be a positive multiple of n_query_groups (", groups, ")");
  if (hs <= 0) fail(op, "head_size must be positive, got ", hs);
  if (n_elem < 0 || n_elem > hs || n_elem % 2 != 0)
    fail(op, "n_elem (the rotary dims) must be even and in [0, head_size = ", hs, "], got ", n_elem);
  const std::int64_t c = (n_head + 2 * groups) * hs;
  if (qkv.size(2) != c)
    fail(op, "qkv has ", qkv.size(2), " features, expected (n_head + 2 * n_query_groups) * head_size = (", n_head,
         " + 2 * ", groups, ") * ", hs, " = ", c);
  const std::int64_t t = qkv.size(1);
  for (const auto& [cs, name] : {std::pair{&cos, "cos"}, std::pair{&sin, "sin"}})
    if (!cs->defined() || cs->dim() != 2 || cs->size(0) != t || cs->size(1) != n_elem)
      fail(op, name, " has shape ", cs->defined() ? cs->sizes() : at::IntArrayRef{}, ", expected [", t, ", ",
           n_elem, "] (T of qkv, n_elem)");
}

template <class Plan, class... A>
std::vector<at::Tensor> run(const char* op, Plan plan, const A&... a) {
  return fusex_torch::run(plan, op, a...);
}

}  // namespace detail

template <class T>
std::vector<at::Tensor> op_set<T>::gelu(const at::Tensor& x, const std::string& approximate) {
  constexpr const char* op = "fusex::gelu";
  const at::Tensor x3 = with_rank(x, 3, op, "x");
  auto r = detail::tanh_form(op, approximate)
               ? detail::run(op, fx::partition(fx::vjp(programs<T>::gelu_tanh).forward), x3)
               : detail::run(op, fx::partition(fx::vjp(programs<T>::gelu).forward), x3);
  return {r[0].view(x.sizes())};
}

template <class T>
at::Tensor op_set<T>::gelu_backward(const at::Tensor& x, const at::Tensor& y, const at::Tensor& dy,
                                    const std::string& approximate) {
  constexpr const char* op = "fusex::gelu_backward";
  detail::check_same_shape(op, y, "y", x, "x");
  detail::check_same_shape(op, dy, "dy", x, "x");
  const at::Tensor x3 = with_rank(x, 3, op, "x"), y3 = with_rank(y, 3, op, "y"), dy3 = with_rank(dy, 3, op, "dy");
  auto r = detail::tanh_form(op, approximate)
               ? detail::run(op, fx::partition(fx::vjp(programs<T>::gelu_tanh).backward), x3, y3, dy3)
               : detail::run(op, fx::partition(fx::vjp(programs<T>::gelu).backward), x3, y3, dy3);
  return r[0].view(x.sizes());
}

template <class T>
std::vector<at::Tensor> op_set<T>::swiglu(const at::Tensor& a, const at::Tensor& b) {
  constexpr const char* op = "fusex::swiglu";
  detail::check_same_shape(op, b, "b", a, "a");
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::swiglu).forward), with_rank(a, 3, op, "a"),
                       with_rank(b, 3, op, "b"));
  return {r[0].view(a.sizes())};
}

template <class T>
std::vector<at::Tensor> op_set<T>::swiglu_backward(const at::Tensor& a, const at::Tensor& b, const at::Tensor& y,
                                                   const at::Tensor& dy) {
  constexpr const char* op = "fusex::swiglu_backward";
  detail::check_same_shape(op, b, "b", a, "a");
  detail::check_same_shape(op, y, "y", a, "a");
  detail::check_same_shape(op, dy, "dy", a, "a");
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::swiglu).backward), with_rank(a, 3, op, "a"),
                       with_rank(b, 3, op, "b"), with_rank(y, 3, op, "y"), with_rank(dy, 3, op, "dy"));
  return {r[0].view(a.sizes()), r[1].view(a.sizes())};
}

template <class T>
std::vector<at::Tensor> op_set<T>::layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                              double eps) {
  constexpr const char* op = "fusex::layer_norm";
  detail::check_row_vector(op, w, "weight", x);
  detail::check_row_vector(op, b, "bias", x);
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::layer_norm).forward), with_rank(x, 3, op, "x"), w, b,
                       eps);
  return {r[0].view(x.sizes()), detail::like_rows(r[1], x, 1), detail::like_rows(r[2], x, 1)};
}

template <class T>
std::vector<at::Tensor> op_set<T>::layer_norm_backward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                                       double eps, const at::Tensor& y, const at::Tensor& mean,
                                                       const at::Tensor& rstd, const at::Tensor& dy) {
  constexpr const char* op = "fusex::layer_norm_backward";
  detail::check_row_vector(op, w, "weight", x);
  detail::check_row_vector(op, b, "bias", x);
  detail::check_same_shape(op, y, "y", x, "x");
  detail::check_same_shape(op, dy, "dy", x, "x");
  detail::check_rows_stat(op, mean, "mean", x);
  detail::check_rows_stat(op, rstd, "rstd", x);
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::layer_norm).backward), with_rank(x, 3, op, "x"), w, b,
                       eps, with_rank(y, 3, op, "y"), with_rank(mean, 3, op, "mean"), with_rank(rstd, 3, op, "rstd"),
                       with_rank(dy, 3, op, "dy"));
  return {r[0].view(x.sizes()), r[1], r[2]};
}

template <class T>
std::vector<at::Tensor> op_set<T>::rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  constexpr const char* op = "fusex::rms_norm";
  detail::check_row_vector(op, w, "weight", x);
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::rms_norm).forward), with_rank(x, 3, op, "x"), w, eps);
  return {r[0].view(x.sizes()), detail::like_rows(r[1], x, 1)};
}

template <class T>
std::vector<at::Tensor> op_set<T>::rms_norm_backward(const at::Tensor& x, const at::Tensor& w, double eps,
                                                     const at::Tensor& y, const at::Tensor& rstd,
                                                     const at::Tensor& dy) {
  constexpr const char* op = "fusex::rms_norm_backward";
  detail::check_row_vector(op, w, "weight", x);
  detail::check_same_shape(op, y, "y", x, "x");
  detail::check_same_shape(op, dy, "dy", x, "x");
  detail::check_rows_stat(op, rstd, "rstd", x);
  auto r = detail::run(op, fx::partition(fx::vjp(programs<T>::rms_norm).backward), with_rank(x, 3, op, "x"), w, eps,
                       with_rank(y, 3, op, "y"), with_rank(rstd, 3, op, "rstd"), with_rank(dy, 3, op, "dy"));
  return {r[0].view(x.sizes()), r[1]};
}

template <class T>
std::vector<at::Tensor> op_set<T>::qkv_split_rope(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                                                  std::int64_t n_head, std::int64_t groups, std::int64_t hs,
                                                  std::int64_t n_elem) {
  constexpr const char* op = "fusex::qkv_split_rope";
  detail::check_qkv(op, qkv, cos, sin, n_head, groups, hs, n_elem);
  return detail::run(op, fx::partition(fx::vjp<qkv_only>(programs<T>::qkv_split_rope).forward), qkv, cos, sin,
                     n_head, groups, hs, n_elem);
}

template <class T>
at::Tensor op_set<T>::qkv_split_rope_backward(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                                              std::int64_t n_head, std::int64_t groups, std::int64_t hs,
                                              std::int64_t n_elem, const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, const at::Tensor& dq, const at::Tensor& dk,
                                              const at::Tensor& dv) {
  constexpr const char* op = "fusex::qkv_split_rope_backward";
  detail::check_qkv(op, qkv, cos, sin, n_head, groups, hs, n_elem);
  const std::vector<std::int64_t> heads{qkv.size(0), n_head, qkv.size(1), hs};
  for (const auto& [t, name] : {std::pair{&q, "q"}, std::pair{&k, "k"}, std::pair{&v, "v"}, std::pair{&dq, "dq"},
                                std::pair{&dk, "dk"}, std::pair{&dv, "dv"}})
    if (!t->defined() || t->sizes() != at::IntArrayRef(heads))
      fail(op, name, " has shape ", t->defined() ? t->sizes() : at::IntArrayRef{}, ", expected ",
           at::IntArrayRef(heads), " (B, n_head, T, head_size)");
  return detail::run(op, fx::partition(fx::vjp<qkv_only>(programs<T>::qkv_split_rope).backward), qkv, cos, sin,
                     n_head, groups, hs, n_elem, q, k, v, dq, dk, dv)[0];
}

}  // namespace fusex_torch::ops
