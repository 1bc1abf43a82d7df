#pragma once
// Vector-Jacobian products of the prims. Each rule reads the cotangent of
// node n and adds a contribution to each operand that carries a gradient;
// forward values come from vjp_context::fwd (recomputed or saved).
//
//   broadcast_in_dim -> sum over the new and the grown axes
//   slice -> pad (with a step: interleave zeros, then pad)
//   pad -> slice,  cat -> slices,  reshape and transpose -> their inverses
//   sum -> broadcast,  amax -> to the maxima, shared among ties
//   var_mean -> 2 (x - mean) / (n - correction) and 1 / n
//   matmul -> two matmuls with the other operand transposed
//   where -> the cotangent where the branch was taken
//   convert -> convert back

#include "context.hpp"

namespace fusex::detail {

template <graph_sizes S>
constexpr void prim_vjp(vjp_context<S>& cx, int n) {
  using namespace dynops;
  const graph<S>& f = cx.f;
  const node& nd = f.nodes[n];
  const dyn g = cx.val(cx.cot[n]);
  auto u = [&](int k) { return f.operand(n, k); };
  auto need = [&](int k) { return cx.needs[u(k)] != 0; };
  auto x = [&](int k) { return cx.fwd(u(k)); };
  auto y = [&] { return cx.fwd(n); };
  // elementwise: the operand's share of a broadcast result
  auto give = [&](int k, dyn c) { cx.acc(u(k), cx.unbroadcast(c, u(k), n)); };
  // the reduced value of a reduction as keepdim (..., 1, ...)
  auto keep_form = [&](dyn v) {
    if (nd.flag & 1) return v;
    const int r = nd.rank + 1;
    std::int32_t shape[max_rank] = {};
    int dims[max_rank] = {};
    for (int i = 0, j = 0; i < r; ++i) {
      if (i == nd.axis) {
        shape[i] = cx.b.constant(1);
      } else {
        shape[i] = nd.shape[j];
        dims[j++] = i;
      }
    }
    return broadcast(v, dims, shape, r);
  };
  // a keepdim value broadcast back to operand u's shape
  auto expand_to_operand = [&](dyn v) {
    const node& un = f.nodes[u(0)];
    int dims[max_rank] = {};
    for (int i = 0; i < un.rank; ++i) dims[i] = i;
    return broadcast(v, dims, un.shape, un.rank);
  };

  switch (nd.op) {
    case op_kind::convert: cx.acc(u(0), g); break;
    case op_kind::neg: give(0, -g); break;
    case op_kind::abs: give(0, where(gt(x(0), 0.0), g, where(lt(x(0), 0.0), -g, 0.0))); break;
    case op_kind::exp: give(0, g * y()); break;
    case op_kind::exp2: give(0, g * y() * 0.69314718055994530942); break;
    case op_kind::log: give(0, g / x(0)); break;
    case op_kind::log1p: give(0, g / (x(0) + 1.0)); break;
    case op_kind::sqrt: give(0, g / y() * 0.5); break;
    case op_kind::rsqrt: give(0, g * -0.5 * y() * y() * y()); break;
    case op_kind::reciprocal: give(0, -(g * y() * y())); break;
    case op_kind::erf: give(0, g * 1.12837916709551257390 * exp(-(x(0) * x(0)))); break;
    case op_kind::tanh: give(0, g * (1.0 - y() * y())); break;
    case op_kind::sin: give(0, g * cos(x(0))); break;
    case op_kind::cos: give(0, -(g * sin(x(0)))); break;
    case op_kind::sigmoid: give(0, g * y() * (1.0 - y())); break;
    // d2 gelu / dx2 = phi(x) (2 - x^2)
    case op_kind::dgelu: give(0, g * (exp(-0.5 * (x(0) * x(0))) * 0.39894228040143267794) * (2.0 - x(0) * x(0))); break;
    case op_kind::add:
      if (need(0)) give(0, g);
      if (need(1)) give(1, g);
      break;
    case op_kind::sub:
      if (need(0)) give(0, g);
      if (need(1)) give(1, -g);
      break;
    case op_kind::mul:
      if (need(0)) give(0, g * x(1));
      if (need(1)) give(1, g * x(0));
      break;
    case op_kind::div:
      if (need(0)) give(0, g / x(1));
      if (need(1)) give(1, -(g * y()) / x(1));
      break;
    case op_kind::pow:
      // 0 where the formula is 0 * inf: b = 0 for da, a = 0 for db
      if (need(0)) give(0, where(eq(x(1), 0.0), 0.0, g * x(1) * pow(x(0), x(1) - 1.0)));
      if (need(1)) give(1, where(eq(x(0), 0.0), 0.0, g * y() * log(x(0))));
      break;
    case op_kind::maximum:
    case op_kind::minimum: {
      // the larger (smaller) operand takes the cotangent; ties share it
      const bool mx = nd.op == op_kind::maximum;
      const dyn tie = where(eq(x(0), x(1)), g * 0.5, 0.0);
      if (need(0)) give(0, where(mx ? gt(x(0), x(1)) : lt(x(0), x(1)), g, tie));
      if (need(1)) give(1, where(mx ? lt(x(0), x(1)) : gt(x(0), x(1)), g, tie));
      break;
    }
    case op_kind::where:
      if (need(1)) give(1, where(x(0), g, 0.0));
      if (need(2)) give(2, where(x(0), 0.0, g));
      break;

    case op_kind::broadcast_in_dim: {
      const node& un = f.nodes[u(0)];
      bool red[max_rank] = {};
      for (int i = 0; i < nd.rank; ++i) red[i] = true;  // new axes
      for (int j = 0; j < un.rank; ++j) {
        const int i = nd.map[j];
        if (f.same_extent(un.shape[j], nd.shape[i])) red[i] = false;
        else if (!f.is_const(un.shape[j], 1)) fusex_internal_vjp_broadcast_extent_not_unified();
      }
      cx.acc(u(0), cx.sum_axes(g, red, un.shape, un.rank));
      break;
    }
    case op_kind::reshape: {
      const node& un = f.nodes[u(0)];
      cx.acc(u(0), cx.reshape_to(g, un.shape, un.rank));
      break;
    }
    case op_kind::permute: {
      int inv[max_rank] = {};
      for (int i = 0; i < nd.rank; ++i) inv[nd.map[i]] = i;
      cx.acc(u(0), permute(g, inv));
      break;
    }
    case op_kind::slice: {
      builder& b = cx.b;
      const int a = nd.axis;
      const std::int32_t s = nd.iparam[0], e = nd.iparam[1], st = nd.iparam[2];
      const std::int32_t E = f.nodes[u(0)].shape[a];
      if (f.is_const(st, 1)) {
        cx.acc(u(0), pad(g, a, s, b.binary(expr_kind::sub, E, e)));
        break;
      }
      // step > 1: put step - 1 zeros after each element (a new axis padded,
      // then merged), then trim or extend to E - start and pad start zeros
      const int r = nd.rank;
      std::int32_t shape[max_rank + 1] = {};
      int dims[max_rank] = {};
      for (int i = 0, j = 0; i <= r; ++i) {
        if (i == a + 1) {
          shape[i] = b.constant(1);
        } else {
          shape[i] = g.extent(j);
          dims[j++] = i;
        }
      }
      dyn z = broadcast(g, dims, shape, r + 1);
      z = pad(z, a + 1, b.constant(0), b.binary(expr_kind::sub, st, b.constant(1)));
      std::int32_t flat[max_rank] = {};
      for (int i = 0; i < r; ++i) flat[i] = i == a ? b.binary(expr_kind::mul, g.extent(a), st) : g.extent(i);
      z = reshape(z, flat, r);
      const std::int32_t L = b.binary(expr_kind::sub, E, s);
      z = slice(pad(z, a, b.constant(0), L), a, b.constant(0), L);
      cx.acc(u(0), pad(z, a, s, b.constant(0)));
      break;
    }
    case op_kind::pad: {
      const std::int32_t lo = nd.iparam[0];
      const std::int32_t E = f.nodes[u(0)].shape[nd.axis];
      cx.acc(u(0), slice(g, nd.axis, lo, cx.b.binary(expr_kind::add, lo, E)));
      break;
    }
    case op_kind::cat: {
      std::int32_t off = cx.b.constant(0);
      for (int k = 0; k < nd.nargs; ++k) {
        const std::int32_t end = cx.b.binary(expr_kind::add, off, f.nodes[u(k)].shape[nd.axis]);
        if (need(k)) cx.acc(u(k), slice(g, nd.axis, off, end));
        off = end;
      }
      break;
    }

    case op_kind::sum: {
      const node& un = f.nodes[u(0)];
      int dims[max_rank] = {};
      for (int j = 0; j < nd.rank; ++j) dims[j] = (nd.flag & 1) || j < nd.axis ? j : j + 1;
      cx.acc(u(0), broadcast(g, dims, un.shape, un.rank));
      break;
    }
    case op_kind::amax: {
      const dyn mask = eq(x(0), keep_form(y()));
      const dyn count = sum(convert(mask, g.dt() == dtype::f64 ? dtype::f64 : dtype::f32), nd.axis, true);
      cx.acc(u(0), where(mask, keep_form(g) / count, 0.0));
      break;
    }
    case op_kind::var_mean: {
      const node& un = f.nodes[u(0)];
      const dyn count = index_value(g, un.shape[nd.axis]);
      const dyn gk = expand_to_operand(keep_form(g));
      if (nd.flag & 2) {  // the mean
        cx.acc(u(0), gk / count);
        break;
      }
      // the variance: needs the mean, saved when the forward computed it
      dyn m{};
      for (int v = 0; v < S.nodes && m.id < 0; ++v) {
        const node& c = f.nodes[v];
        if (c.op == op_kind::var_mean && (c.flag & 2) && c.axis == nd.axis && f.operand(v, 0) == u(0)) {
          m = cx.fwd(v);
          if (!(c.flag & 1)) {
            // keep_form for a reduction without keepdim
            const int r = un.rank;
            std::int32_t shape[max_rank] = {};
            int dims[max_rank] = {};
            for (int i = 0, j = 0; i < r; ++i) {
              if (i == nd.axis) shape[i] = cx.b.constant(1);
              else {
                shape[i] = un.shape[i];
                dims[j++] = i;
              }
            }
            m = broadcast(m, dims, shape, r);
          }
        }
      }
      if (m.id < 0) m = mean(x(0), nd.axis, true);
      cx.acc(u(0), gk * (2.0 * (x(0) - m)) / (count - nd.value));
      break;
    }

    case op_kind::matmul: {
      const node& an = f.nodes[u(0)];
      const node& bn = f.nodes[u(1)];
      const int ra = an.rank, rb = bn.rank;
      if (need(0)) {
        dyn da = matmul(g, transpose_last(x(1)));
        bool red[max_rank] = {};
        if (rb == ra)
          for (int i = 0; i + 2 < ra; ++i) red[i] = f.is_const(an.shape[i], 1) && !f.is_const(nd.shape[i], 1);
        cx.acc(u(0), cx.sum_axes(da, red, an.shape, ra));
      }
      if (need(1)) {
        if (rb == ra) {
          dyn db = matmul(transpose_last(x(0)), g);
          bool red[max_rank] = {};
          for (int i = 0; i + 2 < rb; ++i) red[i] = f.is_const(bn.shape[i], 1) && !f.is_const(nd.shape[i], 1);
          cx.acc(u(1), cx.sum_axes(db, red, bn.shape, rb));
        } else {
          // a rank-2 right operand shared across the batch: fold the batch into rows
          cx.acc(u(1), matmul(transpose_last(as_rows(x(0))), as_rows(g)));
        }
      }
      break;
    }
    default: break;  // sources, comparisons: no gradient
  }
}

}  // namespace fusex::detail
