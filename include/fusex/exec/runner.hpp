#pragma once
// Running a plan: where every value lives (argument views, output views,
// intermediate buffers), and the arguments of each group, for any backend.

#include <array>
#include <cstdio>
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
  // 32-bit lanes need every tensor the group touches, and every shape it
  // computes over, to span fewer than 2^31 elements.
  bool narrow = true;
  auto span_ok = [&](const location& l) {
    idx_t last = 0;
    for (int i = 0; i < l.rank; ++i) {
      if (l.ext[i] == 0) return true;
      last += (l.ext[i] - 1) * l.str[i];
    }
    return last < (idx_t{1} << 31);
  };
  codegen::static_for<Q::nreads()>([&](auto rr) {
    constexpr int r = decltype(rr)::value;
    const location& l = loc[Q::read_node(r)];
    a.in[r] = l.data;
    for (int i = 0; i < l.rank; ++i) a.in_str[r][i] = l.str[i];
    narrow = narrow && span_ok(l);
  });
  codegen::static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int dest = Q::write_dest(w);
    const location l = dest >= 0 ? at(outs[dest]) : loc[Q::node(Q::write_local(w))];
    a.out[w] = const_cast<void*>(l.data);
    for (int i = 0; i < l.rank; ++i) a.out_str[w][i] = l.str[i];
    narrow = narrow && span_ok(l);
  });
  codegen::static_for<Q::nlocals()>([&](auto ii) {
    constexpr int i = decltype(ii)::value;
    narrow = narrow && env.numel(Q::node(i)) < (idx_t{1} << 31);
  });
  codegen::static_for<Q::nexprs()>([&](auto ss) {
    constexpr int s = decltype(ss)::value;
    a.ext[s] = env[Q::expr_id(s)];
    a.div[s] = codegen::fastdiv(a.ext[s]);
  });
  codegen::static_for<Q::nscalars()>([&](auto ss) {
    constexpr int s = decltype(ss)::value;
    a.scal[s] = args[Q::scalar_arg(s)].scalar;
  });
  a.narrow = narrow;
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

// "group 3 (row-reduction)": where a failure happened, without a heap
// allocation per group and run.
struct group_label {
  char text[40] = {};
  group_label(int g, group_kind k) { std::snprintf(text, sizeof text, "group %d (%s)", g, name(k)); }
  operator const char*() const { return text; }
};

// The run of a bound plan, the same for every executor: place every value
// (intermediates from the executor's allocator), then hand each group, in
// order, to the executor's launcher for its kind:
//   void* ex.allocate(std::size_t bytes);
//   template <group_kind K, class C> void ex.launch(const codegen::group_args<C>&, const group_label&);
//   template <class Claimant, class C> void ex.claimed(const claimed_call&, const codegen::group_args<C>&, const group_label&);
template <class PL, class Exec, class Args, class Outs, class Env>
void run_groups(Exec& ex, const Args& args, const Outs& outs, const Env& env) {
  const auto loc = place_values<PL>(args, outs, env, [&](std::size_t bytes) { return ex.allocate(bytes); });
  codegen::static_for<PL::data.ngroups>([&](auto gg) {
    constexpr int G = decltype(gg)::value;
    constexpr group_kind kind = PL::data.groups[G].kind;
    const auto ga = group_arguments<PL, G>(loc, args, outs, env);
    const group_label where(G, kind);
    if constexpr (kind == group_kind::claimed) {
      constexpr int node = PL::data.members[PL::data.groups[G].member0];
      constexpr int executor = PL::data.groups[G].executor;
      using claimant = typename PL::claimants::template at<executor>;
      claimed_operands ops;
      const claimed_call call = claimed_call_of(PL::graph, node, loc, env, ga.out[0], ga.out_str[0], ops);
      ex.template claimed<claimant>(call, ga, where);
    } else {
      ex.template launch<kind>(ga, where);
    }
  });
}

// The in-place rule of runtime/in_place.hpp, plus the plan's condition:
// every value computed from the argument is in a pointwise group (each
// element read, then its result written, at one index).
template <class PL>
constexpr auto plan_in_place_table() {
  constexpr auto S = PL::program_type::sizes;
  const auto& g = PL::graph;
  auto t = detail::in_place_table(g);
  std::array<bool, S.nodes> dep{};
  for (int o = 0; o < S.outputs; ++o)
    for (int p = 0; p < S.params; ++p) {
      if (!t[o * S.params + p]) continue;
      detail::in_place_dependents(g, g.params[p].node, dep.data());
      for (int u = 0; u < S.nodes; ++u)
        if (dep[u] && u != g.params[p].node && PL::data.groups[PL::data.group_of[u]].kind != group_kind::pointwise)
          t[o * S.params + p] = false;
    }
  return t;
}

// Binds and checks the arguments of plan PL (every executor does this
// before touching memory), then runs it on `ex`.
template <class PL, class Exec, class... A, class... O>
void run_plan(Exec& ex, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  using P = typename PL::program_type;
  const auto args = bind_args(P{}, in);
  const auto outs = bind_results(P{}, out);
  const auto env = check_inputs(P::graph, args.data());
  static constexpr auto in_place = plan_in_place_table<PL>();
  check_outputs(P::graph, env, args.data(), outs.data(), in_place.data());
  run_groups<PL>(ex, args, outs, env);
}

}  // namespace detail::exec
}  // namespace fusex
