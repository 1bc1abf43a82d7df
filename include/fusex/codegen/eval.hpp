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
#if FUSEX_DEVICE_PASS
    a.div[S].divmod(n, q, r);
#else
    const I e = static_cast<I>(a.ext[S] > 0 ? a.ext[S] : 1);
    q = n / e;
    r = n - q * e;
#endif
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
};

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
    int nf = 0, nd = 0, nl = 0;
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
      const int c = (d == dtype::f16 || d == dtype::bf16 || d == dtype::f32) ? 0 : d == dtype::f64 ? 1 : 2;
      I.cls[I.n] = c;
      I.pos[I.n] = c == 0 ? I.nf++ : c == 1 ? I.nd++ : I.nl++;
      ++I.n;
    }
    return I;
  }
  static constexpr info I = make();
  static consteval int size() { return I.n; }
  static consteval int id(int k) { return I.ids[k]; }
  static consteval int where(int local) { return I.where[local]; }
  static consteval int cls(int k) { return I.cls[k]; }
  static consteval int pos(int k) { return I.pos[k]; }
  static consteval int nf() { return I.nf; }
  static consteval int nd() { return I.nd; }
  static consteval int nl() { return I.nl; }
};

template <int NF, int ND, int NL, int W>
struct frame_store {
  float f[NF > 0 ? NF : 1][W];
  double d[ND > 0 ? ND : 1][W];
  long long l[NL > 0 ? NL : 1][W];
};

template <class C, int R, int M, class S>
FUSEX_HD inline auto* lanes_of(S& st) {
  using F = frame<C, R>;
  constexpr int w = F::where(M);
  static_assert(w >= 0, "fusex internal: local outside its frame");
  constexpr int c = F::cls(w), p = F::pos(w);
  if constexpr (c == 0) return st.f[p];
  else if constexpr (c == 1) return st.d[p];
  else return st.l[p];
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

// W lanes of local R at coordinates idx (those of lane 0), lanes along axis
// LA; or, with LA = -1 and W = 1, one value. Raw: a 16-bit root is left in
// float for a consumer that rounds it itself (a store).
template <class C, int R, int W, int LA, class I, bool Raw = false, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const I* idx, vt<prog<C>::dt(R)>* out);

// One value of local U at idx.
template <class C, int U, class Ctx>
FUSEX_HD inline vt<prog<C>::dt(U)> eval_one(const Ctx& cx, const idx_t* idx) {
  vt<prog<C>::dt(U)> v[1];
  eval<C, U, 1, -1, idx_t>(cx, idx, v);
  return v[0];
}

template <class C, int M, int W, int LA, class I, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const I* idx, vt<prog<C>::dt(M)>* out);

// The cold path of a lanes-mode remap: one value per lane.
template <class C, int M, int W, int LA, class I, class Ctx>
FUSEX_HD inline void remap_by_lane(const Ctx& cx, const I* idx, vt<prog<C>::dt(M)>* out) {
  constexpr int r = prog<C>::rank(M);
  FUSEX_COLD();
  idx_t il[r > 0 ? r : 1];
#pragma unroll
  for (int d = 0; d < r; ++d) il[d] = idx[d];
#pragma unroll 1
  for (int l = 0; l < W; ++l) {
    il[LA] = static_cast<idx_t>(idx[LA]) + l;
    Ctx c1 = cx;
    c1.lane = l;
    vt<prog<C>::dt(M)> v[1];
    remap<C, M, 1, -1, idx_t>(c1, il, v);
    static_for<W>([&](auto k) {
      if (decltype(k)::value == l) out[decltype(k)::value] = v[0];
    });
  }
}

// out = operand lanes converted to M's dtype.
template <class C, int M, int U, int W>
FUSEX_HD inline void convert_lanes(const vt<prog<C>::dt(U)>* in, vt<prog<C>::dt(M)>* out) {
  constexpr dtype D = prog<C>::dt(M);
#pragma unroll
  for (int l = 0; l < W; ++l) out[l] = static_cast<vt<D>>(in[l]);
  if constexpr (prog<C>::dt(U) != D) {
    if constexpr (is_16bit(D)) round_lanes<D, W>(out);
    else
#pragma unroll
      for (int l = 0; l < W; ++l) out[l] = to_dtype<D>(in[l]);
  }
}

