#pragma once
// Elementwise prims: convert_element_type, unary math, binary arithmetic and
// comparisons, where. Operands of equal rank broadcast along extents that are
// statically 1; other extents must agree at run time. A rank-0 operand (a
// C++ number, a scalar argument) broadcasts to any shape.

#include <type_traits>

#include "emit.hpp"
#include "tensor.hpp"

namespace fusex {

namespace detail {

template <class T>
using element_of = typename T::value_type;

template <dtype D>
using type_of = storage_t<D>;

// A C++ number next to a tensor is "weak": it takes the tensor's dtype (or
// f32 next to an integer tensor when it is floating), as PyTorch does.
template <class T, class S>
constexpr dtype weak_scalar_dtype() {
  constexpr dtype t = dtype_v<T>;
  if constexpr (std::is_floating_point_v<S>) return is_floating(t) ? compute_dtype(t) : dtype::f32;
  else if constexpr (std::is_same_v<S, bool>) return t == dtype::b8 ? dtype::b8 : t;
  else return is_floating(t) ? compute_dtype(t) : (t == dtype::b8 ? dtype::i64 : t);
}
template <class T, class S>
constexpr dtype weak_result_dtype() {
  constexpr dtype t = dtype_v<T>;
  if constexpr (std::is_floating_point_v<S>) return is_floating(t) ? t : dtype::f32;
  else return t == dtype::b8 ? weak_scalar_dtype<T, S>() : t;
}

template <class S>
inline constexpr bool is_number_v = std::is_arithmetic_v<S>;

template <op_kind K, dtype Out, class A, int RA, class B, int RB>
constexpr auto binary(tensor<A, RA> a, tensor<B, RB> b) {
  constexpr int R = RA > RB ? RA : RB;
  builder& bl = *(a.b_ ? a.b_ : b.b_);
  const std::int32_t ids[2] = {a.id_, b.id_};
  return tensor<type_of<Out>, R>{&bl, elementwise(bl, K, Out, R, ids, 2)};
}
template <op_kind K, dtype Out, bool ScalarFirst, class A, int R, class S>
constexpr auto binary_scalar(tensor<A, R> a, S s) {
  builder& bl = *a.b_;
  const std::int32_t c = constant_node(bl, weak_scalar_dtype<A, S>(), static_cast<double>(s));
  const std::int32_t ids[2] = {ScalarFirst ? c : a.id_, ScalarFirst ? a.id_ : c};
  return tensor<type_of<Out>, R>{&bl, elementwise(bl, K, Out, R, ids, 2)};
}

}  // namespace detail

// convert_element_type
template <class To, class T, int R>
constexpr tensor<To, R> convert(tensor<T, R> x) {
  static_assert(is_element_type_v<To>, "fusex::convert: unsupported target element type");
  const std::int32_t ids[1] = {x.id_};
  if constexpr (std::is_same_v<To, T>) return x;
  else return {x.b_, detail::elementwise(*x.b_, op_kind::convert, dtype_v<To>, R, ids, 1)};
}

// A compile-time scalar of element type T (rank 0).
template <class T, class B>
constexpr tensor<T, 0> constant_like(const B& any_handle, double v) {
  return {any_handle.b_, detail::constant_node(*any_handle.b_, dtype_v<T>, v)};
}

#define FUSEX_UNARY(fn, kind, float_only)                                                             \
  template <class T, int R>                                                                           \
  constexpr auto fn(tensor<T, R> x) {                                                                 \
    static_assert(!std::is_same_v<T, bool>, "fusex::" #fn ": operand is bool; convert it first");    \
    constexpr dtype out = (float_only && !is_floating(dtype_v<T>)) ? dtype::f32 : dtype_v<T>;         \
    const std::int32_t ids[1] = {x.id_};                                                              \
    return tensor<detail::type_of<out>, R>{x.b_, detail::elementwise(*x.b_, op_kind::kind, out, R, ids, 1)}; \
  }

FUSEX_UNARY(neg, neg, false)
FUSEX_UNARY(abs, abs, false)
FUSEX_UNARY(exp, exp, true)
FUSEX_UNARY(exp2, exp2, true)
FUSEX_UNARY(log, log, true)
FUSEX_UNARY(log1p, log1p, true)
FUSEX_UNARY(sqrt, sqrt, true)
FUSEX_UNARY(rsqrt, rsqrt, true)
FUSEX_UNARY(reciprocal, reciprocal, true)
FUSEX_UNARY(erf, erf, true)
FUSEX_UNARY(tanh, tanh, true)
FUSEX_UNARY(sin, sin, true)
FUSEX_UNARY(cos, cos, true)
FUSEX_UNARY(sigmoid, sigmoid, true)
FUSEX_UNARY(dgelu, dgelu, true)
#undef FUSEX_UNARY

template <class T, int R>
constexpr auto operator-(tensor<T, R> x) {
  return neg(x);
}

// Binary ops: tensor (op) tensor, tensor (op) number, number (op) tensor.
// `arith` rejects bool operands; comparisons return bool.
#define FUSEX_BINARY(fn, kind, arith)                                                                        \
  template <class A, int RA, class B, int RB>                                                                \
  constexpr auto fn(tensor<A, RA> a, tensor<B, RB> b) {                                                      \
    static_assert(RA == RB || RA == 0 || RB == 0,                                                            \
                  "fusex::" #fn ": operands must have the same rank (only a rank-0 operand broadcasts "      \
                  "implicitly; use broadcast_in_dim or unsqueeze)");                                         \
    static_assert(!arith || (!std::is_same_v<A, bool> && !std::is_same_v<B, bool>),                         \
                  "fusex::" #fn ": arithmetic on a bool operand; convert it first");                         \
    constexpr dtype out = arith ? promote(dtype_v<A>, dtype_v<B>) : dtype::b8;                               \
    return detail::binary<op_kind::kind, out>(a, b);                                                         \
  }                                                                                                          \
  template <class A, int R, class S>                                                                         \
    requires detail::is_number_v<S>                                                                          \
  constexpr auto fn(tensor<A, R> a, S s) {                                                                   \
    static_assert(!arith || (!std::is_same_v<A, bool> && !std::is_same_v<S, bool>),                          \
                  "fusex::" #fn ": arithmetic on a bool operand; convert it first");                         \
    constexpr dtype out = arith ? detail::weak_result_dtype<A, S>() : dtype::b8;                             \
    return detail::binary_scalar<op_kind::kind, out, false>(a, s);                                           \
  }                                                                                                          \
  template <class S, class B, int R>                                                                         \
    requires detail::is_number_v<S>                                                                          \
  constexpr auto fn(S s, tensor<B, R> b) {                                                                   \
    static_assert(!arith || (!std::is_same_v<B, bool> && !std::is_same_v<S, bool>),                          \
                  "fusex::" #fn ": arithmetic on a bool operand; convert it first");                         \
    constexpr dtype out = arith ? detail::weak_result_dtype<B, S>() : dtype::b8;                             \
    return detail::binary_scalar<op_kind::kind, out, true>(b, s);                                            \
  }

FUSEX_BINARY(add, add, true)
FUSEX_BINARY(sub, sub, true)
FUSEX_BINARY(mul, mul, true)
FUSEX_BINARY(div, div, true)
FUSEX_BINARY(pow, pow, true)
FUSEX_BINARY(maximum, maximum, true)
FUSEX_BINARY(minimum, minimum, true)
FUSEX_BINARY(eq, eq, false)
FUSEX_BINARY(ne, ne, false)
FUSEX_BINARY(lt, lt, false)
FUSEX_BINARY(le, le, false)
FUSEX_BINARY(gt, gt, false)
FUSEX_BINARY(ge, ge, false)
#undef FUSEX_BINARY

#define FUSEX_OPERATOR(sym, fn)                                                      \
  template <class A, int RA, class B, int RB>                                        \
  constexpr auto operator sym(tensor<A, RA> a, tensor<B, RB> b) { return fn(a, b); } \
  template <class A, int R, class S>                                                 \
    requires detail::is_number_v<S>                                                  \
  constexpr auto operator sym(tensor<A, R> a, S s) { return fn(a, s); }              \
  template <class S, class B, int R>                                                 \
    requires detail::is_number_v<S>                                                  \
  constexpr auto operator sym(S s, tensor<B, R> b) { return fn(s, b); }

FUSEX_OPERATOR(+, add)
FUSEX_OPERATOR(-, sub)
FUSEX_OPERATOR(*, mul)
FUSEX_OPERATOR(/, div)
FUSEX_OPERATOR(==, eq)
FUSEX_OPERATOR(!=, ne)
FUSEX_OPERATOR(<, lt)
FUSEX_OPERATOR(<=, le)
FUSEX_OPERATOR(>, gt)
FUSEX_OPERATOR(>=, ge)
#undef FUSEX_OPERATOR

// where(pred, a, b): a where pred is true, else b.
namespace detail {
template <dtype Out, class P, int RP, class A, int RA, class B, int RB>
constexpr auto where_node(tensor<P, RP> pred, tensor<A, RA> a, tensor<B, RB> b) {
  static_assert(std::is_same_v<P, bool>, "fusex::where: the predicate must be a bool tensor");
  constexpr int R = RP > RA ? (RP > RB ? RP : RB) : (RA > RB ? RA : RB);
  static_assert((RP == R || RP == 0) && (RA == R || RA == 0) && (RB == R || RB == 0),
                "fusex::where: operands must have the same rank (only a rank-0 operand broadcasts implicitly)");
  const std::int32_t ids[3] = {pred.id_, a.id_, b.id_};
  return tensor<type_of<Out>, R>{pred.b_, elementwise(*pred.b_, op_kind::where, Out, R, ids, 3)};
}
}  // namespace detail

template <class P, int RP, class A, int RA, class B, int RB>
constexpr auto where(tensor<P, RP> pred, tensor<A, RA> a, tensor<B, RB> b) {
  return detail::where_node<promote(dtype_v<A>, dtype_v<B>)>(pred, a, b);
}
template <class P, int RP, class A, int RA, class S>
  requires detail::is_number_v<S>
constexpr auto where(tensor<P, RP> pred, tensor<A, RA> a, S s) {
  return detail::where_node<detail::weak_result_dtype<A, S>()>(
      pred, a, constant_like<detail::type_of<detail::weak_scalar_dtype<A, S>()>>(a, static_cast<double>(s)));
}
template <class P, int RP, class S, class B, int RB>
  requires detail::is_number_v<S>
constexpr auto where(tensor<P, RP> pred, S s, tensor<B, RB> b) {
  return detail::where_node<detail::weak_result_dtype<B, S>()>(
      pred, constant_like<detail::type_of<detail::weak_scalar_dtype<B, S>()>>(b, static_cast<double>(s)), b);
}

}  // namespace fusex
