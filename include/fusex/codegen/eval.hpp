#pragma once
// Gather-style evaluation of a group's values over W lanes, shared by the
// host and CUDA executors.
//
// A frame is rooted at one local and holds every local reachable from it
// through identity edges (elementwise ops over operands of the same shape):
// each is computed once per lane into registers. An operand reached through
// any other edge (a broadcast, a remap) is a new frame evaluated at the
// mapped index. Lanes run along the innermost axis of the frame's root with
// a lane stride; remaps that keep that axis keep the lanes, the others fall
// back to one lane at a time. Loads, immediates and reduction results are
// the leaves.

#include <type_traits>
#include <utility>

#include "ops.hpp"
#include "program.hpp"

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

FUSEX_HD constexpr bool is_reduction(op_kind k) {
  return k == op_kind::sum || k == op_kind::amax || k == op_kind::var_mean;
}

// Typed accessors of an encoded group program.
template <class C>
struct prog {
  using L = layout;
  FUSEX_HD static constexpr std::int64_t at(int i) { return C::at(i); }
  FUSEX_HD static constexpr group_kind kind() { return static_cast<group_kind>(at(L::kind)); }
  FUSEX_HD static constexpr int nlocals() { return static_cast<int>(at(L::nlocals)); }
  FUSEX_HD static constexpr int nreads() { return static_cast<int>(at(L::nreads)); }
  FUSEX_HD static constexpr int nwrites() { return static_cast<int>(at(L::nwrites)); }
  FUSEX_HD static constexpr int nexprs() { return static_cast<int>(at(L::nexprs)); }
  FUSEX_HD static constexpr int nscalars() { return static_cast<int>(at(L::nscalars)); }
  FUSEX_HD static constexpr int noperands() { return static_cast<int>(at(L::noperands)); }
  FUSEX_HD static constexpr int reduction() { return static_cast<int>(at(L::reduction)); }
  FUSEX_HD static constexpr int ops_base() { return L::header + nlocals() * L::record; }
  FUSEX_HD static constexpr int writes_base() { return ops_base() + noperands() * L::operand_record; }
  FUSEX_HD static constexpr int exprs_base() { return writes_base() + nwrites() * L::write_record; }
  FUSEX_HD static constexpr int scalars_base() { return exprs_base() + nexprs(); }
  FUSEX_HD static constexpr int reads_base() { return scalars_base() + nscalars(); }

