#pragma once
// The program of one group, encoded as a flat array of integers. nvcc can
// name a __global__ template instantiated on a pack of integers (it cannot
// on a class-type constant such as a graph), and identical groups of
// different programs share one kernel.
//
// Layout: header | local records | operand records | write records |
//         expr ids | scalar argument positions | read node ids
// Locals are the group's members plus what they read: loads of external
// tensors (the group's reads) and immediates (constants, scalars, full,
// iota), in topological order.

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "../plan/plan.hpp"
#include "../capture/op.hpp"

namespace fusex::detail::codegen {

inline void fusex_error_group_uses_more_than_254_extents() { throw std::logic_error("fusex: a group uses more than 254 extents"); }

// Fields are packed into 64-bit words: every kernel symbol spells the whole
// program, so a short program compiles and links noticeably faster.
struct layout {
  // header
  static constexpr int kind = 0, nlocals = 1, nreads = 2, nwrites = 3, nexprs = 4, nscalars = 5, noperands = 6,
                       reduction = 7, header = 8;
  // local record: w0 = op | dt << 8 | rank << 16 | axis << 24 | flag << 32 | nops << 40 | dep << 48
  //               w1 = (slot + 1) | opnd << 16 | static1 << 32 | node << 40
  //               w2 = map[k] << 4k (k < 8) | (iparam[k] + 1) << (32 + 8k) (k < 3)
  //               w3 = shape slot[k] << 8k (k < 8)
  //               w4 = value bits, w5 = value2 bits
  static constexpr int record = 6;
  // operand record: local | mask << 16 | identity << 24   (mask bit i: index 0 on axis i)
  static constexpr int operand_record = 1;
  // write record: local | (destination + 1) << 16   (destination: an output slot, or -1
  // for the node's intermediate buffer)
  static constexpr int write_record = 1;
};

// The expression a group uses for extent e: one of the extents that ops
// require to be equal to it (the run-time checks enforce that before any
// kernel runs), a constant when the class has one. Equal extents then share
// a slot, which lets kernels see statically that, say, a reshape keeps an
// axis.
template <graph_sizes S>
constexpr int canonical_extent(const graph<S>& g, int e) {
  for (int x = 0; x < S.exprs; ++x)
    if (g.eclass[x] == g.eclass[e] && g.exprs[x].kind == expr_kind::constant) return x;
  return g.eclass[e];
}

template <int N>
struct int_array {
  std::int64_t v[N > 0 ? N : 1] = {};
};

// Locals of group gi: members, reads (as loads) and immediates, sorted.
template <graph_sizes S>
constexpr int collect_locals(const graph<S>& g, const plan_data<S>& p, int gi, std::int32_t* out) {
  std::int8_t mark[S.nodes > 0 ? S.nodes : 1] = {};
  const plan_group& grp = p.groups[gi];
  for (int k = 0; k < grp.nmembers; ++k) {
    const int v = p.members[grp.member0 + k];
    mark[v] = 1;
    for (int j = 0; j < g.nodes[v].nargs; ++j) {
      const int u = g.operand(v, j);
      if (p.group_of[u] != gi) mark[u] = 1;  // a read, or an immediate
    }
  }
  int n = 0;
  for (int v = 0; v < S.nodes; ++v)
    if (mark[v]) out[n++] = v;
  return n;
}

// Is node u read from memory by its consumers in group gi (an argument or
// another group's value), rather than computed in place?
template <graph_sizes S>
constexpr bool is_load(const graph<S>& g, const plan_data<S>& p, int gi, int u) {
  if (p.group_of[u] == gi) return false;
  const op_kind k = g.nodes[u].op;
  return !(k == op_kind::constant || k == op_kind::full || k == op_kind::iota || k == op_kind::index_value ||
           k == op_kind::scalar_param);
}

template <graph_sizes S>
struct group_counts {
  int nlocals = 0, nreads = 0, nwrites = 0, nexprs = 0, nscalars = 0, noperands = 0;
  constexpr int size() const {
    return layout::header + nlocals * layout::record + noperands * layout::operand_record +
           nwrites * layout::write_record + nexprs + nscalars + nreads;
  }
};

template <graph_sizes S>
constexpr group_counts<S> count_group(const graph<S>& g, const plan_data<S>& p, int gi) {
  group_counts<S> c;
  std::int32_t locals[S.nodes > 0 ? S.nodes : 1] = {};
  c.nlocals = collect_locals(g, p, gi, locals);
  std::int8_t expr_used[S.exprs > 0 ? S.exprs : 1] = {};
  for (int i = 0; i < c.nlocals; ++i) {
    const int v = locals[i];
    const node& n = g.nodes[v];
    if (is_load(g, p, gi, v)) ++c.nreads;
    if (n.op == op_kind::scalar_param && p.group_of[v] != gi) ++c.nscalars;
    if (p.group_of[v] == gi) c.noperands += n.nargs;
    for (int d = 0; d < n.rank; ++d) expr_used[canonical_extent(g, n.shape[d])] = 1;
    for (int d = 0; d < 3; ++d)
      if (n.iparam[d] >= 0) expr_used[n.iparam[d]] = 1;
  }
  for (int e = 0; e < S.exprs; ++e) c.nexprs += expr_used[e];
  const plan_group& grp = p.groups[gi];
  for (int w = 0; w < grp.nwrites; ++w) {
    const int v = p.writes[grp.write0 + w];
    int slots = 0;
    for (int o = 0; o < S.outputs; ++o) slots += g.outputs[o] == v;
    c.nwrites += slots > 0 ? slots : 1;
  }
  return c;
}

template <graph_sizes S, int N>
constexpr int_array<N> encode_group(const graph<S>& g, const plan_data<S>& p, int gi) {
  const group_counts<S> c = count_group(g, p, gi);
  int_array<N> a{};
  std::int64_t* d = a.v;
  std::int32_t locals[S.nodes > 0 ? S.nodes : 1] = {};
  collect_locals(g, p, gi, locals);
  std::int32_t local_of[S.nodes > 0 ? S.nodes : 1] = {};
  for (int v = 0; v < S.nodes; ++v) local_of[v] = -1;
  for (int i = 0; i < c.nlocals; ++i) local_of[locals[i]] = i;
  // expr slots
  std::int32_t expr_slot[S.exprs > 0 ? S.exprs : 1] = {};
  for (int e = 0; e < S.exprs; ++e) expr_slot[e] = -1;
  const int base_ops = layout::header + c.nlocals * layout::record;
  const int base_writes = base_ops + c.noperands * layout::operand_record;
  const int base_exprs = base_writes + c.nwrites * layout::write_record;
  const int base_scalars = base_exprs + c.nexprs;
  const int base_reads = base_scalars + c.nscalars;
  int ne = 0, ns = 0, nr = 0, nops = 0;
  // expr slot: its id, and its value when it is a small constant (kernels
  // then fold it: slice starts of 0, steps of 1, extents of 1)
  auto slot_of_expr = [&](int e) {
    if (expr_slot[e] < 0) {
      expr_slot[e] = ne;
      const expr& x = g.exprs[e];
      const bool small_const = x.kind == expr_kind::constant && x.value >= 0 && x.value < (std::int64_t{1} << 30);
      d[base_exprs + ne++] = e | (small_const ? (std::int64_t{1} << 32) | (x.value << 33) : 0);
    }
    return expr_slot[e];
  };
  const plan_group& grp = p.groups[gi];
  d[layout::kind] = static_cast<int>(grp.kind);
  d[layout::nlocals] = c.nlocals;
  d[layout::nreads] = c.nreads;
  d[layout::nwrites] = c.nwrites;
  d[layout::nexprs] = c.nexprs;
  d[layout::nscalars] = c.nscalars;
  d[layout::noperands] = c.noperands;
  d[layout::reduction] = grp.reduction >= 0 ? local_of[grp.reduction] : -1;
  auto is_static1 = [&](int e) { return g.exprs[e].kind == expr_kind::constant && g.exprs[e].value == 1; };
  // dep: depends on a reduction of this group (row and column groups)
  std::int8_t dep[S.nodes > 0 ? S.nodes : 1] = {};
  for (int i = 0; i < c.nlocals; ++i) {
    const int v = locals[i];
    const node& n = g.nodes[v];
    std::int64_t* r = d + layout::header + i * layout::record;
    const bool member = p.group_of[v] == gi;
    const bool load = is_load(g, p, gi, v);
    std::int64_t slot = -1;
    if (load) {
      slot = nr;
      d[base_reads + nr++] = v;
    } else if (n.op == op_kind::scalar_param) {
      slot = ns;
      d[base_scalars + ns++] = n.slot;
    }
    std::uint64_t s1 = 0, shape_word = 0, map_word = 0;
    for (int k = 0; k < n.rank; ++k) {
      const int es = slot_of_expr(canonical_extent(g, n.shape[k]));
      if (es > 254) fusex_error_group_uses_more_than_254_extents();
      shape_word |= static_cast<std::uint64_t>(es) << (8 * k);
      if (is_static1(n.shape[k])) s1 |= std::uint64_t{1} << k;
    }
    for (int k = 0; k < max_rank; ++k) map_word |= static_cast<std::uint64_t>(n.map[k] & 15) << (4 * k);
    for (int k = 0; k < 3; ++k) {
      const int ps = n.iparam[k] >= 0 ? slot_of_expr(n.iparam[k]) : -1;
      if (ps > 254) fusex_error_group_uses_more_than_254_extents();
      map_word |= static_cast<std::uint64_t>(ps + 1) << (32 + 8 * k);
    }
    const int nops_v = member ? n.nargs : 0;
    bool is_dep = false;
    if (member) {
      const bool elementwise = category(n.op) == op_category::elementwise;
      is_dep = category(n.op) == op_category::reduction;
      for (int k = 0; k < n.nargs; ++k) {
        const int u = g.operand(v, k);
        const node& un = g.nodes[u];
        std::uint64_t mask = 0;
        if (elementwise) {
          if (un.rank == 0) {
            mask = (std::uint64_t{1} << n.rank) - 1;
          } else {
            for (int ax = 0; ax < n.rank; ++ax)
              if (is_static1(un.shape[ax]) && !is_static1(n.shape[ax])) mask |= std::uint64_t{1} << ax;
          }
        }
        const std::uint64_t identity = elementwise && un.rank == n.rank && mask == 0 ? 1 : 0;
        d[base_ops + nops + k] = static_cast<std::int64_t>(static_cast<std::uint64_t>(local_of[u]) | mask << 16 | identity << 24);
        if (p.group_of[u] == gi && dep[u]) is_dep = true;
      }
      dep[v] = is_dep ? 1 : 0;
    }
    const op_kind op = load ? op_kind::input : n.op;
    r[0] = static_cast<std::int64_t>(static_cast<std::uint64_t>(op) | static_cast<std::uint64_t>(n.dt) << 8 |
                                     static_cast<std::uint64_t>(n.rank) << 16 |
                                     static_cast<std::uint64_t>(static_cast<std::uint8_t>(n.axis)) << 24 |
                                     static_cast<std::uint64_t>(static_cast<std::uint8_t>(n.flag)) << 32 |
                                     static_cast<std::uint64_t>(nops_v) << 40 | static_cast<std::uint64_t>(is_dep) << 48);
    r[1] = static_cast<std::int64_t>(static_cast<std::uint64_t>(slot + 1) | static_cast<std::uint64_t>(nops) << 16 |
                                     s1 << 32 | static_cast<std::uint64_t>(v) << 40);
    r[2] = static_cast<std::int64_t>(map_word);
    r[3] = static_cast<std::int64_t>(shape_word);
    r[4] = bit_cast<std::int64_t>(n.value);
    r[5] = bit_cast<std::int64_t>(n.value2);
    nops += nops_v;
  }
  // writes
  int nw = 0;
  for (int w = 0; w < grp.nwrites; ++w) {
    const int v = p.writes[grp.write0 + w];
    int slots = 0;
    for (int o = 0; o < S.outputs; ++o)
      if (g.outputs[o] == v) {
        d[base_writes + nw++] = local_of[v] | std::int64_t{o + 1} << 16;
        ++slots;
      }
    if (slots == 0) d[base_writes + nw++] = local_of[v];
  }
  return a;
}

template <std::int64_t... V>
struct code {
  static constexpr std::int64_t data[sizeof...(V)] = {V...};
  // Element i, in constant expressions only: device code sees a group's
  // program as compile-time structure, never as an array read at run time
  // (which would be rebuilt on the stack).
  static consteval std::int64_t at(int i) { return data[i]; }
};

// The same code type spelled without aliases (nvcc's host stubs print a
// kernel's template arguments as written, and an alias through the user's
// lambda cannot be printed).
template <std::int64_t... V>
code<V...> canonical(code<V...>);
template <class C>
using canonical_t = decltype(canonical(C{}));


FUSEX_HD consteval bool is_reduction(op_kind k) {
  return k == op_kind::sum || k == op_kind::amax || k == op_kind::var_mean;
}

// Typed accessors of an encoded group program; all consteval.
template <class C>
struct prog {
  using L = layout;
  static consteval std::int64_t at(int i) { return C::at(i); }
  static consteval group_kind kind() { return static_cast<group_kind>(at(L::kind)); }
  static consteval int nlocals() { return static_cast<int>(at(L::nlocals)); }
  static consteval int nreads() { return static_cast<int>(at(L::nreads)); }
  static consteval int nwrites() { return static_cast<int>(at(L::nwrites)); }
  static consteval int nexprs() { return static_cast<int>(at(L::nexprs)); }
  static consteval int nscalars() { return static_cast<int>(at(L::nscalars)); }
  static consteval int noperands() { return static_cast<int>(at(L::noperands)); }
  static consteval int reduction() { return static_cast<int>(at(L::reduction)); }
  static consteval int ops_base() { return L::header + nlocals() * L::record; }
  static consteval int writes_base() { return ops_base() + noperands() * L::operand_record; }
  static consteval int exprs_base() { return writes_base() + nwrites() * L::write_record; }
  static consteval int scalars_base() { return exprs_base() + nexprs(); }
  static consteval int reads_base() { return scalars_base() + nscalars(); }

