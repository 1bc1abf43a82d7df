#pragma once
// The static structure the host's row engine evaluates: which values are
// computed, along which axis their lanes run, and where each leaf is read.
//
// A frame is rooted at one local and holds every local reachable from it
// through identity edges (elementwise operands of the same shape): they
// share the root's coordinates, so they are computed together, lane by
// lane. An operand reached through any other edge (a remap, a broadcast
// operand) is the root of a child frame at mapped coordinates. One such
// frame reached along one path is an *instance*: two paths to the same
// local (RoPE's two halves of x) are two instances, each with its own
// coordinates. The instances of a pass form a forest, one tree per root
// (the pass's writes, or its reductions' operands, all of one shape).
//
// Each instance knows statically along which of its axes the lanes run
// (`la`), or that it is one value for all lanes (`la = -1`: a broadcast
// along the lanes, a norm's row statistics). One-value instances are
// computed once per segment when the row is bound, not per lane.

#include "../../codegen/program.hpp"

namespace fusex::detail::host_engine {

using codegen::prog;

// Graph helpers, all consteval over the group program C.
template <class C>
struct graph_ops {
  using P = prog<C>;
  static constexpr int NL = P::nlocals();

  // Members of the frame rooted at `root`.
  static consteval void frame(int root, bool* in) {
    int stack[NL] = {};
    int sp = 0;
    in[root] = true;
    stack[sp++] = root;
    while (sp > 0) {
      const int m = stack[--sp];
      if (P::is_leaf(m)) continue;
      for (int k = 0; k < P::nops(m); ++k) {
        const int u = P::operand(m, k);
        if (P::identity(m, k) && !in[u]) {
          in[u] = true;
          stack[sp++] = u;
        }
      }
    }
  }

  // A reshape's leading and trailing axes whose extents it keeps.
  static consteval void reshape_parts(int m, int& prefix, int& suffix) {
    const int u = P::operand(m, 0);
    const int r = P::rank(m), ru = P::rank(u);
    prefix = suffix = 0;
    while (prefix < r && prefix < ru && P::shape(m, prefix) == P::shape(u, prefix)) ++prefix;
    while (prefix + suffix < r && prefix + suffix < ru && P::shape(m, r - 1 - suffix) == P::shape(u, ru - 1 - suffix))
      ++suffix;
  }

  // The lane axis of operand k of member m when m's lanes run along `la`.
  static consteval int child_la(int m, int k, int la) {
    const op_kind K = P::op(m);
    const int u = P::operand(m, k);
    const int ru = P::rank(u);
    if (la < 0 || ru == 0) return -1;
    if (category(K) == op_category::elementwise) return ((P::bcast(m, k) >> la) & 1) ? -1 : la;
    if (K == op_kind::broadcast_in_dim) {
      int j = -1;
      for (int a = 0; a < ru; ++a)
        if (P::map(m, a) == la && !P::static1(u, a)) j = a;
      return j;
    }
    if (K == op_kind::permute) return P::map(m, la);
    if (K == op_kind::slice || K == op_kind::pad || K == op_kind::cat) return la;
    // reshape: kept axes map through; lanes along the middle run along the
    // operand's innermost middle axis (the engine checks they do not wrap)
    int prefix = 0, suffix = 0;
    reshape_parts(m, prefix, suffix);
    const int r = P::rank(m);
    if (la < prefix) return la;
    if (la >= r - suffix) return la - r + ru;
    return ru - suffix > prefix ? ru - suffix - 1 : -1;
  }

  static consteval bool is_input_leaf(int m) { return P::op(m) == op_kind::input; }
};

struct instance {
  int root = 0;
  int parent = -1;
  int la = -1;      // lane axis of the root's coordinates, -1: one value
  int edge_m = -1;  // the parent's member ...
  int edge_k = -1;  // ... and operand this instance is
};

// The instances of a pass over roots Rs (all of one shape). Dense: a
// computed reduction is read from an array of finished values (column
// groups) rather than as the current row's value (row groups).
template <class C, bool Dense, int... Rs>
struct forest {
  using P = prog<C>;
  using G = graph_ops<C>;
  static constexpr int NL = P::nlocals();
  static constexpr int nroots = sizeof...(Rs);
  static constexpr int roots[nroots] = {Rs...};
  static constexpr bool dense = Dense;

