#pragma once
// Gather-style evaluation of a group's values, shared by the host and CUDA
// executors.
//
// A frame is rooted at one local and holds every local reachable from it
// through identity edges (elementwise ops over operands of the same shape):
// each is computed once per lane, in registers. An operand reached through
// any other edge (a broadcast, a remap) is a new frame evaluated at the
// mapped coordinates. Loads, immediates and reduction results are the
// leaves.
//
// Two modes, each compiled once per frame:
//  - lanes: W values at consecutive positions along axis LA of the root,
//    all in range. A remap maps the lane axis to its operand's (a permute
//    moves it; a broadcast from a statically-1 extent makes the operand a
//    single value). Coordinates and offsets have type I: 32-bit on the
//    device when every tensor of the group spans fewer than 2^31 elements.
//  - one (LA = -1, W = 1): a single value, 64-bit coordinates.
// Where the lanes of a remap do not map to consecutive positions of one
// operand (a cat or pad boundary inside the run, a reshape crossing a row,
// a strided slice), that remap falls back to one value per lane: a cold
// path, outside the fast path that the machine-code gate measures.

#include <type_traits>
#include <utility>

#include "fastdiv.hpp"
#include "ops.hpp"
#include "program.hpp"
#include "reduce.hpp"

namespace fusex::detail::codegen {

using idx_t = long long;

// Calls f(std::integral_constant<int, K>{}) for K in [0, N). Usable from host
// and device code alike (the callable decides where it runs).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class F, int... K>
FUSEX_HD constexpr void static_for_impl(F& f, std::integer_sequence<int, K...>) {
  (f(std::integral_constant<int, K>{}), ...);
}
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int N, class F>
FUSEX_HD constexpr void static_for(F&& f) {
  static_for_impl(f, std::make_integer_sequence<int, N>{});
}

// Run-time arguments of a group, passed by value to kernels.
template <class C>
struct group_args {
  using P = prog<C>;
  static constexpr int NR = P::nreads() > 0 ? P::nreads() : 1;
  static constexpr int NW = P::nwrites() > 0 ? P::nwrites() : 1;
  static constexpr int NE = P::nexprs() > 0 ? P::nexprs() : 1;
  static constexpr int NS = P::nscalars() > 0 ? P::nscalars() : 1;
  const void* in[NR];
  idx_t in_str[NR][max_rank];
  void* out[NW];
  idx_t out_str[NW][max_rank];
  idx_t ext[NE];
  fastdiv div[NE];  // for the extents that kernels divide by
  double scal[NS];
  // Every tensor the group reads or writes spans fewer than 2^31 elements,
  // and so does every tensor shape it computes over: lanes may use 32-bit
  // coordinates and offsets.
  bool narrow;
};

// The value of expr slot S: folded when it is a compile-time constant.
template <class C, int S, class Args>
FUSEX_HD inline idx_t ext_of(const Args& a) {
  if constexpr (prog<C>::expr_const(S)) return prog<C>::expr_value(S);
  else return a.ext[S];
}

// q = n / e, r = n % e for expr slot S.
template <class C, int S, class Args, class I>
FUSEX_HD inline void divmod_by(const Args& a, I n, I& q, I& r) {
  if constexpr (prog<C>::expr_const(S)) {
    constexpr I e = static_cast<I>(prog<C>::expr_value(S) > 0 ? prog<C>::expr_value(S) : 1);
    q = n / e;
    r = n - q * e;
  } else {
    a.div[S].divmod(n, q, r);  // a multiply, on the host too: no hardware divide per run
  }
}

// Values of the group's reductions: for the current row (RW == 1) or for
// each lane of the current output elements (column groups), each in its
// register type.
template <class C>
struct reduction_layout {
  using P = prog<C>;
  static constexpr int N = P::nreductions();
  struct info {
    int local[N > 0 ? N : 1] = {};
    int cls[N > 0 ? N : 1] = {};
    int pos[N > 0 ? N : 1] = {};
    int nf = 0, nd = 0, nl = 0;
  };
  static consteval info make() {
    info I{};
    int k = 0;
    for (int i = 0; i < P::nlocals(); ++i) {
      if (!P::computes(i)) continue;
      const dtype d = P::dt(i);
      const int c = (d == dtype::f16 || d == dtype::bf16 || d == dtype::f32) ? 0 : d == dtype::f64 ? 1 : 2;
      I.local[k] = i;
      I.cls[k] = c;
      I.pos[k] = c == 0 ? I.nf++ : c == 1 ? I.nd++ : I.nl++;
      ++k;
    }
    return I;
  }
  static constexpr info I = make();
  static consteval int local(int k) { return I.local[k]; }
  static consteval int cls(int k) { return I.cls[k]; }
  static consteval int pos(int k) { return I.pos[k]; }
};

template <class C, int RW>
struct reduction_values {
  using RL = reduction_layout<C>;
  float f[RL::I.nf > 0 ? RL::I.nf : 1][RW];
  double d[RL::I.nd > 0 ? RL::I.nd : 1][RW];
  long long l[RL::I.nl > 0 ? RL::I.nl : 1][RW];
  // Lanes of reduction k (its compact index).
  template <int K>
  FUSEX_HD auto* at() {
    constexpr int c = RL::cls(K), p = RL::pos(K);
    if constexpr (c == 0) return f[p];
    else if constexpr (c == 1) return d[p];
    else return l[p];
  }
  template <int K>
  FUSEX_HD const auto* at() const {
    constexpr int c = RL::cls(K), p = RL::pos(K);
    if constexpr (c == 0) return f[p];
    else if constexpr (c == 1) return d[p];
    else return l[p];
  }
};

// Loads of a row group with exactly the row domain's shape: the inputs a
// row kernel may keep in shared memory, one row at a time.
template <class C>
consteval bool row_domain_load(int slot) {
  using Q = prog<C>;
  if (Q::kind() != group_kind::row_reduction) return false;
  const int X = Q::operand(Q::reduction(), 0);
  const int rd = Q::rank(X);
  for (int i = 0; i < Q::nlocals(); ++i) {
    if (Q::op(i) != op_kind::input || Q::slot(i) != slot || Q::rank(i) != rd) continue;
    bool same = true;
    for (int d = 0; d < rd; ++d) same = same && Q::shape(i, d) == Q::shape(X, d);
    if (same) return true;
  }
  return false;
}

// What an evaluation reads besides the group arguments.
//  RW:    lanes of reduction values (1, or W in column groups)
//  Cache: row kernels on the device keep the current row of some inputs in
//         shared memory (row_cache[slot]: column 0 of that row, or null)
template <class C, int RW, bool Cache = false>
struct context {
  static constexpr int red_lanes = RW;
  static constexpr bool has_cache = Cache;
  const group_args<C>* a;
  const reduction_values<C, RW>* red = nullptr;  // null in pointwise groups
  const unsigned char* const* row_cache = nullptr;
  const idx_t* row_outer = nullptr;  // the cached row's outer coordinates
  int lane = 0;  // one-value evaluations in column groups: the lane they stand for
  // A lanes-mode evaluation could not keep its lanes together (lanes_fail):
  // the caller redoes the run one value at a time.
  mutable bool failed = false;
};

// One value of local U at idx.
template <class C, int U, class Ctx>
FUSEX_HD inline vt<prog<C>::dt(U)> eval_one(const Ctx& cx, const idx_t* idx);

// Members of the frame rooted at local R, their register class (0 float,
// 1 double, 2 long long) and position. Read through the accessors, which
// device code can call in constant expressions.
template <class C, int R>
struct frame {
  using P = prog<C>;
  static constexpr int NL = P::nlocals();
  struct info {
    int n = 0;
    int ids[NL] = {};
    int cls[NL] = {};
    int pos[NL] = {};
    int where[NL] = {};  // local -> index in ids, or -1
    int nf = 0, nd = 0, nl = 0, nh = 0;
  };
  static consteval info make() {
    info I{};
    bool in[NL] = {};
    int stack[NL] = {};
    int sp = 0;
    in[R] = true;
    stack[sp++] = R;
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
    for (int i = 0; i < NL; ++i) {
      I.where[i] = -1;
      if (!in[i]) continue;
      I.where[i] = I.n;
      I.ids[I.n] = i;
      const dtype d = P::dt(i);
      // 3: 16-bit floats packed two to a word (device)
      const int c = packed16_dtype(d) ? 3 : (d == dtype::f16 || d == dtype::bf16 || d == dtype::f32) ? 0 : d == dtype::f64 ? 1 : 2;
      I.cls[I.n] = c;
      I.pos[I.n] = c == 0 ? I.nf++ : c == 1 ? I.nd++ : c == 2 ? I.nl++ : I.nh++;
      ++I.n;
    }
    return I;
  }
  static consteval bool packed16_dtype(dtype d) { return FUSEX_DEVICE_PASS && is_16bit(d); }
  static constexpr info I = make();
  static consteval int size() { return I.n; }
  static consteval int id(int k) { return I.ids[k]; }
  static consteval int where(int local) { return I.where[local]; }
  static consteval int cls(int k) { return I.cls[k]; }
  static consteval int pos(int k) { return I.pos[k]; }
  static consteval int nf() { return I.nf; }
  static consteval int nd() { return I.nd; }
  static consteval int nl() { return I.nl; }
  static consteval int nh() { return I.nh; }
};

template <int NF, int ND, int NL, int NH, int W>
struct frame_store {
  float f[NF > 0 ? NF : 1][W];
  double d[ND > 0 ? ND : 1][W];
  long long l[NL > 0 ? NL : 1][W];
  std::uint32_t h[NH > 0 ? NH : 1][(W + 1) / 2];
};

template <class C, int R, int M, class S>
FUSEX_HD inline auto* lanes_of(S& st) {
  using F = frame<C, R>;
  constexpr int w = F::where(M);
  static_assert(w >= 0, "fusex internal: local outside its frame");
  constexpr int c = F::cls(w), p = F::pos(w);
  if constexpr (c == 0) return st.f[p];
  else if constexpr (c == 1) return st.d[p];
  else if constexpr (c == 2) return st.l[p];
  else return st.h[p];
}

// Ops whose result on values of dtype D is again a value of D, so that a
// 16-bit result needs no rounding: sign changes, selections, and remaps.
template <class C, int M>
consteval bool exact_in_dtype() {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  if (!is_16bit(D) || category(K) != op_category::elementwise) return false;
  bool same[3] = {};
  for (int k = 0; k < P::nops(M) && k < 3; ++k) same[k] = P::dt(P::operand(M, k)) == D;
  if (K == op_kind::neg || K == op_kind::abs) return same[0];
  if (K == op_kind::maximum || K == op_kind::minimum) return same[0] && same[1];
  if (K == op_kind::where) return same[1] && same[2];
  if (K == op_kind::convert) return same[0];
  return false;
}

// Is operand k of elementwise M one value across lanes along LA (a
// broadcast along the lane axis, or rank 0)?
template <class C, int M, int k, int LA>
consteval bool splat_operand() {
  using P = prog<C>;
  if (LA < 0 || P::identity(M, k)) return false;
  return P::rank(P::operand(M, k)) == 0 || ((P::bcast(M, k) >> (LA < 0 ? 0 : LA)) & 1);
}

// The dtype elementwise M computes in: its operands' promoted one for a
// comparison, else its own (f32 for 16-bit results).
template <class C, int M>
consteval dtype compute_dtype_of() {
  using P = prog<C>;
  if (is_comparison(P::op(M))) return compute_dtype(promote(P::dt(P::operand(M, 0)), P::dt(P::operand(M, 1))));
  return compute_dtype(P::dt(M));
}

// mul M = (u + k) * c or (u - k) * c in f32, with k and c constants, c a
// power of two, u an f32 member of the same frame: u's local, c and k * c;
// u = -1 when M is not of this form.
struct scale_shift {
  int u = -1;
  double c = 0, kc = 0;
};
// Is local v a rank-0 constant; its value as an f32.
template <class C>
consteval bool f32_constant(int v, double& out) {
  using P = prog<C>;
  if (P::op(v) != op_kind::constant || P::rank(v) != 0) return false;
  out = static_cast<double>(static_cast<float>(P::value(v)));
  return true;
}
template <class C, int M>
consteval scale_shift scale_shift_of() {
  using P = prog<C>;
  scale_shift r;
  if (P::op(M) != op_kind::mul || P::dt(M) != dtype::f32 || P::nops(M) != 2) return r;
  for (int j = 0; j < 2; ++j) {
    double c = 0, k = 0;
    const int A = P::operand(M, 1 - j);
    if (!f32_constant<C>(P::operand(M, j), c) || !P::identity(M, 1 - j) || P::dt(A) != dtype::f32 || P::nops(A) != 2) continue;
    int e = 0;
    double m = c < 0 ? -c : c;
    while (m >= 2) m /= 2, ++e;
    while (m < 1 && m > 0) m *= 2, --e;
    if (m != 1 || e < -100 || e > 100) continue;  // a power of two, far from the range's ends
    for (int i = 0; i < 2; ++i) {
      const int u = P::operand(A, 1 - i);
      const bool add = P::op(A) == op_kind::add, sub = P::op(A) == op_kind::sub && i == 1;
      if ((add || sub) && f32_constant<C>(P::operand(A, i), k) && P::identity(A, 1 - i) && P::dt(u) == dtype::f32) {
        r.u = u;
        r.c = c;
        r.kc = (sub ? -k : k) * c;
        return r;
      }
    }
  }
  return r;
}

// Is M a where whose two values have M's dtype?
template <class C, int M>
consteval bool selects_dtype() {
  using P = prog<C>;
  return P::op(M) == op_kind::where && P::dt(P::operand(M, 1)) == P::dt(M) && P::dt(P::operand(M, 2)) == P::dt(M);
}

// Do all operands of M have M's dtype?
template <class C, int M>
consteval bool operands_of_dtype() {
  using P = prog<C>;
  for (int k = 0; k < P::nops(M); ++k)
    if (P::dt(P::operand(M, k)) != P::dt(M)) return false;
  return true;
}

// W lanes of local R at coordinates idx (those of lane 0), lanes along axis
// LA, in R's representation; or, with LA = -1 and W = 1, one value. Raw: a
// 16-bit root held as floats (the host's) is left unrounded for a store,
// which rounds it.
template <class C, int R, int W, int LA, class I, bool Raw = false, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const I* idx, rep_t<prog<C>::dt(R)>* out);