// Operand U of remap M at coordinates iu, lanes along LU (or one value
// broadcast over the lanes when LU < 0), into M's dtype.
template <class C, int M, int U, int W, int LU, class I, class Ctx>
FUSEX_HD inline void remap_operand(const Ctx& cx, const I* iu, vt<prog<C>::dt(M)>* out) {
  constexpr int ru = prog<C>::rank(U);
  vt<prog<C>::dt(U)> tmp[W];
  if constexpr (LU < 0 && W > 1) {
    idx_t i1[ru > 0 ? ru : 1];
#pragma unroll
    for (int d = 0; d < ru; ++d) i1[d] = iu[d];
    const auto v = eval_one<C, U>(cx, i1);
#pragma unroll
    for (int l = 0; l < W; ++l) tmp[l] = v;
  } else {
    eval<C, U, W, LU, I>(cx, iu, tmp);
  }
  convert_lanes<C, M, U, W>(tmp, out);
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

template <class C, int M, int W, int LA, class I, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const I* idx, vt<prog<C>::dt(M)>* out) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  const group_args<C>& a = *cx.a;
  if constexpr (K == op_kind::cat) {
    constexpr int ax = P::axis(M);
    const I p = idx[ax];
    I off = 0;
    bool done = false;
    static_for<P::nops(M)>([&](auto kk) {
      constexpr int U = P::operand(M, decltype(kk)::value);
      const I e = static_cast<I>(ext_of<C, P::shape(U, ax)>(a));
      // lanes mode along the cat axis: all W positions must fall in U
      const bool inside = LA == ax ? (p >= off && p + W <= off + e) : (p >= off && p < off + e);
      if (!done && inside) {
        I iu[r];
#pragma unroll
        for (int d = 0; d < r; ++d) iu[d] = idx[d];
        iu[ax] = p - off;
        remap_operand<C, M, U, W, LA, I>(cx, iu, out);
        done = true;
      }
      off += e;
    });
    if constexpr (LA == ax) {
      if (!done) remap_by_lane<C, M, W, LA, I>(cx, idx, out);
    }
  } else if constexpr (K == op_kind::pad) {
    constexpr int ax = P::axis(M);
    constexpr int U = P::operand(M, 0);
    const I low = static_cast<I>(ext_of<C, P::iparam(M, 0)>(a));
    const I e = static_cast<I>(ext_of<C, P::shape(U, ax)>(a));
    const I p = idx[ax] - low;
    constexpr int span = LA == ax ? W : 1;
    if (p >= 0 && p + span <= e) {
      I iu[r];
#pragma unroll
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[ax] = p;
      remap_operand<C, M, U, W, LA, I>(cx, iu, out);
    } else if (p + span <= 0 || p >= e) {
      const vt<D> fill = to_dtype<D>(P::value(M));
#pragma unroll
      for (int l = 0; l < W; ++l) out[l] = fill;
    } else {
      if constexpr (LA == ax) remap_by_lane<C, M, W, LA, I>(cx, idx, out);
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
#pragma unroll
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[ax] = start + idx[ax] * step;
      if constexpr (LA != ax || (P::expr_const(s_step) && P::expr_value(s_step) == 1)) {
        remap_operand<C, M, U, W, LA, I>(cx, iu, out);
      } else {
        if (step == 1) remap_operand<C, M, U, W, LA, I>(cx, iu, out);
        else remap_by_lane<C, M, W, LA, I>(cx, idx, out);
      }
    } else if constexpr (K == op_kind::reshape) {
      // Row-major linear index through M's extents, back through U's.
      I lin = 0;
      static_for<r>([&](auto dd) {
        constexpr int d = decltype(dd)::value;
        lin = lin * static_cast<I>(ext_of<C, P::shape(M, d)>(a)) + idx[d];
      });
      auto unflatten = [&](I li) {
        static_for<ru>([&](auto kk) {
          constexpr int d = ru - 1 - decltype(kk)::value;
          if constexpr (d == 0) {
            iu[0] = li;
          } else {
            I q, rem;
            divmod_by<C, P::shape(U, d)>(a, li, q, rem);
            iu[d] = rem;
            li = q;
          }
        });
      };
      if constexpr (LA < 0 || ru == 0) {
        unflatten(lin);
        remap_operand<C, M, U, W, (ru > 0 && LA >= 0 ? ru - 1 : -1), I>(cx, iu, out);
      } else if constexpr (LA == r - 1) {
        // the lanes stay in one row of U when they do not cross its end
        unflatten(lin);
        if (iu[ru - 1] + W <= static_cast<I>(ext_of<C, P::shape(U, ru - 1)>(a)))
          remap_operand<C, M, U, W, ru - 1, I>(cx, iu, out);
        else
          remap_by_lane<C, M, W, LA, I>(cx, idx, out);
      } else {
        remap_by_lane<C, M, W, LA, I>(cx, idx, out);
      }
    }
  }
}