  static consteval int root_la(int r) { return P::rank(r) > 0 ? P::rank(r) - 1 : -1; }

  static consteval int count_from(int root, int la) {
    bool in[NL] = {};
    G::frame(root, in);
    int n = 1;
    for (int m = 0; m < NL; ++m) {
      if (!in[m] || P::is_leaf(m)) continue;
      for (int k = 0; k < P::nops(m); ++k)
        if (!P::identity(m, k)) n += count_from(P::operand(m, k), G::child_la(m, k, la));
    }
    return n;
  }
  static constexpr int N = (count_from(Rs, root_la(Rs)) + ...);

  // A leaf read through memory: an input, a dense reduction, or an iota
  // (whose "address" is its coordinate).
  static consteval bool memory_leaf(int m) {
    return P::op(m) == op_kind::input || P::op(m) == op_kind::iota || (Dense && P::computes(m));
  }

  struct tables {
    instance inst[N];
    int first_child[N] = {};  // children are contiguous after their parent in preorder
    int leaf[N][NL] = {};     // slot of a memory leaf member, or -1
    int sel[N][NL] = {};      // slot of a cat or pad member's selection, or -1
    int splat[N] = {};        // one-value instances: their value's slot, by class
    int leaf_inst[N * NL] = {}, leaf_mem[N * NL] = {};  // leaf slot -> instance, member
    unsigned leaf_deps[N * NL] = {};                     // leaf slot -> root axes its address depends on
    int nleaf = 0, nsel = 0, nsplat[3] = {};
    // Root axes along which rows cannot be stepped by constant pointer
    // deltas: a cat, pad or reshape split depends on them (a segment
    // boundary or selection would move), or a one-value instance does (its
    // value would change).
    unsigned unsteppable = 0;
  };

  static consteval int value_class(int local) {
    const dtype d = P::dt(local);
    return (d == dtype::f16 || d == dtype::bf16 || d == dtype::f32) ? 0 : d == dtype::f64 ? 1 : 2;
  }

  // deps[d]: the root axes coordinate d of this instance depends on (a
  // mask); each child's follow from the edge that reaches it.
  static consteval void fill(tables& t, int& n, int root, int la, int parent, int em, int ek, const unsigned* deps) {
    const int me = n++;
    t.inst[me] = instance{root, parent, la, em, ek};
    if (la < 0)
      for (int d = 0; d < P::rank(root); ++d) t.unsteppable |= deps[d];
    bool in[NL] = {};
    G::frame(root, in);
    for (int m = 0; m < NL; ++m) {
      t.leaf[me][m] = -1;
      t.sel[me][m] = -1;
      if (!in[m]) continue;
      if (memory_leaf(m)) {
        t.leaf_inst[t.nleaf] = me;
        t.leaf_mem[t.nleaf] = m;
        for (int d = 0; d < P::rank(root); ++d) t.leaf_deps[t.nleaf] |= deps[d];
        t.leaf[me][m] = t.nleaf++;
      }
      if (P::op(m) == op_kind::cat || P::op(m) == op_kind::pad) t.sel[me][m] = t.nsel++;
    }
    t.splat[me] = la < 0 ? t.nsplat[value_class(root)]++ : -1;
    t.first_child[me] = n;
    for (int m = 0; m < NL; ++m) {
      if (!in[m] || P::is_leaf(m)) continue;
      for (int k = 0; k < P::nops(m); ++k) {
        if (P::identity(m, k)) continue;
        unsigned cd[max_rank] = {};
        child_deps(t, m, k, deps, cd);
        fill(t, n, P::operand(m, k), G::child_la(m, k, la), me, m, k, cd);
      }
    }
  }
  // The dependencies of operand k of member m's coordinates.
  static consteval void child_deps(tables& t, int m, int k, const unsigned* deps, unsigned* cd) {
    const op_kind K = P::op(m);
    const int u = P::operand(m, k);
    const int r = P::rank(m), ru = P::rank(u);
    if (category(K) == op_category::elementwise) {
      if (ru == r)
        for (int d = 0; d < ru; ++d) cd[d] = ((P::bcast(m, k) >> d) & 1) ? 0u : deps[d];
    } else if (K == op_kind::broadcast_in_dim) {
      for (int j = 0; j < ru; ++j) cd[j] = P::static1(u, j) ? 0u : deps[P::map(m, j)];
    } else if (K == op_kind::permute) {
      for (int i = 0; i < r; ++i) cd[P::map(m, i)] = deps[i];
    } else if (K == op_kind::slice) {
      for (int d = 0; d < r; ++d) cd[d] = deps[d];
    } else if (K == op_kind::pad || K == op_kind::cat) {
      for (int d = 0; d < r; ++d) cd[d] = deps[d];
      t.unsteppable |= deps[P::axis(m)];
    } else {  // reshape
      int prefix = 0, suffix = 0;
      G::reshape_parts(m, prefix, suffix);
      unsigned middle = 0;
      for (int d = prefix; d < r - suffix; ++d) middle |= deps[d];
      for (int d = 0; d < prefix; ++d) cd[d] = deps[d];
      for (int j = 0; j < suffix; ++j) cd[ru - 1 - j] = deps[r - 1 - j];
      for (int d = prefix; d < ru - suffix; ++d) cd[d] = middle;
      if (ru - suffix - prefix >= 2) t.unsteppable |= middle;  // split by division
    }
  }
  static consteval tables make() {
    tables t{};
    int n = 0;
    for (int r : roots) {
      unsigned deps[max_rank] = {};
      for (int d = 0; d < P::rank(r); ++d) deps[d] = 1u << d;
      fill(t, n, r, root_la(r), -1, -1, -1, deps);
    }
    return t;
  }