// The same lanes as values.
template <class C, int U, int W, int LA, class I, class Ctx>
FUSEX_HD inline void eval_values(const Ctx& cx, const I* idx, vt<prog<C>::dt(U)>* out) {
  constexpr dtype D = prog<C>::dt(U);
  if constexpr (packed16<D>) {
    rep_t<D> r[rep_n<D, W>];
    eval<C, U, W, LA, I>(cx, idx, r);
    unpack_rep<D, W>(r, out);
  } else {
    eval<C, U, W, LA, I>(cx, idx, out);
  }
}

// One value of local U at idx.
template <class C, int U, class Ctx>
FUSEX_HD inline vt<prog<C>::dt(U)> eval_one(const Ctx& cx, const idx_t* idx) {
  vt<prog<C>::dt(U)> v[1];
  eval_values<C, U, 1, -1, idx_t>(cx, idx, v);
  return v[0];
}

template <class C, int M, int W, int LA, class I, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const I* idx, rep_t<prog<C>::dt(M)>* out);

// A lanes-mode remap whose lanes do not map to consecutive positions of
// one operand (a cat or pad boundary inside the run, a reshape crossing a
// row, a strided slice): the evaluation is marked as failed, and its caller
// computes the run again one value at a time (the code it has for partial
// runs). Keeping the fallback at the root, rather than at every remap, keeps
// it out of the fast path's code and registers.
template <class C, int M, int W, class Ctx>
FUSEX_HD inline void lanes_fail(const Ctx& cx, rep_t<prog<C>::dt(M)>* out) {
  FUSEX_COLD();
  cx.failed = true;
FUSEX_UNROLL
  for (int l = 0; l < rep_n<prog<C>::dt(M), W>; ++l) out[l] = 0;
}