// Computes member M of the frame rooted at R into the frame store.
template <class C, int R, int M, int W, int LA, class I, bool Raw, class Ctx, class S>
FUSEX_HD inline void compute(const Ctx& cx, const I* idx, S& st) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  const group_args<C>& a = *cx.a;
  auto* o = lanes_of<C, R, M>(st);
  auto splat = [&](vt<D> v) {
#pragma unroll
    for (int l = 0; l < W; ++l) o[l] = v;
  };
  if constexpr (K == op_kind::input) {  // a load
    constexpr int s = P::slot(M);
    if constexpr (Ctx::has_cache && LA >= 0 && LA == r - 1) {
      // from the row cache, when this is the current row of a cached input
      if (cx.row_cache[s]) {
        bool same_row = true;
#pragma unroll
        for (int d = 0; d + 1 < r; ++d) same_row = same_row && static_cast<idx_t>(idx[d]) == cx.row_outer[d];
        if (same_row) {
          load_lanes<D, W, I, true>(cx.row_cache[s], idx[LA], I(1), o);
          return;
        }
      }
    }
    I off = 0;
#pragma unroll
    for (int d = 0; d < r; ++d) off += idx[d] * static_cast<I>(a.in_str[s][d]);
    if constexpr (LA < 0) splat(load_value<D>(a.in[s], off));
    else load_lanes<D, W, I>(a.in[s], off, static_cast<I>(a.in_str[s][LA]), o);
  } else if constexpr (K == op_kind::constant || K == op_kind::full) {
    splat(to_dtype<D>(P::value(M)));
  } else if constexpr (K == op_kind::index_value) {
    splat(to_dtype<D>(static_cast<double>(ext_of<C, P::iparam(M, 0)>(a))));
  } else if constexpr (K == op_kind::iota) {
#pragma unroll
    for (int l = 0; l < W; ++l)
      o[l] = to_dtype<D>(P::value(M) + static_cast<double>(static_cast<idx_t>(idx[0]) + l) * P::value2(M));
  } else if constexpr (K == op_kind::scalar_param) {
    splat(to_dtype<D>(a.scal[P::slot(M)]));
  } else if constexpr (is_reduction(K)) {
    constexpr int k = P::red_index(M);
    const auto* v = cx.red->template at<k>();
    if constexpr (Ctx::red_lanes == 1) {
      splat(v[0]);
    } else if constexpr (LA < 0) {
      splat(v[cx.lane]);
    } else {
      static_assert(Ctx::red_lanes == W, "fusex internal: column reduction values are read at the group's lanes");
#pragma unroll
      for (int l = 0; l < W; ++l) o[l] = v[l];
    }
  } else if constexpr (category(K) == op_category::remap) {
    remap<C, M, W, LA, I>(cx, idx, o);
  } else {
    // elementwise: operand lanes, from the frame or from a mapped frame
    auto operand_lanes = [&](auto kk, auto* tmp) {
      constexpr int k = decltype(kk)::value;
      constexpr int U = P::operand(M, k);
      if constexpr (P::identity(M, k)) {
        const auto* src = lanes_of<C, R, U>(st);
#pragma unroll
        for (int l = 0; l < W; ++l) tmp[l] = src[l];
      } else {
        constexpr int ru = P::rank(U);
        constexpr std::int64_t mask = P::bcast(M, k);
        if constexpr (ru == 0 || LA < 0 || ((mask >> (LA >= 0 ? LA : 0)) & 1)) {
          idx_t iu[ru > 0 ? ru : 1];
#pragma unroll
          for (int d = 0; d < ru; ++d) iu[d] = ((mask >> d) & 1) ? 0 : static_cast<idx_t>(idx[d]);
          const auto v = eval_one<C, U>(cx, iu);
#pragma unroll
          for (int l = 0; l < W; ++l) tmp[l] = v;
        } else {
          I iu[ru];
#pragma unroll
          for (int d = 0; d < ru; ++d) iu[d] = ((mask >> d) & 1) ? I(0) : idx[d];
          eval<C, U, W, LA, I>(cx, iu, tmp);
        }
      }
    };
    constexpr dtype ct = is_comparison(K) ? compute_dtype(promote(P::dt(P::operand(M, 0)), P::dt(P::operand(M, 1))))
                                          : compute_dtype(D);
    if constexpr (K == op_kind::convert) {
      vt<P::dt(P::operand(M, 0))> x[W];
      operand_lanes(std::integral_constant<int, 0>{}, x);
      if constexpr (is_16bit(D)) {
#pragma unroll
        for (int l = 0; l < W; ++l) o[l] = static_cast<float>(x[l]);
      } else {
#pragma unroll
        for (int l = 0; l < W; ++l) o[l] = to_dtype<D>(x[l]);
      }
    } else if constexpr (K == op_kind::where) {
      vt<P::dt(P::operand(M, 0))> p[W];
      vt<P::dt(P::operand(M, 1))> x[W];
      vt<P::dt(P::operand(M, 2))> y[W];
      operand_lanes(std::integral_constant<int, 0>{}, p);
      operand_lanes(std::integral_constant<int, 1>{}, x);
      operand_lanes(std::integral_constant<int, 2>{}, y);
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const vt<ct> v = p[l] != 0 ? static_cast<vt<ct>>(x[l]) : static_cast<vt<ct>>(y[l]);
        if constexpr (is_16bit(D)) o[l] = v;
        else o[l] = to_dtype<D>(v);
      }
    } else if constexpr (P::nops(M) == 1) {
      vt<P::dt(P::operand(M, 0))> x[W];
      operand_lanes(std::integral_constant<int, 0>{}, x);
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const vt<ct> v = unary<K>(static_cast<vt<ct>>(x[l]));
        if constexpr (is_16bit(D)) o[l] = v;
        else o[l] = to_dtype<D>(v);
      }
    } else {
      vt<P::dt(P::operand(M, 0))> x[W];
      vt<P::dt(P::operand(M, 1))> y[W];
      operand_lanes(std::integral_constant<int, 0>{}, x);
      operand_lanes(std::integral_constant<int, 1>{}, y);
#pragma unroll
      for (int l = 0; l < W; ++l) {
        const auto v = binary<K>(static_cast<vt<ct>>(x[l]), static_cast<vt<ct>>(y[l]));
        if constexpr (is_16bit(D)) o[l] = static_cast<float>(v);
        else o[l] = to_dtype<D>(v);
      }
    }
    // 16-bit results round here, two lanes per instruction on the device,
    // unless the value is exact already or a store rounds it.
    if constexpr (is_16bit(D) && !exact_in_dtype<C, M>() && !(Raw && M == R)) round_lanes<D, W>(o);
  }
}

template <class C, int R, int W, int LA, class I, bool Raw, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const I* idx, vt<prog<C>::dt(R)>* out) {
  static_assert(LA >= 0 || W == 1, "fusex internal: one-value evaluation has a single lane");
  using F = frame<C, R>;
  frame_store<F::nf(), F::nd(), F::nl(), W> st;
  static_for<F::size()>([&](auto kk) {
    constexpr int m = F::id(decltype(kk)::value);
    compute<C, R, m, W, LA, I, Raw>(cx, idx, st);
  });
  const auto* r = lanes_of<C, R, R>(st);
#pragma unroll
  for (int l = 0; l < W; ++l) out[l] = r[l];
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
