#pragma once
// The captured program: a DAG of prim nodes plus a table of symbolic index
// expressions for extents and run-time op parameters. A graph is a literal
// value, built while the C++ compiles; every later stage (printing, planning,
// code generation, run-time checks) is a constexpr or run-time walk over it.

#include <cstdint>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "op.hpp"

namespace fusex {

// Symbolic integers. Extents and op parameters such as slice bounds are
// expressions over the program's run-time values, so one compiled plan serves
// every model size while keeping node identity.
enum class expr_kind : std::uint8_t { constant, param, extent, add, sub, mul, div, mod };

struct expr {
  expr_kind kind = expr_kind::constant;
  std::int32_t a = -1;  // extent: argument position; binary: left operand expr
  std::int32_t b = -1;  // extent: axis; binary: right operand expr
  std::int64_t value = 0;  // constant value; param: argument position

  friend constexpr bool operator==(const expr&, const expr&) = default;
};

struct node {
  op_kind op = op_kind::input;
  dtype dt = dtype::f32;
  std::int8_t rank = 0;
  std::int8_t axis = 0;  // reduce, slice, pad, cat, iota
  std::int8_t flag = 0;  // reductions: 1 = axis kept with extent 1; var_mean: bit 1 = the mean output
  std::int8_t copy = 0;  // a recomputed copy (builder's recompute_scope): never merged with the original
  // permute: output axis i reads input axis map[i].
  // broadcast_in_dim: input axis j becomes output axis map[j].
  std::int8_t map[max_rank] = {};
  std::int32_t arg0 = 0;   // operands are graph.args[arg0, arg0 + nargs)
  std::int32_t nargs = 0;
  std::int32_t shape[max_rank] = {};  // extent expr ids
  std::int32_t iparam[3] = {-1, -1, -1};  // slice: start, stop, step; pad: low, high
  std::int32_t slot = -1;  // input / scalar: argument position
  double value = 0;        // constant, full, pad value, iota start, var_mean correction
  double value2 = 0;       // iota step

  friend constexpr bool operator==(const node&, const node&) = default;
};

enum class arg_kind : std::uint8_t { tensor, scalar, index };

// One parameter of the traced function, in declaration order.
struct arg_info {
  arg_kind kind = arg_kind::tensor;
  dtype dt = dtype::f32;
  std::int8_t rank = 0;
  std::int32_t node = -1;  // tensor / scalar: its source node
  std::int64_t fixed = -1;  // index: the value the trace fixed (fusex::fixed_extents), -1 when free
};

// A composite op (gelu, layer_norm, ...) as recorded around the prims it
// emitted. Execution ignores it; autodiff uses it to apply the op's
// hand-derived backward instead of differentiating the prims one by one.
enum class composite : std::uint8_t { gelu, gelu_tanh, layer_norm, rms_norm, rope, qkv_rope, silu, swiglu };

constexpr const char* name(composite c) {
  switch (c) {
    case composite::gelu: return "gelu";
    case composite::gelu_tanh: return "gelu_tanh";
    case composite::layer_norm: return "layer_norm";
    case composite::rms_norm: return "rms_norm";
    case composite::rope: return "rope";
    case composite::qkv_rope: return "qkv_split_rope";
    case composite::silu: return "silu";
    case composite::swiglu: return "swiglu";
  }
  return "?";
}

struct region {
  static constexpr int max_in = 4, max_out = 3, max_save = 2, max_iparam = 4;
  composite kind = composite::gelu;
  std::int8_t nin = 0, nout = 0, nsave = 0;
  std::int8_t flag = 0;  // qkv_rope: bit 0 = k and v expanded to n_head heads, bit 1 = grouped layout
  std::int32_t in[max_in] = {-1, -1, -1, -1};
  std::int32_t out[max_out] = {-1, -1, -1};
  std::int32_t save[max_save] = {-1, -1};  // values the backward reads (saved, not recomputed)
  std::int32_t iparam[max_iparam] = {-1, -1, -1, -1};  // index expressions (rope: n_elem, ...)

  friend constexpr bool operator==(const region&, const region&) = default;
};

struct graph_sizes {
  int nodes = 0, args = 0, exprs = 0, outputs = 0, params = 0, regions = 0;
  friend constexpr bool operator==(const graph_sizes&, const graph_sizes&) = default;
};

namespace detail {
FUSEX_HD constexpr int at_least_one(int n) { return n > 0 ? n : 1; }
}  // namespace detail

// A captured program. Sizes are exact, so a graph costs what it holds.
template <graph_sizes S>
struct graph {
  static constexpr graph_sizes sizes = S;

  node nodes[detail::at_least_one(S.nodes)] = {};
  std::int32_t args[detail::at_least_one(S.args)] = {};
  expr exprs[detail::at_least_one(S.exprs)] = {};
  // Equivalence class of each expr: extents that ops require to be equal
  // share a representative, so the planner can reason about them statically.
  std::int32_t eclass[detail::at_least_one(S.exprs)] = {};
  std::int32_t outputs[detail::at_least_one(S.outputs)] = {};
  arg_info params[detail::at_least_one(S.params)] = {};
  region regions[detail::at_least_one(S.regions)] = {};

  constexpr int num_nodes() const { return S.nodes; }
  constexpr int num_exprs() const { return S.exprs; }
  constexpr int num_outputs() const { return S.outputs; }
  constexpr int num_params() const { return S.params; }
  constexpr const node& operator[](int i) const { return nodes[i]; }
  constexpr int operand(int n, int k) const { return args[nodes[n].arg0 + k]; }

  // Statically equal extents (same expression, or required equal by an op).
  constexpr bool same_extent(int ea, int eb) const { return eclass[ea] == eclass[eb]; }
  constexpr bool is_const(int e, std::int64_t v) const {
    return exprs[e].kind == expr_kind::constant && exprs[e].value == v;
  }
  // Number of nodes that read node n (outputs excluded).
  constexpr int uses(int n) const {
    int c = 0;
    for (int i = 0; i < S.args; ++i) c += args[i] == n;
    return c;
  }
  constexpr bool is_output(int n) const {
    for (int i = 0; i < S.outputs; ++i)
      if (outputs[i] == n) return true;
    return false;
  }
};

}  // namespace fusex