// Operand lanes (dtype of U) as M's dtype, in M's representation.
template <class C, int M, int U, int W>
FUSEX_HD inline void convert_rep(const rep_t<prog<C>::dt(U)>* in, rep_t<prog<C>::dt(M)>* out) {
  constexpr dtype D = prog<C>::dt(M), DU = prog<C>::dt(U);
  if constexpr (DU == D) {
FUSEX_UNROLL
    for (int l = 0; l < rep_n<D, W>; ++l) out[l] = in[l];
  } else {
    vt<DU> x[W];
    unpack_rep<DU, W>(in, x);
    vt<D> y[W];
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) y[l] = static_cast<vt<D>>(x[l]);
    if constexpr (is_16bit(D)) {
      if constexpr (!packed16<D>) round_lanes<D, W>(y);
    } else {
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) y[l] = to_dtype<D>(x[l]);
    }
    pack_rep<D, W>(y, out);
  }
}

// Operand U of remap M at coordinates iu, lanes along LU (or one value
// broadcast over the lanes when LU < 0), in M's dtype and representation.
template <class C, int M, int U, int W, int LU, class I, class Ctx>
FUSEX_HD inline void remap_operand(const Ctx& cx, const I* iu, rep_t<prog<C>::dt(M)>* out) {
  constexpr int ru = prog<C>::rank(U);
  constexpr dtype DU = prog<C>::dt(U);
  rep_t<DU> tmp[rep_n<DU, W>];
  if constexpr (LU < 0 && W > 1) {
    idx_t i1[ru > 0 ? ru : 1];
FUSEX_UNROLL
    for (int d = 0; d < ru; ++d) i1[d] = iu[d];
    splat_rep<DU, W>(eval_one<C, U>(cx, i1), tmp);
  } else {
    eval<C, U, W, LU, I>(cx, iu, tmp);
  }
  convert_rep<C, M, U, W>(tmp, out);
}

