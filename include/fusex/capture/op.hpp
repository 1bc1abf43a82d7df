#pragma once
// The prim vocabulary. Every traced node carries one op_kind; the planner only
// needs each op's category, so adding a prim means adding it here and to the
// executors' switch, nothing else.

#include <cstdint>

#include "../core/config.hpp"

namespace fusex {

enum class op_kind : std::uint8_t {
  // sources
  input,         // tensor argument
  scalar_param,  // run-time scalar argument, rank 0
  constant,      // compile-time scalar, rank 0
  full,          // tensor filled with a constant
  iota,          // start + i * step along one axis
  index_value,   // a run-time index expression as a rank-0 value
  // dtype
  convert,
  // index remaps (gather-style: the output element reads one input element)
  broadcast_in_dim,
  reshape,
  permute,
  slice,
  pad,
  cat,
  // elementwise unary
  neg, abs, exp, exp2, log, log1p, sqrt, rsqrt, reciprocal, erf, tanh, sin, cos, sigmoid, dgelu,
  // elementwise binary
  add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge,
  // elementwise ternary
  where,
  // reductions along one axis
  sum, amax, var_mean,
  // opaque
  matmul,
  count_
};

enum class op_category : std::uint8_t { source, elementwise, remap, reduction, opaque };

FUSEX_HD constexpr op_category category(op_kind k) {
  if (k <= op_kind::index_value) return op_category::source;
  if (k == op_kind::convert) return op_category::elementwise;
  if (k <= op_kind::cat) return op_category::remap;
  if (k <= op_kind::where) return op_category::elementwise;
  if (k <= op_kind::var_mean) return op_category::reduction;
  return op_category::opaque;
}

FUSEX_HD constexpr bool is_unary(op_kind k) { return k >= op_kind::neg && k <= op_kind::dgelu; }
FUSEX_HD constexpr bool is_binary(op_kind k) { return k >= op_kind::add && k <= op_kind::ge; }
FUSEX_HD constexpr bool is_comparison(op_kind k) { return k >= op_kind::eq && k <= op_kind::ge; }
// Unary ops that are only defined on floating values; integer inputs promote to f32.
FUSEX_HD constexpr bool is_float_unary(op_kind k) { return is_unary(k) && k != op_kind::neg && k != op_kind::abs; }

constexpr const char* name(op_kind k) {
  switch (k) {
    case op_kind::input: return "input";
    case op_kind::scalar_param: return "scalar";
    case op_kind::constant: return "constant";
    case op_kind::full: return "full";
    case op_kind::iota: return "iota";
    case op_kind::index_value: return "index_value";
    case op_kind::convert: return "convert_element_type";
    case op_kind::broadcast_in_dim: return "broadcast_in_dim";
    case op_kind::reshape: return "reshape";
    case op_kind::permute: return "transpose";
    case op_kind::slice: return "slice";
    case op_kind::pad: return "pad";
    case op_kind::cat: return "cat";
    case op_kind::neg: return "neg";
    case op_kind::abs: return "abs";
    case op_kind::exp: return "exp";
    case op_kind::exp2: return "exp2";
    case op_kind::log: return "log";
    case op_kind::log1p: return "log1p";
    case op_kind::sqrt: return "sqrt";
    case op_kind::rsqrt: return "rsqrt";
    case op_kind::reciprocal: return "reciprocal";
    case op_kind::erf: return "erf";
    case op_kind::tanh: return "tanh";
    case op_kind::sin: return "sin";
    case op_kind::cos: return "cos";
    case op_kind::sigmoid: return "sigmoid";
    case op_kind::dgelu: return "dgelu";
    case op_kind::add: return "add";
    case op_kind::sub: return "sub";
    case op_kind::mul: return "mul";
    case op_kind::div: return "div";
    case op_kind::pow: return "pow";
    case op_kind::maximum: return "maximum";
    case op_kind::minimum: return "minimum";
    case op_kind::eq: return "eq";
    case op_kind::ne: return "ne";
    case op_kind::lt: return "lt";
    case op_kind::le: return "le";
    case op_kind::gt: return "gt";
    case op_kind::ge: return "ge";
    case op_kind::where: return "where";
    case op_kind::sum: return "sum";
    case op_kind::amax: return "amax";
    case op_kind::var_mean: return "var_mean";
    case op_kind::matmul: return "matmul";
    case op_kind::count_: break;
  }
  return "?";
}

}  // namespace fusex
