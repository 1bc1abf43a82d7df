#pragma once
// Printing a captured graph as a trace: one line per node with its op,
// dtype, symbolic shape and attributes, in the spirit of a Thunder trace.

#include <cstdio>
#include <ostream>
#include <string>

#include "graph.hpp"
#include "trace.hpp"

namespace fusex {

namespace detail {

inline std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Names every extent expression of the inputs n0, n1, ...; index arguments
// print as p<position>.
template <graph_sizes S>
std::string expr_string(const graph<S>& g, int e) {
  const expr& x = g.exprs[e];
  switch (x.kind) {
    case expr_kind::constant: return std::to_string(x.value);
    case expr_kind::param: return "p" + std::to_string(x.value);
    case expr_kind::extent: {
      int k = 0;
      for (int i = 0; i < e; ++i) k += g.exprs[i].kind == expr_kind::extent;
      return "n" + std::to_string(k);
    }
    default: break;
  }
  const char* sym = x.kind == expr_kind::add   ? " + "
                    : x.kind == expr_kind::sub ? " - "
                    : x.kind == expr_kind::mul ? " * "
                    : x.kind == expr_kind::div ? " / "
                                               : " % ";
  return "(" + expr_string(g, x.a) + sym + expr_string(g, x.b) + ")";
}

template <graph_sizes S>
std::string type_string(const graph<S>& g, const node& n) {
  std::string s = name(n.dt);
  s += "[";
  for (int i = 0; i < n.rank; ++i) s += (i ? ", " : "") + expr_string(g, n.shape[i]);
  return s + "]";
}

template <graph_sizes S>
std::string node_string(const graph<S>& g, int id) {
  const node& n = g.nodes[id];
  std::string s = "t" + std::to_string(id) + ": " + type_string(g, n) + " = " + name(n.op) + "(";
  std::string sep;
  for (int k = 0; k < n.nargs; ++k) {
    s += sep + "t" + std::to_string(g.operand(id, k));
    sep = ", ";
  }
  auto attr = [&](const std::string& a) {
    s += sep + a;
    sep = ", ";
  };
  auto axes = [&](const char* label, int count) {
    std::string a = std::string(label) + "=[";
    for (int i = 0; i < count; ++i) a += (i ? ", " : "") + std::to_string(n.map[i]);
    attr(a + "]");
  };
  switch (n.op) {
    case op_kind::input:
    case op_kind::scalar_param: attr("arg=" + std::to_string(n.slot)); break;
    case op_kind::constant:
    case op_kind::full: attr(format_double(n.value)); break;
    case op_kind::iota:
      attr("start=" + format_double(n.value));
      attr("step=" + format_double(n.value2));
      break;
    case op_kind::index_value: attr(expr_string(g, n.iparam[0])); break;
    case op_kind::broadcast_in_dim: axes("dims", g.nodes[g.operand(id, 0)].rank); break;
    case op_kind::permute: axes("perm", n.rank); break;
    case op_kind::slice:
      attr("axis=" + std::to_string(n.axis));
      attr("start=" + expr_string(g, n.iparam[0]));
      attr("stop=" + expr_string(g, n.iparam[1]));
      attr("step=" + expr_string(g, n.iparam[2]));
      break;
    case op_kind::pad:
      attr("axis=" + std::to_string(n.axis));
      attr("low=" + expr_string(g, n.iparam[0]));
      attr("high=" + expr_string(g, n.iparam[1]));
      attr("value=" + format_double(n.value));
      break;
    case op_kind::cat: attr("axis=" + std::to_string(n.axis)); break;
    case op_kind::sum:
    case op_kind::amax:
    case op_kind::var_mean:
      attr("axis=" + std::to_string(n.axis));
      if (n.op == op_kind::var_mean) attr("correction=" + format_double(n.value));
      if (n.flag & 1) attr("keepdim");
      break;
    default: break;
  }
  s += ")";
  if (n.op == op_kind::var_mean) s += (n.flag & 2) ? "[mean]" : "[var]";
  if (n.copy) s += "  # recomputed copy";
  return s;
}

}  // namespace detail

template <graph_sizes S>
std::string to_string(const graph<S>& g) {
  std::string s = "# fusex trace: " + std::to_string(S.params) + (S.params == 1 ? " argument, " : " arguments, ") + std::to_string(S.nodes) +
                  (S.nodes == 1 ? " node, " : " nodes, ") + std::to_string(S.outputs) + (S.outputs == 1 ? " output\n" : " outputs\n");
  std::string ext, eq;
  for (int e = 0; e < S.exprs; ++e) {
    const expr& x = g.exprs[e];
    if (x.kind == expr_kind::extent)
      ext += (ext.empty() ? "" : ", ") + detail::expr_string(g, e) + " = t" +
             std::to_string(g.params[x.a].node) + ".shape[" + std::to_string(x.b) + "]";
    if (g.eclass[e] != e)
      eq += (eq.empty() ? "" : ", ") + detail::expr_string(g, e) + " == " + detail::expr_string(g, g.eclass[e]);
  }
  if (!ext.empty()) s += "# " + ext + "\n";
  if (!eq.empty()) s += "# required equal at run time: " + eq + "\n";
  for (int i = 0; i < S.nodes; ++i) s += detail::node_string(g, i) + "\n";
  s += "return ";
  for (int i = 0; i < S.outputs; ++i) s += (i ? ", t" : "t") + std::to_string(g.outputs[i]);
  return s + "\n";
}

template <class F, extent_hints E>
std::string to_string(program<F, E>) {
  return to_string(program<F, E>::graph);
}

template <class F, extent_hints E>
std::ostream& operator<<(std::ostream& os, program<F, E> p) {
  return os << to_string(p);
}

}  // namespace fusex