// A reshape's leading and trailing axes whose extents it keeps (the same
// extent slot in M and in its operand).
struct reshape_parts {
  int prefix = 0, suffix = 0;
};
template <class C, int M>
consteval reshape_parts split_reshape() {
  using P = prog<C>;
  constexpr int U = P::operand(M, 0);
  const int r = P::rank(M), ru = P::rank(U);
  reshape_parts p;
  while (p.prefix < r && p.prefix < ru && P::shape(M, p.prefix) == P::shape(U, p.prefix)) ++p.prefix;
  while (p.prefix + p.suffix < r && p.prefix + p.suffix < ru &&
         P::shape(M, r - 1 - p.suffix) == P::shape(U, ru - 1 - p.suffix))
    ++p.suffix;
  return p;
}

// The operand axis of a broadcast that becomes output axis `a`, unless it
// is statically 1 (then the operand is one value across the lanes): -1.
template <class C, int M>
consteval int broadcast_lane_axis(int a) {
  using P = prog<C>;
  constexpr int U = P::operand(M, 0);
  int j = -1;
  for (int k = 0; k < P::rank(U); ++k)
    if (P::map(M, k) == a && !P::static1(U, k)) j = k;
  return j;
}

// The operand axis that a permute's output axis `a` reads (-1 stays -1).
template <class C, int M>
consteval int permuted_axis(int a) {
  return a >= 0 ? prog<C>::map(M, a) : -1;
}