  FUSEX_HD static constexpr std::uint64_t w(int i, int k) {
    return static_cast<std::uint64_t>(at(L::header + i * L::record + k));
  }
  FUSEX_HD static constexpr op_kind op(int i) { return static_cast<op_kind>(w(i, 0) & 255); }
  FUSEX_HD static constexpr dtype dt(int i) { return static_cast<dtype>((w(i, 0) >> 8) & 255); }
  FUSEX_HD static constexpr int rank(int i) { return static_cast<int>((w(i, 0) >> 16) & 255); }
  FUSEX_HD static constexpr int axis(int i) { return static_cast<std::int8_t>((w(i, 0) >> 24) & 255); }
  FUSEX_HD static constexpr int flag(int i) { return static_cast<std::int8_t>((w(i, 0) >> 32) & 255); }
  FUSEX_HD static constexpr int nops(int i) { return static_cast<int>((w(i, 0) >> 40) & 255); }
  FUSEX_HD static constexpr bool dep(int i) { return (w(i, 0) >> 48) & 1; }
  FUSEX_HD static constexpr int slot(int i) { return static_cast<int>(w(i, 1) & 0xffff) - 1; }
  FUSEX_HD static constexpr int opnd(int i) { return static_cast<int>((w(i, 1) >> 16) & 0xffff); }
  FUSEX_HD static constexpr bool static1(int i, int d) { return (w(i, 1) >> (32 + d)) & 1; }
  FUSEX_HD static constexpr int node(int i) { return static_cast<int>((w(i, 1) >> 40) & 0xffff); }
  FUSEX_HD static constexpr int map(int i, int k) { return static_cast<int>((w(i, 2) >> (4 * k)) & 15); }
  FUSEX_HD static constexpr int iparam(int i, int k) { return static_cast<int>((w(i, 2) >> (32 + 8 * k)) & 255) - 1; }
  FUSEX_HD static constexpr int shape(int i, int d) { return static_cast<int>((w(i, 3) >> (8 * d)) & 255); }
  FUSEX_HD static constexpr double value(int i) { return bit_cast<double>(at(L::header + i * L::record + 4)); }
  FUSEX_HD static constexpr double value2(int i) { return bit_cast<double>(at(L::header + i * L::record + 5)); }
  FUSEX_HD static constexpr std::uint64_t operand_word(int i, int k) {
    return static_cast<std::uint64_t>(at(ops_base() + opnd(i) + k));
  }
  FUSEX_HD static constexpr int operand(int i, int k) { return static_cast<int>(operand_word(i, k) & 0xffff); }
  FUSEX_HD static constexpr std::int64_t bcast(int i, int k) { return static_cast<std::int64_t>((operand_word(i, k) >> 16) & 255); }
  FUSEX_HD static constexpr bool identity(int i, int k) { return (operand_word(i, k) >> 24) & 1; }
  FUSEX_HD static constexpr int write_local(int w) { return static_cast<int>(at(writes_base() + w) & 0xffff); }
  FUSEX_HD static constexpr int write_dest(int w) { return static_cast<int>((at(writes_base() + w) >> 16) & 0xffff) - 1; }
  FUSEX_HD static constexpr int expr_id(int s) { return static_cast<int>(at(exprs_base() + s)); }
  FUSEX_HD static constexpr int scalar_arg(int s) { return static_cast<int>(at(scalars_base() + s)); }
  FUSEX_HD static constexpr int read_node(int r) { return static_cast<int>(at(reads_base() + r)); }
  FUSEX_HD static constexpr bool is_leaf(int i) {
    const op_kind k = op(i);
    return k == op_kind::input || k == op_kind::constant || k == op_kind::full || k == op_kind::iota || k == op_kind::index_value ||
           k == op_kind::scalar_param || is_reduction(k);
  }
  // Compact index of reduction locals (their values live in the context).
  FUSEX_HD static constexpr int red_index(int i) {
    int k = 0;
    for (int j = 0; j < i; ++j) k += is_reduction(op(j)) && nops(j) > 0;
    return k;
  }
  FUSEX_HD static constexpr int nreductions() { return red_index(nlocals()); }
};

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
  double scal[NS];
};

// Values of a group's reductions for the current row (RW == 1) or for each
// lane of the current output elements (column groups).
template <class C, int RW>
struct reduction_values {
  static constexpr int N = prog<C>::nreductions() > 0 ? prog<C>::nreductions() : 1;
  double f[N][RW];
  long long i[N][RW];
};

