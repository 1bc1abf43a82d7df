#pragma once
// Untyped node constructors over the recorder. The typed API (tensor<T, R>
// handles) checks dtypes and ranks with static_asserts and then calls these;
// the autodiff transform, which only knows dtypes and ranks as values of the
// graph it walks, calls them directly. One implementation of each prim's
// shape rules serves both.

#include <stdexcept>

#include "builder.hpp"

namespace fusex::detail {

inline void fusex_error_slice_bounds_out_of_range() { throw std::logic_error("fusex: slice bounds out of range"); }
inline void fusex_error_pad_width_negative() { throw std::logic_error("fusex: pad width negative"); }

// Result extents of an elementwise op: per axis, the first extent that is
// not statically 1; the others must equal it at run time.
constexpr void broadcast_extents(builder& b, const std::int32_t* ids, int n, int rank, std::int32_t* out) {
  for (int axis = 0; axis < rank; ++axis) {
    std::int32_t e = -1;
    for (int k = 0; k < n; ++k) {
      const node& x = b.nodes[ids[k]];
      if (x.rank == 0) continue;
      const std::int32_t ek = x.shape[axis];
      if (e == -1 || b.is_const(e, 1)) e = ek;
      else if (ek != e && !b.is_const(ek, 1)) b.unify(e, ek);
    }
    out[axis] = e;
  }
}

constexpr std::int32_t elementwise(builder& b, op_kind k, dtype out, int rank, const std::int32_t* ids, int n) {
  node nd;
  nd.op = k;
  nd.dt = out;
  nd.rank = static_cast<std::int8_t>(rank);
  broadcast_extents(b, ids, n, rank, nd.shape);
  return b.add(nd, ids, n);
}

constexpr std::int32_t constant_node(builder& b, dtype dt, double v) {
  node nd;
  nd.op = op_kind::constant;
  nd.dt = dt;
  nd.value = v;
  return b.add(nd, nullptr, 0);
}

constexpr std::int32_t numel_expr(builder& b, const node& n) {
  std::int32_t e = b.constant(1);
  for (int i = 0; i < n.rank; ++i) e = b.binary(expr_kind::mul, e, n.shape[i]);
  return e;
}

constexpr std::int32_t full_node(builder& b, dtype dt, int rank, const std::int32_t* shape, double value) {
  node nd;
  nd.op = op_kind::full;
  nd.dt = dt;
  nd.rank = static_cast<std::int8_t>(rank);
  nd.value = value;
  for (int i = 0; i < rank; ++i) nd.shape[i] = shape[i];
  return b.add(nd, nullptr, 0);
}

// A run-time index as a rank-0 value (an extent used in arithmetic).
constexpr std::int32_t index_value_node(builder& b, dtype dt, std::int32_t e) {
  if (b.is_const(e)) return constant_node(b, dt, static_cast<double>(b.exprs[e].value));
  node nd;
  nd.op = op_kind::index_value;
  nd.dt = dt;
  nd.iparam[0] = e;
  return b.add(nd, nullptr, 0);
}

// broadcast_in_dim: input axis j becomes output axis dims[j]. An input
// extent grows only when it is statically 1; any other must equal its output
// extent (so autodiff knows statically which axes it sums over).
constexpr std::int32_t broadcast_node(builder& b, std::int32_t x, const int* dims, const std::int32_t* shape, int ro) {
  const int r = b.nodes[x].rank;
  node nd;
  nd.op = op_kind::broadcast_in_dim;
  nd.dt = b.nodes[x].dt;
  nd.rank = static_cast<std::int8_t>(ro);
  for (int j = 0; j < r; ++j) nd.map[j] = static_cast<std::int8_t>(dims[j]);
  for (int i = 0; i < ro; ++i) nd.shape[i] = shape[i];
  bool identity = ro == r;
  for (int j = 0; j < r; ++j) {
    const std::int32_t in = b.nodes[x].shape[j], out = nd.shape[dims[j]];
    identity = identity && in == out;
    if (!b.is_const(in, 1) && in != out) b.unify(in, out);
  }
  if (identity) return x;
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// reshape to fully given extents (the typed API infers a -1 first).
constexpr std::int32_t reshape_node(builder& b, std::int32_t x, const std::int32_t* shape, int ro) {
  // A reshape of a reshape reads the original row-major order directly.
  if (b.nodes[x].op == op_kind::reshape) x = b.args[b.nodes[x].arg0];
  node nd;
  nd.op = op_kind::reshape;
  nd.dt = b.nodes[x].dt;
  nd.rank = static_cast<std::int8_t>(ro);
  for (int i = 0; i < ro; ++i) nd.shape[i] = shape[i];
  const std::int32_t in_count = numel_expr(b, b.nodes[x]);
  const std::int32_t out_count = numel_expr(b, nd);
  if (b.is_const(in_count) && b.is_const(out_count) && b.exprs[in_count].value != b.exprs[out_count].value)
    fusex_error_reshape_element_count_differs();
  bool identity = ro == b.nodes[x].rank;
  for (int i = 0; identity && i < ro; ++i) identity = nd.shape[i] == b.nodes[x].shape[i];
  if (identity) return x;
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// permute: output axis i is input axis p[i].
constexpr std::int32_t permute_node(builder& b, std::int32_t x, const int* p) {
  const int r = b.nodes[x].rank;
  node nd;
  nd.op = op_kind::permute;
  nd.dt = b.nodes[x].dt;
  nd.rank = static_cast<std::int8_t>(r);
  bool identity = true;
  for (int i = 0; i < r; ++i) {
    nd.map[i] = static_cast<std::int8_t>(p[i]);
    nd.shape[i] = b.nodes[x].shape[p[i]];
    identity = identity && p[i] == i;
  }
  if (identity) return x;
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// slice along axis a: start, start + step, ... below stop.
constexpr std::int32_t slice_node(builder& b, std::int32_t x, int a, std::int32_t s, std::int32_t e, std::int32_t st) {
  const std::int32_t ext = b.nodes[x].shape[a];
  if ((b.is_const(s) && b.exprs[s].value < 0) || (b.is_const(st) && b.exprs[st].value < 1) ||
      (b.is_const(s) && b.is_const(e) && b.exprs[e].value < b.exprs[s].value) ||
      (b.is_const(e) && b.is_const(ext) && b.exprs[e].value > b.exprs[ext].value))
    fusex_error_slice_bounds_out_of_range();
  if (s == b.constant(0) && e == ext && b.is_const(st, 1)) return x;
  node nd;
  nd.op = op_kind::slice;
  nd.dt = b.nodes[x].dt;
  nd.rank = b.nodes[x].rank;
  nd.axis = static_cast<std::int8_t>(a);
  for (int i = 0; i < nd.rank; ++i) nd.shape[i] = b.nodes[x].shape[i];
  const std::int32_t span = b.binary(expr_kind::sub, e, s);
  nd.shape[a] = b.is_const(st, 1) ? span
                                  : b.binary(expr_kind::div,
                                             b.binary(expr_kind::sub, b.binary(expr_kind::add, span, st), b.constant(1)), st);
  nd.iparam[0] = s;
  nd.iparam[1] = e;
  nd.iparam[2] = st;
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// pad along axis a with lo and hi elements of value.
constexpr std::int32_t pad_node(builder& b, std::int32_t x, int a, std::int32_t lo, std::int32_t hi, double value) {
  if ((b.is_const(lo) && b.exprs[lo].value < 0) || (b.is_const(hi) && b.exprs[hi].value < 0))
    fusex_error_pad_width_negative();
  if (b.is_const(lo, 0) && b.is_const(hi, 0)) return x;
  node nd;
  nd.op = op_kind::pad;
  nd.dt = b.nodes[x].dt;
  nd.rank = b.nodes[x].rank;
  nd.axis = static_cast<std::int8_t>(a);
  nd.value = value;
  for (int i = 0; i < nd.rank; ++i) nd.shape[i] = b.nodes[x].shape[i];
  nd.shape[a] = b.binary(expr_kind::add, b.binary(expr_kind::add, lo, nd.shape[a]), hi);
  nd.iparam[0] = lo;
  nd.iparam[1] = hi;
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// cat of n operands of one rank along axis a, in dtype out.
constexpr std::int32_t cat_node(builder& b, const std::int32_t* ids, int n, int a, dtype out) {
  node nd;
  nd.op = op_kind::cat;
  nd.dt = out;
  nd.rank = b.nodes[ids[0]].rank;
  nd.axis = static_cast<std::int8_t>(a);
  for (int i = 0; i < nd.rank; ++i) nd.shape[i] = b.nodes[ids[0]].shape[i];
  for (int k = 1; k < n; ++k) {
    const node& xk = b.nodes[ids[k]];
    for (int i = 0; i < nd.rank; ++i)
      if (i != a) b.unify(nd.shape[i], xk.shape[i]);
    nd.shape[a] = b.binary(expr_kind::add, nd.shape[a], xk.shape[a]);
  }
  return b.add(nd, ids, n);
}

// A reduction along axis a of x, removing the axis or keeping it as 1.
// flag bits beyond keepdim and the value are op-specific (var_mean).
constexpr std::int32_t reduction_node(builder& b, std::int32_t x, op_kind k, dtype out, int axis, bool keep,
                                      int flag_bits = 0, double value = 0) {
  const int r = b.nodes[x].rank;
  node nd;
  nd.op = k;
  nd.dt = out;
  nd.rank = static_cast<std::int8_t>(keep ? r : r - 1);
  nd.axis = static_cast<std::int8_t>(axis);
  nd.flag = static_cast<std::int8_t>((keep ? 1 : 0) | flag_bits);
  nd.value = value;
  for (int i = 0, j = 0; i < r; ++i) {
    if (i == axis) {
      if (keep) nd.shape[j++] = b.constant(1);
    } else {
      nd.shape[j++] = b.nodes[x].shape[i];
    }
  }
  const std::int32_t ids[1] = {x};
  return b.add(nd, ids, 1);
}

// Batched (..., M, K) x (..., K, N); a rank-2 right operand is shared.
constexpr std::int32_t matmul_node(builder& b, std::int32_t a, std::int32_t c, dtype out) {
  const int ra = b.nodes[a].rank, rb = b.nodes[c].rank;
  node nd;
  nd.op = op_kind::matmul;
  nd.dt = out;
  nd.rank = static_cast<std::int8_t>(ra);
  for (int i = 0; i < ra - 2; ++i) {
    std::int32_t e = b.nodes[a].shape[i];
    if (rb == ra) {
      const std::int32_t f = b.nodes[c].shape[i];
      if (b.is_const(e, 1)) e = f;
      else if (!b.is_const(f, 1) && f != e) b.unify(e, f);
    }
    nd.shape[i] = e;
  }
  nd.shape[ra - 2] = b.nodes[a].shape[ra - 2];
  nd.shape[ra - 1] = b.nodes[c].shape[rb - 1];
  b.unify(b.nodes[a].shape[ra - 1], b.nodes[c].shape[rb - 2]);
  const std::int32_t ids[2] = {a, c};
  return b.add(nd, ids, 2);
}

}  // namespace fusex::detail
