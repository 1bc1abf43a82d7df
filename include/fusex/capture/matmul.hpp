#pragma once
// matmul: batched (..., M, K) x (..., K, N) -> (..., M, N). An opaque prim:
// the planner gives it a group of its own, run by cuBLAS or a host BLAS.
// A rank-2 right operand is shared across the batch (x @ W).

#include "tensor.hpp"

namespace fusex {

template <class A, int RA, class B, int RB>
constexpr auto matmul(tensor<A, RA> a, tensor<B, RB> b) {
  static_assert(RA >= 2 && RB >= 2, "fusex::matmul: operands must have rank >= 2");
  static_assert(RA == RB || RB == 2, "fusex::matmul: the right operand must have the left's rank, or rank 2");
  static_assert(is_floating(dtype_v<A>) && is_floating(dtype_v<B>),
                "fusex::matmul: operands must be floating point");
  constexpr dtype out = promote(dtype_v<A>, dtype_v<B>);
  detail::builder& bl = *a.b_;
  const node& x = bl.nodes[a.id_];
  const node& y = bl.nodes[b.id_];
  node nd;
  nd.op = op_kind::matmul;
  nd.dt = out;
  nd.rank = RA;
  for (int i = 0; i < RA - 2; ++i) {
    std::int32_t e = x.shape[i];
    if constexpr (RB == RA) {
      const std::int32_t f = y.shape[i];
      if (bl.is_const(e, 1)) e = f;
      else if (!bl.is_const(f, 1) && f != e) bl.unify(e, f);
    }
    nd.shape[i] = e;
  }
  nd.shape[RA - 2] = x.shape[RA - 2];
  nd.shape[RA - 1] = y.shape[RB - 1];
  bl.unify(x.shape[RA - 1], y.shape[RB - 2]);
  const std::int32_t ids[2] = {a.id_, b.id_};
  return tensor<detail::type_of<out>, RA>{a.b_, bl.add(nd, ids, 2)};
}

}  // namespace fusex