// Operand k of cat M and the ones after it, as an if-else chain (each
// operand's code runs alone): p is the position along the cat axis,
// relative to operand k. In lanes mode along the cat axis, all W positions
// must fall in one operand; otherwise the cat goes lane by lane.
template <class C, int M, int k, int W, int LA, class I, class Ctx>
FUSEX_HD inline void cat_operand(const Ctx& cx, const I* idx, I p, rep_t<prog<C>::dt(M)>* out) {
  using P = prog<C>;
  constexpr int ax = P::axis(M);
  constexpr int r = P::rank(M);
  if constexpr (k == P::nops(M)) {
    // past the last operand: only lanes straddling into it get here
    if constexpr (LA == ax) {
      lanes_fail<C, M, W>(cx, out);
    } else {
FUSEX_UNROLL
      for (int l = 0; l < rep_n<prog<C>::dt(M), W>; ++l) out[l] = 0;
    }
  } else {
    constexpr int U = P::operand(M, k);
    const I e = static_cast<I>(ext_of<C, P::shape(U, ax)>(*cx.a));
    constexpr int span = LA == ax ? W : 1;
    if (p + span <= e) {
      I iu[r];
FUSEX_UNROLL
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[ax] = p;
      remap_operand<C, M, U, W, LA, I>(cx, iu, out);
    } else {
      if constexpr (LA == ax) {
        if (p < e) {  // the lanes straddle the end of operand k
          lanes_fail<C, M, W>(cx, out);
          return;
        }
      }
      cat_operand<C, M, k + 1, W, LA, I>(cx, idx, p - e, out);
    }
  }
}