template <class C, int RW>
struct context {
  static constexpr int red_lanes = RW;
  const group_args<C>* a;
  reduction_values<C, RW>* red;  // null in pointwise groups
  // Row kernels on the device: the current row's copy of each cached input
  // (null when not cached) and the row's outer index.
  const unsigned char* const* row_cache = nullptr;
  const idx_t* row_outer = nullptr;
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
  static constexpr info make() {
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
  FUSEX_HD static constexpr int size() { return I.n; }
  FUSEX_HD static constexpr int id(int k) { return I.ids[k]; }
  FUSEX_HD static constexpr int where(int local) { return I.where[local]; }
  FUSEX_HD static constexpr int cls(int k) { return I.cls[k]; }
  FUSEX_HD static constexpr int pos(int k) { return I.pos[k]; }
  FUSEX_HD static constexpr int nf() { return I.nf; }
  FUSEX_HD static constexpr int nd() { return I.nd; }
  FUSEX_HD static constexpr int nl() { return I.nl; }
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

// Chunk `item` of a space with extents ext (rank r), cut into runs of up to W
// lanes along the innermost axis: writes its index, returns its lane count.
// Host and device loops enumerate items the same way.
template <int W>
FUSEX_HD inline int chunk_index(idx_t item, const idx_t* ext, int r, idx_t* idx) {
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

// Lanes: W values of a frame's root at idx, idx + ls * e_LA, ..., along
// axis LA of the root (-1 for rank 0: all lanes alike). A remap maps the lane
// axis to its operand's (a permute just moves it), so every frame compiles
// once per lane axis and width, never as a one-lane copy.
template <class C, int R, int W, int LA, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const idx_t* idx, idx_t ls, int n, vt<prog<C>::dt(R)>* out);

// All lanes of local U at one index (values that do not vary along the lanes).
template <class C, int U, int W, class Ctx>
FUSEX_HD inline void eval_splat(const Ctx& cx, const idx_t* idx, vt<prog<C>::dt(U)>* out) {
  eval<C, U, W, (prog<C>::rank(U) > 0 ? 0 : -1)>(cx, idx, 0, W, out);
}

template <class C, int M, int W, int LA, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const idx_t* idx, idx_t ls, int n, vt<prog<C>::dt(M)>* out);

// Lane by lane, where lanes straddle a pad or cat boundary or a reshape does
// not keep the lane axis: each lane is the first lane of its own evaluation.
// One lane of remap M, kept out of line: the lane-by-lane loop would
// otherwise hold W copies of the whole operand subtree.
template <class C, int M, int W, int LA, class Ctx>
FUSEX_HD FUSEX_NOINLINE vt<prog<C>::dt(M)> remap_one(const Ctx& cx, const idx_t* idx) {
  vt<prog<C>::dt(M)> one[W];
  remap<C, M, W, LA>(cx, idx, 0, 1, one);
  return one[0];
}

template <class C, int M, int W, int LA, class Ctx>
FUSEX_HD inline void remap_by_lane(const Ctx& cx, const idx_t* idx, idx_t ls, int n, vt<prog<C>::dt(M)>* out) {
  using P = prog<C>;
  constexpr int r = P::rank(M);
  idx_t il[r > 0 ? r : 1];
  for (int d = 0; d < r; ++d) il[d] = idx[d];
  for (int l = 0; l < W; ++l) {
    const int lane = l < n ? l : n - 1;
    if constexpr (LA >= 0) il[LA] = idx[LA] + lane * ls;
    out[l] = remap_one<C, M, W, LA>(cx, il);
  }
}

// Lanes l in [0, n) sit at p0 + l * ls along the lane axis (ls >= 1 here).
// The first lane at or after position t, clamped to [0, n].
FUSEX_HD inline int first_lane_at(idx_t p0, idx_t ls, int n, idx_t t) {
  if (t <= p0) return 0;
  const idx_t l = (t - p0 + ls - 1) / ls;
  return l < n ? static_cast<int>(l) : n;
}

// Evaluates operand U at iu for lanes [lo, hi) of the caller and stores them
// at out[lo, hi): one segment of a run of lanes split at a boundary.
template <class C, int M, int U, int W, int LA, class Ctx>
FUSEX_HD inline void eval_segment(const Ctx& cx, const idx_t* iu, idx_t ls, int lo, int hi,
                                  vt<prog<C>::dt(M)>* out) {
  vt<prog<C>::dt(U)> tmp[W];
  eval<C, U, W, LA>(cx, iu, ls, hi - lo, tmp);
  for (int l = lo; l < hi; ++l) out[l] = to_dtype<prog<C>::dt(M)>(tmp[l - lo]);
}

template <class C, int M, int W, int LA, class Ctx>
FUSEX_HD void remap(const Ctx& cx, const idx_t* idx, idx_t ls, int n, vt<prog<C>::dt(M)>* out) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  const idx_t* ext = cx.a->ext;
  // lanes past n repeat the last one (they are computed but never stored)
  auto pad_tail = [&] {
    for (int l = n; l < W; ++l) out[l] = out[n - 1];
  };
  if constexpr (K == op_kind::cat) {
    constexpr int a = P::axis(M);
    const idx_t p0 = idx[a];
    const idx_t step = a == LA ? ls : 0;  // lanes move along the cat axis only if it is the lane axis
    const idx_t p_last = p0 + (n - 1) * step;
    idx_t off = 0;
    static_for<P::nops(M)>([&](auto kk) {
      constexpr int k = decltype(kk)::value;
      constexpr int U = P::operand(M, k);
      const idx_t e = ext[P::shape(U, a)];
      if (p_last >= off && p0 < off + e) {  // some lanes fall in this operand
        const int lo = step > 0 ? first_lane_at(p0, step, n, off) : 0;
        const int hi = step > 0 ? first_lane_at(p0, step, n, off + e) : n;
        idx_t iu[r];
        for (int d = 0; d < r; ++d) iu[d] = idx[d];
        iu[a] = p0 + lo * step - off;
        eval_segment<C, M, U, W, LA>(cx, iu, ls, lo, hi, out);
      }
      off += e;
    });
    pad_tail();
  } else {
    constexpr int U = P::operand(M, 0);
    constexpr int ru = P::rank(U);
    idx_t iu[ru > 0 ? ru : 1];
    vt<P::dt(U)> tmp[W];
    auto finish = [&] {
      for (int l = 0; l < W; ++l) out[l] = to_dtype<D>(tmp[l]);
    };
    if constexpr (K == op_kind::broadcast_in_dim) {
      // the operand axis that becomes the lane axis, if any
      constexpr int j_lane = [] {
        int j = -1;
        for (int k = 0; k < ru; ++k)
          if (P::map(M, k) == LA) j = k;
        return j;
      }();
      for (int j = 0; j < ru; ++j) {
        const idx_t e = ext[P::shape(U, j)];
        iu[j] = e == 1 ? 0 : idx[P::map(M, j)];
      }
      if constexpr (j_lane >= 0) {
        const bool grows = ext[P::shape(U, j_lane)] == 1;  // a run-time extent of 1 broadcasts
        eval<C, U, W, j_lane>(cx, iu, grows ? 0 : ls, grows ? W : n, tmp);
      } else {
        eval_splat<C, U, W>(cx, iu, tmp);
      }
      finish();
    } else if constexpr (K == op_kind::permute) {
      for (int i = 0; i < r; ++i) iu[P::map(M, i)] = idx[i];
      eval<C, U, W, (LA >= 0 ? P::map(M, LA) : -1)>(cx, iu, ls, n, tmp);
      finish();
    } else if constexpr (K == op_kind::slice) {
      constexpr int a = P::axis(M);
      const idx_t start = ext[P::iparam(M, 0)], step = ext[P::iparam(M, 2)];
      for (int d = 0; d < r; ++d) iu[d] = idx[d];
      iu[a] = start + idx[a] * step;
      eval<C, U, W, LA>(cx, iu, a == LA ? ls * step : ls, n, tmp);
      finish();
    } else if constexpr (K == op_kind::pad) {
      constexpr int a = P::axis(M);
      const idx_t low = ext[P::iparam(M, 0)], e = ext[P::shape(U, a)];
      const vt<D> fill = to_dtype<D>(P::value(M));
      const idx_t p0 = idx[a];
      const idx_t step = a == LA ? ls : 0;
      // lanes in [lo, hi) read the operand; the others are padding
      const int lo = step > 0 ? first_lane_at(p0, step, n, low) : (p0 >= low ? 0 : n);
      const int hi = step > 0 ? first_lane_at(p0, step, n, low + e) : (p0 < low + e ? n : 0);
      for (int l = 0; l < n; ++l) out[l] = fill;
      if (hi > lo) {
        for (int d = 0; d < r; ++d) iu[d] = idx[d];
        iu[a] = p0 + lo * step - low;
        eval_segment<C, M, U, W, LA>(cx, iu, ls, lo, hi, out);
      }
      pad_tail();
    } else if constexpr (K == op_kind::reshape) {
      // Row-major linear index through M's extents, back through U's. Lanes
      // along M's last axis are consecutive linear indices: split them where
      // they cross one of U's rows, each part a run along U's last axis.
      idx_t lin = 0;
      for (int d = 0; d < r; ++d) lin = lin * ext[P::shape(M, d)] + idx[d];
      auto unflatten = [&](idx_t li) {
        for (int d = ru - 1; d >= 0; --d) {
          const idx_t e = ext[P::shape(U, d)];
          iu[d] = e > 0 ? li % e : 0;
          li = e > 0 ? li / e : 0;
        }
      };
      if constexpr (r > 0 && ru > 0 && LA == r - 1) {
        const idx_t eu = ext[P::shape(U, ru - 1)];
        const idx_t step = n == 1 ? 0 : ls;
        int lo = 0;
        while (lo < n) {
          const idx_t li = lin + lo * step;
          const int hi = step > 0 && eu > 0 ? first_lane_at(lin, step, n, (li / eu + 1) * eu) : n;
          unflatten(li);
          eval_segment<C, M, U, W, ru - 1>(cx, iu, step, lo, hi, out);
          lo = hi;
        }
        pad_tail();
      } else if (n == 1 || LA < 0) {
        unflatten(lin);
        eval_splat<C, U, W>(cx, iu, tmp);
        finish();
      } else {
        remap_by_lane<C, M, W, LA>(cx, idx, ls, n, out);
      }
    }
  }
}

