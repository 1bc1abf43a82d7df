#pragma once
// dyn: a tensor handle whose dtype and rank are values rather than types.
// Autodiff rules and hand-derived backward formulas are written with it,
// because the transform meets dtypes and ranks as fields of the graph it
// walks. The arithmetic follows the typed API: a C++ number next to a tensor
// takes the tensor's compute dtype, binary results promote.

#include "emit.hpp"

namespace fusex::detail {

// The handle lives with its operations, so that argument-dependent lookup
// finds them from any namespace.
namespace dynops {
struct dyn {
  builder* b = nullptr;
  std::int32_t id = -1;

  constexpr const node& n() const { return b->nodes[id]; }
  constexpr dtype dt() const { return n().dt; }
  constexpr int rank() const { return n().rank; }
  constexpr std::int32_t extent(int axis) const { return n().shape[axis]; }
};

constexpr dyn lit(const dyn& like, double v) {
  const dtype d = is_floating(like.dt()) ? compute_dtype(like.dt()) : dtype::f32;
  return {like.b, constant_node(*like.b, d, v)};
}

constexpr dyn ew(op_kind k, dtype out, const dyn& a) {
  const std::int32_t ids[1] = {a.id};
  return {a.b, elementwise(*a.b, k, out, a.rank(), ids, 1)};
}
constexpr dyn ew(op_kind k, dtype out, const dyn& a, const dyn& c) {
  const std::int32_t ids[2] = {a.id, c.id};
  const int r = a.rank() > c.rank() ? a.rank() : c.rank();
  return {a.b, elementwise(*a.b, k, out, r, ids, 2)};
}

constexpr dyn convert(const dyn& x, dtype to) {
  if (x.dt() == to) return x;
  return ew(op_kind::convert, to, x);
}

constexpr dtype float_result(dtype d) { return is_floating(d) ? d : dtype::f32; }

#define FUSEX_DYN_UNARY(fn)                                                      \
  constexpr dyn fn(const dyn& x) { return ew(op_kind::fn, float_result(x.dt()), x); }
FUSEX_DYN_UNARY(exp)
FUSEX_DYN_UNARY(exp2)
FUSEX_DYN_UNARY(log)
FUSEX_DYN_UNARY(log1p)
FUSEX_DYN_UNARY(sqrt)
FUSEX_DYN_UNARY(rsqrt)
FUSEX_DYN_UNARY(reciprocal)
FUSEX_DYN_UNARY(erf)
FUSEX_DYN_UNARY(tanh)
FUSEX_DYN_UNARY(sin)
FUSEX_DYN_UNARY(cos)
FUSEX_DYN_UNARY(sigmoid)
FUSEX_DYN_UNARY(dgelu)
#undef FUSEX_DYN_UNARY

constexpr dyn operator-(const dyn& x) { return ew(op_kind::neg, x.dt(), x); }

// tensor (op) tensor, tensor (op) number, number (op) tensor
#define FUSEX_DYN_BINARY(sym, kind)                                                                             \
  constexpr dyn operator sym(const dyn& a, const dyn& c) { return ew(op_kind::kind, promote(a.dt(), c.dt()), a, c); } \
  constexpr dyn operator sym(const dyn& a, double s) { return ew(op_kind::kind, float_result(a.dt()), a, lit(a, s)); } \
  constexpr dyn operator sym(double s, const dyn& c) { return ew(op_kind::kind, float_result(c.dt()), lit(c, s), c); }
FUSEX_DYN_BINARY(+, add)
FUSEX_DYN_BINARY(-, sub)
FUSEX_DYN_BINARY(*, mul)
FUSEX_DYN_BINARY(/, div)
#undef FUSEX_DYN_BINARY

constexpr dyn pow(const dyn& a, const dyn& c) { return ew(op_kind::pow, promote(a.dt(), c.dt()), a, c); }

#define FUSEX_DYN_COMPARE(fn, kind)                                                          \
  constexpr dyn fn(const dyn& a, const dyn& c) { return ew(op_kind::kind, dtype::b8, a, c); } \
  constexpr dyn fn(const dyn& a, double s) { return ew(op_kind::kind, dtype::b8, a, lit(a, s)); }
FUSEX_DYN_COMPARE(eq, eq)
FUSEX_DYN_COMPARE(lt, lt)
FUSEX_DYN_COMPARE(gt, gt)
FUSEX_DYN_COMPARE(ge, ge)
#undef FUSEX_DYN_COMPARE

constexpr dyn where(const dyn& p, const dyn& a, const dyn& c) {
  const std::int32_t ids[3] = {p.id, a.id, c.id};
  int r = p.rank();
  if (a.rank() > r) r = a.rank();
  if (c.rank() > r) r = c.rank();
  return {p.b, elementwise(*p.b, op_kind::where, promote(a.dt(), c.dt()), r, ids, 3)};
}
constexpr dyn where(const dyn& p, const dyn& a, double s) {
  const dyn c = lit(a, s);
  const std::int32_t ids[3] = {p.id, a.id, c.id};
  const int r = p.rank() > a.rank() ? p.rank() : a.rank();
  return {p.b, elementwise(*p.b, op_kind::where, a.dt(), r, ids, 3)};
}
constexpr dyn where(const dyn& p, double s, const dyn& c) {
  const dyn a = lit(c, s);
  const std::int32_t ids[3] = {p.id, a.id, c.id};
  const int r = p.rank() > c.rank() ? p.rank() : c.rank();
  return {p.b, elementwise(*p.b, op_kind::where, c.dt(), r, ids, 3)};
}

// Reductions along one axis.
constexpr dyn sum(const dyn& x, int axis, bool keep) {
  const dtype out = is_floating(x.dt()) ? x.dt() : dtype::i64;
  return {x.b, reduction_node(*x.b, x.id, op_kind::sum, out, axis, keep)};
}
constexpr dyn mean(const dyn& x, int axis, bool keep) {
  return {x.b, reduction_node(*x.b, x.id, op_kind::var_mean, x.dt(), axis, keep, 2, 0)};
}

// Remaps.
constexpr dyn broadcast(const dyn& x, const int* dims, const std::int32_t* shape, int rank) {
  return {x.b, broadcast_node(*x.b, x.id, dims, shape, rank)};
}
constexpr dyn reshape(const dyn& x, const std::int32_t* shape, int rank) {
  return {x.b, reshape_node(*x.b, x.id, shape, rank)};
}
constexpr dyn permute(const dyn& x, const int* p) { return {x.b, permute_node(*x.b, x.id, p)}; }
constexpr dyn slice(const dyn& x, int axis, std::int32_t start, std::int32_t stop) {
  return {x.b, slice_node(*x.b, x.id, axis, start, stop, x.b->constant(1))};
}
constexpr dyn pad(const dyn& x, int axis, std::int32_t lo, std::int32_t hi) {
  return {x.b, pad_node(*x.b, x.id, axis, lo, hi, 0.0)};
}
constexpr dyn cat(const dyn* xs, int n, int axis) {
  std::int32_t ids[8] = {};
  dtype d = xs[0].dt();
  for (int k = 0; k < n; ++k) {
    ids[k] = xs[k].id;
    d = promote(d, xs[k].dt());
  }
  return {xs[0].b, cat_node(*xs[0].b, ids, n, axis, d)};
}
constexpr dyn cat(const dyn& a, const dyn& c, int axis) {
  const dyn xs[2] = {a, c};
  return cat(xs, 2, axis);
}
constexpr dyn matmul(const dyn& a, const dyn& c) { return {a.b, matmul_node(*a.b, a.id, c.id, promote(a.dt(), c.dt()))}; }

// Swaps the last two axes.
constexpr dyn transpose_last(const dyn& x) {
  int p[max_rank] = {};
  for (int i = 0; i < x.rank(); ++i) p[i] = i;
  p[x.rank() - 1] = x.rank() - 2;
  p[x.rank() - 2] = x.rank() - 1;
  return permute(x, p);
}

constexpr dyn zeros(builder& b, dtype dt, int rank, const std::int32_t* shape) {
  return {&b, full_node(b, dt, rank, shape, 0.0)};
}
constexpr dyn zeros_like(const dyn& x) { return zeros(*x.b, x.dt(), x.rank(), x.n().shape); }

// An index expression as a rank-0 value in the compute dtype of `like`.
constexpr dyn index_value(const dyn& like, std::int32_t e) {
  const dtype d = is_floating(like.dt()) ? compute_dtype(like.dt()) : dtype::f32;
  return {like.b, index_value_node(*like.b, d, e)};
}

// A (C) vector as (1, ..., 1, C) over rank-r rows (the affine weights of a norm).
constexpr dyn along_last_axis(const dyn& v, int r, std::int32_t c) {
  std::int32_t shape[max_rank] = {};
  for (int i = 0; i < r; ++i) shape[i] = i == r - 1 ? c : v.b->constant(1);
  const int dims[1] = {r - 1};
  return broadcast(v, dims, shape, r);
}

// Rows of a (..., C) tensor as (rows, C), rows the product of the leading extents.
constexpr dyn as_rows(const dyn& x) {
  builder& b = *x.b;
  const int r = x.rank();
  std::int32_t rows = b.constant(1);
  for (int i = 0; i + 1 < r; ++i) rows = b.binary(expr_kind::mul, rows, x.extent(i));
  const std::int32_t shape[2] = {rows, x.extent(r - 1)};
  return reshape(x, shape, 2);
}

}  // namespace dynops

using dynops::dyn;

}  // namespace fusex::detail