template <class C, int M, int W, int LA, class I, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const I* idx, rep_t<prog<C>::dt(M)>* out) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  const group_args<C>& a = *cx.a;
  if constexpr (K == op_kind::cat) {
    cat_operand<C, M, 0, W, LA, I>(cx, idx, idx[P::axis(M)], out);
  } else if constexpr (K == op_kind::pad) {
    constexpr int ax = P::axis(M);
    constexpr int U = P::operand(M, 0);
    const I low = static_cast<I>(ext_of<C, P::iparam(M, 0)>(a));
    const I e = static_cast<I>(ext_of<C, P::shape(U, ax)>(a));
    const I p = idx[ax] - low;
    constexpr int span = LA == ax ? W : 1;
    if (p >= 0 && p + span <= e) {
      I iu[r];
FUSEX_UNROLL
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[ax] = p;
      remap_operand<C, M, U, W, LA, I>(cx, iu, out);
    } else if (p + span <= 0 || p >= e) {
      splat_constant<D, W>(P::value(M), out);
    } else if constexpr (LA == ax) {
      lanes_fail<C, M, W>(cx, out);  // the lanes straddle a pad boundary
    } else {
      splat_constant<D, W>(0.0, out);  // not reached: one position is inside or outside
    }
  } else {
    constexpr int U = P::operand(M, 0);
    constexpr int ru = P::rank(U);
    I iu[ru > 0 ? ru : 1];
    if constexpr (K == op_kind::broadcast_in_dim) {
      // the operand axis that becomes the lane axis, unless it is statically 1
      constexpr int j_lane = broadcast_lane_axis<C, M>(LA);
      static_for<ru>([&](auto jj) {
        constexpr int j = decltype(jj)::value;
        iu[j] = P::static1(U, j) ? I(0) : idx[P::map(M, j)];
      });
      remap_operand<C, M, U, W, j_lane, I>(cx, iu, out);
    } else if constexpr (K == op_kind::permute) {
      static_for<r>([&](auto ii) {
        constexpr int i = decltype(ii)::value;
        iu[P::map(M, i)] = idx[i];
      });
      remap_operand<C, M, U, W, permuted_axis<C, M>(LA), I>(cx, iu, out);
    } else if constexpr (K == op_kind::slice) {
      constexpr int ax = P::axis(M);
      constexpr int s_step = P::iparam(M, 2);
      const I start = static_cast<I>(ext_of<C, P::iparam(M, 0)>(a));
      const I step = static_cast<I>(ext_of<C, s_step>(a));
FUSEX_UNROLL
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[ax] = start + idx[ax] * step;
      if constexpr (LA != ax || (P::expr_const(s_step) && P::expr_value(s_step) == 1)) {
        remap_operand<C, M, U, W, LA, I>(cx, iu, out);
      } else {
        if (step == 1) remap_operand<C, M, U, W, LA, I>(cx, iu, out);
        else lanes_fail<C, M, W>(cx, out);
      }
    } else if constexpr (K == op_kind::reshape) {
      // Axes the reshape keeps (equal leading and trailing extents) pass
      // through; only the middle is linearised through M's extents and
      // split again through U's, so merging axes costs no division.
      constexpr reshape_parts parts = split_reshape<C, M>();
      constexpr int m0 = parts.prefix, m1 = r - parts.suffix, u0 = parts.prefix, u1 = ru - parts.suffix;
      static_for<parts.prefix>([&](auto dd) { iu[decltype(dd)::value] = idx[decltype(dd)::value]; });
      static_for<parts.suffix>([&](auto dd) { iu[ru - 1 - decltype(dd)::value] = idx[r - 1 - decltype(dd)::value]; });
      I lin = 0;
      static_for<m1 - m0>([&](auto dd) {
        constexpr int d = m0 + decltype(dd)::value;
        lin = lin * static_cast<I>(ext_of<C, P::shape(M, d)>(a)) + idx[d];
      });
      static_for<u1 - u0>([&](auto kk) {
        constexpr int d = u1 - 1 - decltype(kk)::value;
        if constexpr (d == u0) {
          iu[d] = lin;
        } else {
          I q, rem;
          divmod_by<C, P::shape(U, d)>(a, lin, q, rem);
          iu[d] = rem;
          lin = q;
        }
      });
      if constexpr (LA < 0 || ru == 0) {
        remap_operand<C, M, U, W, -1, I>(cx, iu, out);
      } else if constexpr (LA < m0) {
        remap_operand<C, M, U, W, LA, I>(cx, iu, out);
      } else if constexpr (LA >= m1) {
        remap_operand<C, M, U, W, LA - r + ru, I>(cx, iu, out);
      } else if constexpr (LA == m1 - 1 && u1 > u0) {
        // consecutive linear positions: they stay on U's innermost middle
        // axis unless they cross its end
        if (iu[u1 - 1] + W <= static_cast<I>(ext_of<C, P::shape(U, u1 - 1)>(a)))
          remap_operand<C, M, U, W, u1 - 1, I>(cx, iu, out);
        else
          lanes_fail<C, M, W>(cx, out);
      } else {
        lanes_fail<C, M, W>(cx, out);
      }
    }
  }
}

