#pragma once
// Running a plan: where every value lives (argument views, output views,
// intermediate buffers), and the arguments of each group, for any backend.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../codegen/eval.hpp"
#include "../plan/plan.hpp"
#include "../runtime/bind.hpp"

namespace fusex {

inline constexpr int max_claimed_operands = 16;

// One node of a claimed group, as a user executor receives it.
struct claimed_call {
  const node* n = nullptr;  // the claimed node (op, axis, parameters)
  const bound_arg* in = nullptr;
  int nin = 0;
  bound_arg out;
};

namespace detail::exec {

using codegen::idx_t;

struct location {
  const void* data = nullptr;
  dtype dt = dtype::f32;
  int rank = 0;
  idx_t ext[max_rank] = {};
  idx_t str[max_rank] = {};
};

inline location at(const bound_arg& b) {
  location l;
  l.data = b.data;
  l.dt = b.dt;
  l.rank = b.rank;
  for (int i = 0; i < b.rank; ++i) {
    l.ext[i] = b.ext[i];
    l.str[i] = b.str[i];
  }
  return l;
}

// Where each node's value lives during a run; intermediates come from the
// backend's allocator (freed by the backend after the run).
template <class P, class Alloc>
std::vector<location> place_values(const std::array<bound_arg, P::program_type::sizes.params>& args,
                                   const std::array<bound_arg, P::program_type::sizes.outputs>& outs,
                                   const shape_env<P::program_type::sizes>& env, Alloc&& alloc) {
  constexpr auto S = P::program_type::sizes;
  const auto& g = P::graph;
  const auto& d = P::data;
  std::vector<location> loc(static_cast<std::size_t>(S.nodes));
  for (int p = 0; p < S.params; ++p)
    if (g.params[p].kind == arg_kind::tensor) loc[g.params[p].node] = at(args[p]);
  for (int o = S.outputs - 1; o >= 0; --o) loc[g.outputs[o]] = at(outs[o]);  // first slot wins
  for (int gi = 0; gi < d.ngroups; ++gi)
    for (int w = 0; w < d.groups[gi].nwrites; ++w) {
      const int v = d.writes[d.groups[gi].write0 + w];
      if (g.is_output(v)) continue;
      location l;
      l.dt = g.nodes[v].dt;
      l.rank = g.nodes[v].rank;
      idx_t count = 1;
      for (int i = l.rank - 1; i >= 0; --i) {
        l.ext[i] = env.extent(v, i);
        l.str[i] = count;
        count *= l.ext[i];
      }
      l.data = alloc(static_cast<std::size_t>(count) * static_cast<std::size_t>(size_of(l.dt)));
      loc[v] = l;
    }
  return loc;
}

// The run-time arguments of group G.
template <class P, int G>
codegen::group_args<typename codegen::group_code<P, G>::type> group_arguments(
    const std::vector<location>& loc, const std::array<bound_arg, P::program_type::sizes.params>& args,
    const std::array<bound_arg, P::program_type::sizes.outputs>& outs, const shape_env<P::program_type::sizes>& env) {
  using C = typename codegen::group_code<P, G>::type;
  using Q = codegen::prog<C>;
  codegen::group_args<C> a{};
  for (int r = 0; r < Q::nreads(); ++r) {
    const location& l = loc[Q::read_node(r)];
    a.in[r] = l.data;
    for (int i = 0; i < l.rank; ++i) a.in_str[r][i] = l.str[i];
  }
  for (int w = 0; w < Q::nwrites(); ++w) {
    const int dest = Q::write_dest(w);
    const location l = dest >= 0 ? at(outs[dest]) : loc[Q::node(Q::write_local(w))];
    a.out[w] = const_cast<void*>(l.data);
    for (int i = 0; i < l.rank; ++i) a.out_str[w][i] = l.str[i];
  }
  for (int s = 0; s < Q::nexprs(); ++s) a.ext[s] = env[Q::expr_id(s)];
  for (int s = 0; s < Q::nscalars(); ++s) a.scal[s] = args[Q::scalar_arg(s)].scalar;
  return a;
}

struct claimed_operands {
  bound_arg in[max_claimed_operands];
};

// The call a claimed node's executor receives: its operands where they live
// and its output, with run-time extents. `ops` holds the operand array.
template <graph_sizes S>
claimed_call claimed_call_of(const graph<S>& g, int node, const std::vector<location>& loc, const shape_env<S>& env,
                             void* out, const idx_t* out_str, claimed_operands& ops) {
  const int nin = g.nodes[node].nargs;
  if (nin > max_claimed_operands)
    throw argument_error(std::string("fusex: a claimed ") + name(g.nodes[node].op) + " has " + std::to_string(nin) +
                         " operands; claimed ops take at most " + std::to_string(max_claimed_operands));
  for (int k = 0; k < nin; ++k) {
    const int u = g.operand(node, k);
    bound_arg& b = ops.in[k];
    b.kind = arg_kind::tensor;
    b.dt = loc[u].dt;
    b.rank = loc[u].rank;
    b.data = loc[u].data;
    for (int i = 0; i < loc[u].rank; ++i) {
      b.ext[i] = env.extent(u, i);
      b.str[i] = loc[u].str[i];
    }
  }
  claimed_call call;
  call.n = &g.nodes[node];
  call.in = ops.in;
  call.nin = nin;
  call.out.kind = arg_kind::tensor;
  call.out.dt = g.nodes[node].dt;
  call.out.rank = g.nodes[node].rank;
  call.out.data = out;
  for (int i = 0; i < call.out.rank; ++i) {
    call.out.ext[i] = env.extent(node, i);
    call.out.str[i] = out_str[i];
  }
  return call;
}

}  // namespace detail::exec
}  // namespace fusex