  static consteval std::uint64_t w(int i, int k) { return static_cast<std::uint64_t>(at(L::header + i * L::record + k)); }
  static consteval op_kind op(int i) { return static_cast<op_kind>(w(i, 0) & 255); }
  static consteval dtype dt(int i) { return static_cast<dtype>((w(i, 0) >> 8) & 255); }
  static consteval int rank(int i) { return static_cast<int>((w(i, 0) >> 16) & 255); }
  static consteval int axis(int i) { return static_cast<std::int8_t>((w(i, 0) >> 24) & 255); }
  static consteval int flag(int i) { return static_cast<std::int8_t>((w(i, 0) >> 32) & 255); }
  static consteval int nops(int i) { return static_cast<int>((w(i, 0) >> 40) & 255); }
  static consteval bool dep(int i) { return (w(i, 0) >> 48) & 1; }
  static consteval int slot(int i) { return static_cast<int>(w(i, 1) & 0xffff) - 1; }
  static consteval int opnd(int i) { return static_cast<int>((w(i, 1) >> 16) & 0xffff); }
  static consteval bool static1(int i, int d) { return (w(i, 1) >> (32 + d)) & 1; }
  static consteval int node(int i) { return static_cast<int>((w(i, 1) >> 40) & 0xffff); }
  static consteval int map(int i, int k) { return static_cast<int>((w(i, 2) >> (4 * k)) & 15); }
  static consteval int iparam(int i, int k) { return static_cast<int>((w(i, 2) >> (32 + 8 * k)) & 255) - 1; }
  static consteval int shape(int i, int d) { return static_cast<int>((w(i, 3) >> (8 * d)) & 255); }
  static consteval double value(int i) { return bit_cast<double>(at(L::header + i * L::record + 4)); }
  static consteval double value2(int i) { return bit_cast<double>(at(L::header + i * L::record + 5)); }
  static consteval std::uint64_t operand_word(int i, int k) { return static_cast<std::uint64_t>(at(ops_base() + opnd(i) + k)); }
  static consteval int operand(int i, int k) { return static_cast<int>(operand_word(i, k) & 0xffff); }
  static consteval std::int64_t bcast(int i, int k) { return static_cast<std::int64_t>((operand_word(i, k) >> 16) & 255); }
  static consteval bool identity(int i, int k) { return (operand_word(i, k) >> 24) & 1; }
  static consteval int write_local(int w) { return static_cast<int>(at(writes_base() + w) & 0xffff); }
  static consteval int write_dest(int w) { return static_cast<int>((at(writes_base() + w) >> 16) & 0xffff) - 1; }
  static consteval int expr_id(int s) { return static_cast<int>(at(exprs_base() + s) & 0xffffffff); }
  // Is expr slot s a compile-time constant, and its value.
  static consteval bool expr_const(int s) { return (at(exprs_base() + s) >> 32) & 1; }
  static consteval std::int64_t expr_value(int s) { return at(exprs_base() + s) >> 33; }
  static consteval int scalar_arg(int s) { return static_cast<int>(at(scalars_base() + s)); }
  static consteval int read_node(int r) { return static_cast<int>(at(reads_base() + r)); }
  static consteval bool is_leaf(int i) {
    const op_kind k = op(i);
    return k == op_kind::input || k == op_kind::constant || k == op_kind::full || k == op_kind::iota ||
           k == op_kind::index_value || k == op_kind::scalar_param || is_reduction(k);
  }
  // Reductions computed by this group (not read from another group).
  static consteval bool computes(int i) { return is_reduction(op(i)) && nops(i) > 0; }
  // Compact index of reduction locals (their values live in the context).
  static consteval int red_index(int i) {
    int k = 0;
    for (int j = 0; j < i; ++j) k += computes(j);
    return k;
  }
  static consteval int nreductions() { return red_index(nlocals()); }
};

// The code type of group G of plan type P.
template <class P, int G>
struct group_code {
  static constexpr auto counts = count_group(P::graph, P::data, G);
  static constexpr int size = counts.size();
  static constexpr auto array = encode_group<P::program_type::sizes, size>(P::graph, P::data, G);
  template <std::size_t... I>
  static code<array.v[I]...> make(std::index_sequence<I...>);
  using type = decltype(make(std::make_index_sequence<static_cast<std::size_t>(size)>{}));
};

}  // namespace fusex::detail::codegen