// Computes member M of the frame rooted at R into the frame store, in M's
// representation.
template <class C, int R, int M, int W, int LA, class I, bool Raw, class Ctx, class S>
FUSEX_HD inline void compute(const Ctx& cx, const I* idx, S& st) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  const group_args<C>& a = *cx.a;
  auto* o = lanes_of<C, R, M>(st);
  auto set_values = [&](const vt<D>* v) { pack_rep<D, W>(v, o); };
  if constexpr (K == op_kind::input) {  // a load
    constexpr int s = P::slot(M);
    if constexpr (Ctx::has_cache && LA >= 0 && LA == r - 1 && row_domain_load<C>(s)) {
      // from the row cache, when this is the current row of a cached input;
      // other rows, and rows too long for the cache, read global memory
      // again (the cold path: a row kernel's passes expect the cache)
      bool hit = cx.row_cache[s] != nullptr;
FUSEX_UNROLL
      for (int d = 0; d + 1 < r; ++d) hit = hit && idx[d] == static_cast<I>(cx.row_outer[d]);
      if (hit) {
        load_rep<D, W, I, true>(cx.row_cache[s], idx[LA], I(1), o);
        return;
      }
      FUSEX_COLD();
    }
    I off = 0;
FUSEX_UNROLL
    for (int d = 0; d < r; ++d) off += idx[d] * static_cast<I>(a.in_str[s][d]);
    if constexpr (LA < 0) load_rep<D, 1, I>(a.in[s], off, I(1), o);
    else load_rep<D, W, I>(a.in[s], off, static_cast<I>(a.in_str[s][LA]), o);
  } else if constexpr (K == op_kind::constant || K == op_kind::full) {
    splat_constant<D, W>(P::value(M), o);
  } else if constexpr (K == op_kind::index_value) {
    splat_rep<D, W>(to_dtype<D>(static_cast<double>(ext_of<C, P::iparam(M, 0)>(a))), o);
  } else if constexpr (K == op_kind::iota) {
    vt<D> v[W];
FUSEX_UNROLL
    for (int l = 0; l < W; ++l)
      v[l] = to_dtype<D>(P::value(M) + static_cast<double>(static_cast<idx_t>(idx[0]) + l) * P::value2(M));
    set_values(v);
  } else if constexpr (K == op_kind::scalar_param) {
    splat_rep<D, W>(to_dtype<D>(a.scal[P::slot(M)]), o);
  } else if constexpr (is_reduction(K)) {
    constexpr int k = P::red_index(M);
    const auto* v = cx.red->template at<k>();
    if constexpr (Ctx::red_lanes == 1) {
      splat_rep<D, W>(v[0], o);
    } else if constexpr (LA < 0) {
      // the context's lane, without indexing the lane array at run time
      vt<D> x = v[0];
      static_for<Ctx::red_lanes>([&](auto ll) {
        if (decltype(ll)::value == cx.lane) x = v[decltype(ll)::value];
      });
      splat_rep<D, W>(x, o);
    } else {
      static_assert(Ctx::red_lanes == W, "fusex internal: column reduction values are read at the group's lanes");
      vt<D> x[W];
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) x[l] = v[l];
      set_values(x);
    }
  } else if constexpr (category(K) == op_category::remap) {
    remap<C, M, W, LA, I>(cx, idx, o);
  } else {
    // elementwise: operand lanes, from the frame or from a mapped frame, in
    // their representation
    auto operand_rep = [&](auto kk, auto* tmp) {
      constexpr int k = decltype(kk)::value;
      constexpr int U = P::operand(M, k);
      constexpr dtype DU = P::dt(U);
      if constexpr (P::identity(M, k)) {
        const auto* src = lanes_of<C, R, U>(st);
FUSEX_UNROLL
        for (int l = 0; l < rep_n<DU, W>; ++l) tmp[l] = src[l];
      } else {
        constexpr int ru = P::rank(U);
        constexpr std::int64_t mask = P::bcast(M, k);
        if constexpr (ru == 0 || LA < 0 || ((mask >> (LA >= 0 ? LA : 0)) & 1)) {
          idx_t iu[ru > 0 ? ru : 1];
FUSEX_UNROLL
          for (int d = 0; d < ru; ++d) iu[d] = ((mask >> d) & 1) ? 0 : static_cast<idx_t>(idx[d]);
          splat_rep<DU, W>(eval_one<C, U>(cx, iu), tmp);
        } else {
          I iu[ru];
FUSEX_UNROLL
          for (int d = 0; d < ru; ++d) iu[d] = ((mask >> d) & 1) ? I(0) : idx[d];
          eval<C, U, W, LA, I>(cx, iu, tmp);
        }
      }
    };
    // ... and as values
    auto operand_values = [&](auto kk, auto* x) {
      constexpr dtype DU = P::dt(P::operand(M, decltype(kk)::value));
      rep_t<DU> t[rep_n<DU, W>];
      operand_rep(kk, t);
      unpack_rep<DU, W>(t, x);
    };
    constexpr auto c0 = std::integral_constant<int, 0>{};
    constexpr auto c1 = std::integral_constant<int, 1>{};
    constexpr auto c2 = std::integral_constant<int, 2>{};
    if constexpr (packed16<D> && packed_op(K) && operands_of_dtype<C, M>()) {
      // packed 16-bit arithmetic: one correctly rounded instruction per two lanes
      constexpr int n = rep_n<D, W>;
      rep_t<D> x[n], y[n];
      operand_rep(c0, x);
      if constexpr (P::nops(M) > 1) {
        operand_rep(c1, y);
      } else {
FUSEX_UNROLL
        for (int l = 0; l < n; ++l) y[l] = 0;
      }
FUSEX_UNROLL
      for (int l = 0; l < n; ++l) o[l] = packed_apply<K, D>(x[l], y[l]);
    } else if constexpr (packed16<D> && selects_dtype<C, M>()) {
      // a select of packed halves
      constexpr int n = rep_n<D, W>;
      vt<P::dt(P::operand(M, 0))> pr[W];
      rep_t<D> x[n], y[n];
      operand_values(c0, pr);
      operand_rep(c1, x);
      operand_rep(c2, y);
FUSEX_UNROLL
      for (int l = 0; l < n; ++l) {
        const std::uint32_t m = (pr[2 * l] != 0 ? 0xffffu : 0u) | (2 * l + 1 < W && pr[2 * l + 1] != 0 ? 0xffff0000u : 0u);
        o[l] = (x[l] & m) | (y[l] & ~m);
      }
    } else {
      constexpr dtype ct = compute_dtype_of<C, M>();
      vt<D> v[W];
      if constexpr (K == op_kind::convert) {
        vt<P::dt(P::operand(M, 0))> x[W];
        operand_values(c0, x);
        if constexpr (is_16bit(D)) {
FUSEX_UNROLL
          for (int l = 0; l < W; ++l) v[l] = static_cast<float>(x[l]);
        } else {
FUSEX_UNROLL
          for (int l = 0; l < W; ++l) v[l] = to_dtype<D>(x[l]);
        }
      } else if constexpr (K == op_kind::where) {
        vt<P::dt(P::operand(M, 0))> pr[W];
        vt<P::dt(P::operand(M, 1))> x[W];
        vt<P::dt(P::operand(M, 2))> y[W];
        operand_values(c0, pr);
        operand_values(c1, x);
        operand_values(c2, y);
FUSEX_UNROLL
        for (int l = 0; l < W; ++l) {
          const vt<ct> t = pr[l] != 0 ? static_cast<vt<ct>>(x[l]) : static_cast<vt<ct>>(y[l]);
          if constexpr (is_16bit(D)) v[l] = t;
          else v[l] = to_dtype<D>(t);
        }
      } else if constexpr (P::nops(M) == 1) {
        vt<P::dt(P::operand(M, 0))> x[W];
        operand_values(c0, x);
FUSEX_UNROLL
        for (int l = 0; l < W; ++l) {
          const vt<ct> t = unary<K>(static_cast<vt<ct>>(x[l]));
          if constexpr (is_16bit(D)) v[l] = t;
          else v[l] = to_dtype<D>(t);
        }
      } else if constexpr (constexpr scale_shift sc = scale_shift_of<C, M>(); sc.u >= 0) {
        // (u + k) * 2^e as one fused multiply-add, exactly: the scaling by a
        // power of two rounds nothing
        const auto* u = lanes_of<C, R, sc.u>(st);
FUSEX_UNROLL
        for (int l = 0; l < W; ++l) v[l] = math::fma(u[l], static_cast<float>(sc.c), static_cast<float>(sc.kc));
      } else {
        vt<P::dt(P::operand(M, 0))> x[W];
        vt<P::dt(P::operand(M, 1))> y[W];
        operand_values(c0, x);
        operand_values(c1, y);
        if constexpr (K == op_kind::div && is_floating(ct) && W > 1 && splat_operand<C, M, 1, LA>()) {
          // one divisor for all the lanes (a row's sum, a norm): its
          // reciprocal once, then a multiply per lane (within 2 ulp of division)
          const vt<ct> rc = vt<ct>(1) / static_cast<vt<ct>>(y[0]);
FUSEX_UNROLL
          for (int l = 0; l < W; ++l) {
            const vt<ct> t = static_cast<vt<ct>>(x[l]) * rc;
            if constexpr (is_16bit(D)) v[l] = static_cast<float>(t);
            else v[l] = to_dtype<D>(t);
          }
        } else {
FUSEX_UNROLL
          for (int l = 0; l < W; ++l) {
            const auto t = binary<K>(static_cast<vt<ct>>(x[l]), static_cast<vt<ct>>(y[l]));
            if constexpr (is_16bit(D)) v[l] = static_cast<float>(t);
            else v[l] = to_dtype<D>(t);
          }
        }
      }
      // 16-bit results round: packing on the device (F2FP, two lanes per
      // instruction); on the host here, unless the value is exact already
      // or a store rounds it.
      if constexpr (is_16bit(D) && !packed16<D> && !exact_in_dtype<C, M>() && !(Raw && M == R)) round_lanes<D, W>(v);
      set_values(v);
    }
  }
}

