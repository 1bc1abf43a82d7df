#pragma once
// matmul: batched (..., M, K) x (..., K, N) -> (..., M, N). An opaque prim:
// the planner gives it a group of its own, run by cuBLAS or a host BLAS.
// A rank-2 right operand is shared across the batch (x @ W).

#include "emit.hpp"
#include "tensor.hpp"

namespace fusex {

template <class A, int RA, class B, int RB>
constexpr auto matmul(tensor<A, RA> a, tensor<B, RB> b) {
  static_assert(RA >= 2 && RB >= 2, "fusex::matmul: operands must have rank >= 2");
  static_assert(RA == RB || RB == 2, "fusex::matmul: the right operand must have the left's rank, or rank 2");
  static_assert(is_floating(dtype_v<A>) && is_floating(dtype_v<B>),
                "fusex::matmul: operands must be floating point");
  constexpr dtype out = promote(dtype_v<A>, dtype_v<B>);
  return tensor<detail::type_of<out>, RA>{a.b_, detail::matmul_node(*a.b_, a.id_, b.id_, out)};
}

}  // namespace fusex