  static constexpr tables T = make();
  // Rows may step along root axis d by constant pointer deltas.
  static constexpr bool steppable(int d) { return d >= 0 && ((T.unsteppable >> d) & 1u) == 0; }

  static consteval int root_instance(int j) {
    int i = 0;
    for (int k = 0; k < j; ++k) i += count_from(roots[k], root_la(roots[k]));
    return i;
  }
  static consteval const instance& rec(int i) { return T.inst[i]; }
  // The instance of operand k of member m of instance i.
  static consteval int child(int i, int m, int k) {
    for (int j = T.first_child[i]; j < N; ++j)
      if (T.inst[j].parent == i && T.inst[j].edge_m == m && T.inst[j].edge_k == k) return j;
    return -1;
  }
  static consteval int leaf(int i, int m) { return T.leaf[i][m]; }
  static consteval int sel(int i, int m) { return T.sel[i][m]; }
  static consteval int splat_slot(int i) { return T.splat[i]; }
  static constexpr int nleaf = T.nleaf > 0 ? T.nleaf : 1;
  static constexpr int nsel = T.nsel > 0 ? T.nsel : 1;
  static constexpr int nsplat_f = T.nsplat[0] > 0 ? T.nsplat[0] : 1;
  static constexpr int nsplat_d = T.nsplat[1] > 0 ? T.nsplat[1] : 1;
  static constexpr int nsplat_l = T.nsplat[2] > 0 ? T.nsplat[2] : 1;

  static consteval int leaf_instance(int s) { return T.leaf_inst[s]; }
  static consteval int leaf_member(int s) { return T.leaf_mem[s]; }
  // Leaves read from memory with lanes (their stride decides the fast path).
  static consteval bool lane_leaf(int s) {
    return s < T.nleaf && T.inst[T.leaf_inst[s]].la >= 0 && P::op(T.leaf_mem[s]) != op_kind::iota;
  }
  static consteval bool iota_leaf(int s) { return s < T.nleaf && P::op(T.leaf_mem[s]) == op_kind::iota; }
  // A 16-bit input read with lanes at the same addresses in every row (a
  // norm's weight and bias): the engine reads it as floats, widened once
  // per launch and thread (engine.hpp, stage_arena), not once per row.
  static consteval bool staged_leaf(int s) {
    if (!lane_leaf(s) || P::op(T.leaf_mem[s]) != op_kind::input || !is_16bit(P::dt(T.leaf_mem[s]))) return false;
    const int r = P::rank(roots[0]);
    const unsigned rows = r >= 2 ? ((1u << (r - 1)) - 1u) : 0u;
    return rows != 0 && (T.leaf_deps[s] & rows) == 0;
  }
};

}  // namespace fusex::detail::host_engine