// Computes member M of the frame rooted at R into the frame store.
template <class C, int R, int M, int W, int LA, class Ctx, class S>
FUSEX_HD inline void compute(const Ctx& cx, const idx_t* idx, idx_t ls, int n, S& st) {
  using P = prog<C>;
  constexpr op_kind K = P::op(M);
  constexpr dtype D = P::dt(M);
  constexpr int r = P::rank(M);
  auto* o = lanes_of<C, R, M>(st);
  if constexpr (K == op_kind::input) {  // a load
    constexpr int s = P::slot(M);
    if constexpr (LA == r - 1 && r > 0) {
      // from the row cache, when this is the current row of a cached input
      if (cx.row_cache && cx.row_cache[s]) {
        bool same_row = true;
        for (int d = 0; d + 1 < r; ++d) same_row = same_row && idx[d] == cx.row_outer[d];
        if (same_row) {
          const unsigned char* row = cx.row_cache[s];
          for (int l = 0; l < W; ++l) o[l] = load_value<D>(row, idx[LA] + (l < n ? l : n - 1) * ls);
          return;
        }
      }
    }
    const void* ptr = cx.a->in[s];
    const idx_t* str = cx.a->in_str[s];
    idx_t off = 0;
    for (int d = 0; d < r; ++d) off += idx[d] * str[d];
    if constexpr (LA < 0) {
      const vt<D> v = load_value<D>(ptr, off);
      for (int l = 0; l < W; ++l) o[l] = v;
    } else {
      const idx_t step = ls * str[LA];
      if (step == 1 && n == W) load_contiguous<D, W>(ptr, off, o);
      else
        for (int l = 0; l < W; ++l) o[l] = load_value<D>(ptr, off + (l < n ? l : n - 1) * step);
    }
  } else if constexpr (K == op_kind::constant || K == op_kind::full) {
    const vt<D> v = to_dtype<D>(P::value(M));
    for (int l = 0; l < W; ++l) o[l] = v;
  } else if constexpr (K == op_kind::index_value) {
    const vt<D> v = to_dtype<D>(static_cast<double>(cx.a->ext[P::iparam(M, 0)]));
    for (int l = 0; l < W; ++l) o[l] = v;
  } else if constexpr (K == op_kind::iota) {
    for (int l = 0; l < W; ++l) o[l] = to_dtype<D>(P::value(M) + static_cast<double>(idx[0] + l * ls) * P::value2(M));
  } else if constexpr (K == op_kind::scalar_param) {
    const vt<D> v = to_dtype<D>(cx.a->scal[P::slot(M)]);
    for (int l = 0; l < W; ++l) o[l] = v;
  } else if constexpr (is_reduction(K)) {
    constexpr int ri = P::red_index(M);
    constexpr bool fp = is_floating(D);
    constexpr int RW = Ctx::red_lanes;
    for (int l = 0; l < W; ++l) {
      const int lr = RW == 1 ? 0 : l;
      if constexpr (fp) o[l] = static_cast<vt<D>>(cx.red->f[ri][lr]);
      else o[l] = cx.red->i[ri][lr];
    }
  } else if constexpr (category(K) == op_category::remap) {
    remap<C, M, W, LA>(cx, idx, ls, n, o);
  } else {
    // elementwise: operand lanes, from the frame or from a mapped frame
    constexpr int nop = P::nops(M);
    auto operand_lanes = [&](auto kk, auto* tmp) {
      constexpr int k = decltype(kk)::value;
      constexpr int U = P::operand(M, k);
      if constexpr (P::identity(M, k)) {
        const auto* src = lanes_of<C, R, U>(st);
        for (int l = 0; l < W; ++l) tmp[l] = src[l];
      } else {
        constexpr int ru = P::rank(U);
        constexpr std::int64_t mask = P::bcast(M, k);
        idx_t iu[ru > 0 ? ru : 1];
        for (int d = 0; d < ru; ++d) iu[d] = ((mask >> d) & 1) ? 0 : idx[d];
        if constexpr (ru == 0 || LA < 0 || ((mask >> (LA >= 0 ? LA : 0)) & 1)) eval_splat<C, U, W>(cx, iu, tmp);
        else eval<C, U, W, LA>(cx, iu, ls, n, tmp);
      }
    };
    if constexpr (K == op_kind::convert) {
      vt<P::dt(P::operand(M, 0))> a[W];
      operand_lanes(std::integral_constant<int, 0>{}, a);
      for (int l = 0; l < W; ++l) o[l] = to_dtype<D>(a[l]);
    } else if constexpr (K == op_kind::where) {
      constexpr dtype ct = compute_dtype(D);
      vt<P::dt(P::operand(M, 0))> p[W];
      vt<P::dt(P::operand(M, 1))> a[W];
      vt<P::dt(P::operand(M, 2))> b[W];
      operand_lanes(std::integral_constant<int, 0>{}, p);
      operand_lanes(std::integral_constant<int, 1>{}, a);
      operand_lanes(std::integral_constant<int, 2>{}, b);
      for (int l = 0; l < W; ++l) {
        const vt<ct> x = static_cast<vt<ct>>(a[l]), y = static_cast<vt<ct>>(b[l]);
        o[l] = to_dtype<D>(p[l] != 0 ? x : y);
      }
    } else if constexpr (nop == 1) {
      constexpr dtype ct = compute_dtype(D);
      vt<P::dt(P::operand(M, 0))> a[W];
      operand_lanes(std::integral_constant<int, 0>{}, a);
      for (int l = 0; l < W; ++l) o[l] = to_dtype<D>(unary<K>(static_cast<vt<ct>>(a[l])));
    } else {
      constexpr dtype da = P::dt(P::operand(M, 0)), db = P::dt(P::operand(M, 1));
      constexpr dtype ct = is_comparison(K) ? compute_dtype(promote(da, db)) : compute_dtype(D);
      vt<da> a[W];
      vt<db> b[W];
      operand_lanes(std::integral_constant<int, 0>{}, a);
      operand_lanes(std::integral_constant<int, 1>{}, b);
      for (int l = 0; l < W; ++l)
        o[l] = to_dtype<D>(binary<K>(static_cast<vt<ct>>(a[l]), static_cast<vt<ct>>(b[l])));
    }
  }
}

template <class C, int R, int W, int LA, class Ctx>
FUSEX_HD void eval(const Ctx& cx, const idx_t* idx, idx_t ls, int n, vt<prog<C>::dt(R)>* out) {
  using F = frame<C, R>;
  frame_store<F::nf(), F::nd(), F::nl(), W> st;
  static_for<F::size()>([&](auto kk) {
    constexpr int m = F::id(decltype(kk)::value);
    compute<C, R, m, W, LA>(cx, idx, ls, n, st);
  });
  const auto* r = lanes_of<C, R, R>(st);
  for (int l = 0; l < W; ++l) out[l] = r[l];
}

}  // namespace fusex::detail::codegen