template <class C, int R, int W, int LA, class I, bool Raw, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const I* idx, rep_t<prog<C>::dt(R)>* out) {
  static_assert(LA >= 0 || W == 1, "fusex internal: one-value evaluation has a single lane");
  using F = frame<C, R>;
  frame_store<F::nf(), F::nd(), F::nl(), F::nh(), W> st;
  static_for<F::size()>([&](auto kk) {
    constexpr int m = F::id(decltype(kk)::value);
    compute<C, R, m, W, LA, I, Raw>(cx, idx, st);
  });
  const auto* r = lanes_of<C, R, R>(st);
FUSEX_UNROLL
  for (int l = 0; l < rep_n<prog<C>::dt(R), W>; ++l) out[l] = r[l];
}

// Chunk `item` of a space with extents ext (rank r), cut into runs of up to W
// lanes along the innermost axis: writes its index, returns its lane count.
// The host loops enumerate items this way.
template <int W>
inline int chunk_index(idx_t item, const idx_t* ext, int r, idx_t* idx) {
  const idx_t last = r > 0 ? ext[r - 1] : 1;
  const idx_t per_row = (last + W - 1) / W;
  idx_t row = item / per_row;
  for (int d = r - 2; d >= 0; --d) {
    idx[d] = row % ext[d];
    row /= ext[d];
  }
  const idx_t col = (item % per_row) * W;
  if (r > 0) idx[r - 1] = col;
  const idx_t left = last - col;
  return static_cast<int>(left < W ? left : W);
}

}  // namespace fusex::detail::codegen
