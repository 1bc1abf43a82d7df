#pragma once
// The host's row engine: a pass evaluates the roots of a forest (forest.hpp)
// along one row of their domain, a register of lanes at a time.
//
// The row is cut into segments over which every instance's coordinates are
// affine in the lane position: a cat or pad boundary, or a reshape that
// wraps an operand's axis, ends a segment. Binding a segment resolves all
// index arithmetic once: each leaf becomes a pointer and a stride, each cat
// or pad a selected operand, each one-value instance its value. The lanes
// then only load, compute and store: when every leaf and output has unit
// stride the loop runs on whole registers (fast), otherwise, and for the
// last partial register, lanes are gathered (gather). The same evaluation,
// with one value for all lanes (single), computes the one-value instances.
//
// Each prim's semantics are codegen/ops.hpp's and core/math.hpp's, shared
// with the CUDA and reference executors; 16-bit values compute in float and
// round after each prim, as everywhere.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../codegen/eval.hpp"
#include "forest.hpp"
#include "lanes.hpp"

#if defined(__GNUC__) && !defined(__CUDACC__) && defined(__OPTIMIZE__)
#define FUSEX_HOST_FLATTEN __attribute__((flatten))
// One out-of-line copy per engine of the big pieces (binding a segment, a
// segment's register loop, a gathered register), each with everything it
// calls inlined: inlined at every call site they multiplied the code the
// optimiser compiles.
#define FUSEX_HOST_OUTLINE __attribute__((noinline, flatten))
#else
#define FUSEX_HOST_FLATTEN
#define FUSEX_HOST_OUTLINE
#endif

namespace fusex::detail::host_engine {

using codegen::group_args;

template <int K>
using ic = std::integral_constant<int, K>;

// dst = src in 8-byte general-register moves (T trivially copyable, its
// size a multiple of 8): the empty asm keeps the compiler from merging them
// into vector moves.
template <class T>
inline void copy_words(T& dst, const T& src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
  auto* d = reinterpret_cast<unsigned char*>(&dst);
  const auto* s = reinterpret_cast<const unsigned char*>(&src);
  for (std::size_t i = 0; i < sizeof(T); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s + i, 8);
#if defined(__GNUC__)
    asm("" : "+r"(w));
#endif
    std::memcpy(d + i, &w, 8);
  }
}

// Bound state of one segment.
template <class Fo>
struct binding {
  struct leaf_t {
    const void* p;
    idx_t stride;  // elements per lane
    idx_t base;    // iota: the coordinate of lane 0
  };
  std::array<leaf_t, Fo::nleaf> leaf;
  int sel[Fo::nsel];
  float sf[Fo::nsplat_f];
  double sd[Fo::nsplat_d];
  long long sl[Fo::nsplat_l];
};

// What reductions read: the current row's values (row groups) or arrays of
// finished values over each reduction's shape (column groups).
template <class C>
struct reduced {
  const codegen::reduction_values<C, 1>* row = nullptr;
  const void* const* dense = nullptr;  // by compact reduction index
};

// Row-invariant 16-bit leaves (forest::staged_leaf), widened to floats. A
// norm's write read its weight and bias as bf16 in every row, three
// widenings per register where x needs one; the widening shares its port
// with the rounding, and LayerNorm's write waited on that port. Each
// segment's range of such a leaf is widened once per thread and launch and
// read as floats from then on.
//
// Entries are only appended while bindings may point at them: cleared at a
// new launch (launch_epoch: the inputs may have changed, or a workspace
// buffer now hold another tensor) and, when large, where the engine starts
// binding afresh (run, a replay plan, run_one), never under a live binding.
inline std::atomic<unsigned long long> launch_epoch{0};
// Called by each group's entry before its threads start.
inline void new_launch() { launch_epoch.fetch_add(1, std::memory_order_relaxed); }

struct stage_arena {
  struct entry {
    const void* src = nullptr;
    idx_t stride = 0, n = 0;
    dtype dt = dtype::f32;
    std::vector<float> buf;  // moved with the entry, its floats stay put
  };
  std::vector<entry> entries;
  std::size_t used = 0, floats = 0;
  unsigned long long epoch = ~0ull;
  static constexpr std::size_t max_entries = 64, max_floats = std::size_t{1} << 20;

  static stage_arena& local() {
    thread_local stage_arena arena;
    return arena;
  }
  // At a point where no binding of this thread points into the arena.
  void trim() {
    const unsigned long long now = launch_epoch.load(std::memory_order_relaxed);
    if (now != epoch || used > max_entries || floats > max_floats) {
      used = 0;
      floats = 0;
      epoch = now;
    }
  }
  // The n elements src[l * stride] of dtype D as floats.
  template <dtype D>
  const float* stage(const void* src, idx_t stride, idx_t n) {
    for (std::size_t j = 0; j < used; ++j) {
      const entry& e = entries[j];
      if (e.src == src && e.stride == stride && e.n == n && e.dt == D) return e.buf.data();
    }
    if (used == entries.size()) entries.emplace_back();
    entry& e = entries[used++];
    e.src = src;
    e.stride = stride;
    e.n = n;
    e.dt = D;
    e.buf.resize(static_cast<std::size_t>(n > 0 ? n : 1));
    floats += e.buf.size();
    float* out = e.buf.data();
    const auto* p = static_cast<const storage_t<D>*>(src);
    idx_t l = 0;
    if (stride == 1) {
      for (; l + V <= n; l += V) {
        const dlanes<D> v = load<D, mode::fast>(p + l, 1, V);
        std::memcpy(out + l, &v, sizeof v);
      }
    }
    for (; l < n; ++l) out[l] = codegen::load_value<D>(src, l * stride);
    return out;
  }
};

template <class C, class Fo>
struct engine {
  using P = prog<C>;
  using forest_type = Fo;
  const group_args<C>& a;
  reduced<C> red;
  // mutable: a gathered register points the leaves at buffers for the
  // duration of one evaluation
  mutable binding<Fo> b;

  template <int I>
  static consteval int root_of() {
    return Fo::rec(I).root;
  }
  template <int I>
  using root_lanes = dlanes<P::dt(root_of<I>())>;

  // What leaf S holds per lane in memory: a staged leaf's floats, an
  // input's storage, a dense reduction's values.
  template <int S>
  using leaf_value_t =
      std::conditional_t<Fo::staged_leaf(S), float,
                         std::conditional_t<P::op(Fo::leaf_member(S)) == op_kind::input,
                                            storage_t<P::dt(Fo::leaf_member(S))>, vt<P::dt(Fo::leaf_member(S))>>>;

  // ---- binding --------------------------------------------------------------

  template <int S>
  FUSEX_HOST_INLINE idx_t ext() const {
    return codegen::ext_of<C, S>(a);
  }

  // Lanes until position p (moving by step per lane) reaches bound e.
  static FUSEX_HOST_INLINE idx_t lanes_until(idx_t p, idx_t e, idx_t step) { return (e - p + step - 1) / step; }

  // Binds instance I at coordinates c (its root's), lanes moving by `step`
  // along its lane axis; lowers `limit` to the lanes its coordinates stay
  // affine for.
  template <int I>
  FUSEX_HOST_INLINE void bind(const idx_t* c, idx_t step, idx_t& limit) {
    constexpr int root = Fo::rec(I).root;
    using F = codegen::frame<C, root>;
    unrolled<F::size()>([&](auto kk) FUSEX_HOST_LAMBDA { bind_member<I, F::id(decltype(kk)::value)>(c, step, limit); });
    if constexpr (Fo::rec(I).la < 0) {
      // one value: its loads broadcast into registers, evaluated as lanes
      alignas(64) unsigned char bufs[F::size()][8 * V];
      const void* saved[F::size()] = {};
      unrolled<F::size()>([&](auto kk) FUSEX_HOST_LAMBDA {
        constexpr int M = F::id(decltype(kk)::value);
        if constexpr (P::op(M) == op_kind::input || (Fo::dense && P::computes(M))) {
          auto& lf = b.leaf[Fo::leaf(I, M)];
          saved[decltype(kk)::value] = lf.p;
          lf.p = broadcast_leaf<M>(lf.p, bufs[decltype(kk)::value]);
        }
      });
      const auto v = eval<I, false>(0);
      unrolled<F::size()>([&](auto kk) FUSEX_HOST_LAMBDA {
        constexpr int M = F::id(decltype(kk)::value);
        if constexpr (P::op(M) == op_kind::input || (Fo::dense && P::computes(M)))
          b.leaf[Fo::leaf(I, M)].p = saved[decltype(kk)::value];
      });
      constexpr int s = Fo::splat_slot(I);
      using T = vt<P::dt(root)>;
      if constexpr (std::is_same_v<T, float>) b.sf[s] = v[0];
      else if constexpr (std::is_same_v<T, double>) b.sd[s] = v[0];
      else b.sl[s] = v[0];
    }
  }

  // The element at p (a memory leaf of member M) copied to all V slots of buf.
  template <int M>
  static FUSEX_HOST_INLINE const void* broadcast_leaf(const void* p, unsigned char* buf) {
    using T = std::conditional_t<P::op(M) == op_kind::input, storage_t<P::dt(M)>, vt<P::dt(M)>>;
    T x;
    std::memcpy(static_cast<void*>(&x), p, sizeof x);
    for (int l = 0; l < V; ++l) std::memcpy(buf + l * sizeof x, static_cast<const void*>(&x), sizeof x);
    return buf;
  }

  template <int I, int M>
  FUSEX_HOST_INLINE void bind_member(const idx_t* c, idx_t step, idx_t& limit) {
    constexpr op_kind K = P::op(M);
    constexpr int la = Fo::rec(I).la;
    constexpr int r = P::rank(M);
    if constexpr (K == op_kind::input) {
      constexpr int s = P::slot(M);
      idx_t off = 0;
      for (int d = 0; d < r; ++d) off += c[d] * a.in_str[s][d];
      auto& lf = b.leaf[Fo::leaf(I, M)];
      lf.p = static_cast<const storage_t<P::dt(M)>*>(a.in[s]) + off;
      lf.stride = la >= 0 ? step * a.in_str[s][la < 0 ? 0 : la] : 0;
    } else if constexpr (K == op_kind::iota) {
      auto& lf = b.leaf[Fo::leaf(I, M)];
      lf.base = c[0];
      lf.stride = la >= 0 ? step : 0;
    } else if constexpr (P::computes(M)) {
      if constexpr (Fo::dense) {
        // finished values, dense over the reduction's own extents
        idx_t off = 0, st = 1, lane_st = 0;
        unrolled<r>([&](auto jj) FUSEX_HOST_LAMBDA {
          constexpr int d = r - 1 - decltype(jj)::value;
          off += c[d] * st;
          if (d == la) lane_st = st;
          st *= ext<P::shape(M, d)>();
        });
        auto& lf = b.leaf[Fo::leaf(I, M)];
        lf.p = static_cast<const vt<P::dt(M)>*>(red.dense[P::red_index(M)]) + off;
        lf.stride = step * lane_st;
      }
    } else if constexpr (K == op_kind::cat) {
      bind_cat<I, M, 0>(c, step, limit, c[P::axis(M)]);
    } else if constexpr (K == op_kind::pad) {
      constexpr int ax = P::axis(M);
      constexpr int U = P::operand(M, 0);
      const idx_t p = c[ax] - ext<P::iparam(M, 0)>();
      const idx_t e = ext<P::shape(U, ax)>();
      int& sel = b.sel[Fo::sel(I, M)];
      if (p >= 0 && p < e) {
        sel = 1;
        idx_t cu[max_rank];
        for (int d = 0; d < r; ++d) cu[d] = c[d];
        cu[ax] = p;
        if constexpr (la == ax) limit = min(limit, lanes_until(p, e, step));
        bind<Fo::child(I, M, 0)>(cu, step, limit);
      } else {
        sel = 0;
        if constexpr (la == ax) {
          if (p < 0) limit = min(limit, lanes_until(p, 0, step));
        }
      }
    } else if constexpr (category(K) == op_category::remap) {
      bind_remap<I, M>(c, step, limit);
    } else if constexpr (!P::is_leaf(M)) {
      // elementwise: operands at broadcast coordinates become children
      unrolled<P::nops(M)>([&](auto kk) FUSEX_HOST_LAMBDA {
        constexpr int k = decltype(kk)::value;
        if constexpr (!P::identity(M, k)) {
          constexpr int U = P::operand(M, k);
          constexpr std::int64_t mask = P::bcast(M, k);
          idx_t cu[max_rank > 0 ? max_rank : 1] = {};
          for (int d = 0; d < P::rank(U); ++d) cu[d] = ((mask >> d) & 1) ? 0 : c[d];
          bind<Fo::child(I, M, k)>(cu, step, limit);
        }
      });
    }
  }

  static FUSEX_HOST_INLINE idx_t min(idx_t x, idx_t y) { return x < y ? x : y; }

  // Operand k of cat M and the ones after it: p is the position along the
  // cat axis, relative to operand k.
  template <int I, int M, int k>
  FUSEX_HOST_INLINE void bind_cat(const idx_t* c, idx_t step, idx_t& limit, idx_t p) {
    constexpr int ax = P::axis(M);
    constexpr int la = Fo::rec(I).la;
    if constexpr (k == P::nops(M)) {
      b.sel[Fo::sel(I, M)] = k;  // past the end: not reached for positions in range
      (void)c, (void)step, (void)limit, (void)p;
    } else {
      constexpr int U = P::operand(M, k);
      const idx_t e = ext<P::shape(U, ax)>();
      if (p < e) {
        b.sel[Fo::sel(I, M)] = k;
        idx_t cu[max_rank];
        for (int d = 0; d < P::rank(M); ++d) cu[d] = c[d];
        cu[ax] = p;
        if constexpr (la == ax) limit = min(limit, lanes_until(p, e, step));
        bind<Fo::child(I, M, k)>(cu, step, limit);
      } else {
        bind_cat<I, M, k + 1>(c, step, limit, p - e);
      }
    }
  }

  template <int I, int M>
  FUSEX_HOST_INLINE void bind_remap(const idx_t* c, idx_t step, idx_t& limit) {
    constexpr op_kind K = P::op(M);
    constexpr int la = Fo::rec(I).la;
    constexpr int U = P::operand(M, 0);
    constexpr int r = P::rank(M), ru = P::rank(U);
    idx_t cu[max_rank > 0 ? max_rank : 1] = {};
    idx_t cstep = step;
    if constexpr (K == op_kind::broadcast_in_dim) {
      unrolled<ru>([&](auto jj) FUSEX_HOST_LAMBDA {
        constexpr int j = decltype(jj)::value;
        cu[j] = P::static1(U, j) ? 0 : c[P::map(M, j)];
      });
    } else if constexpr (K == op_kind::permute) {
      unrolled<r>([&](auto ii) FUSEX_HOST_LAMBDA {
        constexpr int i = decltype(ii)::value;
        cu[P::map(M, i)] = c[i];
      });
    } else if constexpr (K == op_kind::slice) {
      constexpr int ax = P::axis(M);
      const idx_t start = ext<P::iparam(M, 0)>(), sstep = ext<P::iparam(M, 2)>();
      for (int d = 0; d < r; ++d) cu[d] = c[d];
      cu[ax] = start + c[ax] * sstep;
      if constexpr (la == ax) {
        cstep = step * sstep;
        if (sstep < 1) limit = min(limit, 1);
      }
    } else {
      static_assert(K == op_kind::reshape, "fusex internal: a remap the host engine does not know");
      // kept leading and trailing axes pass through; the middle is
      // linearised through M's extents and split through U's
      constexpr codegen::reshape_parts parts = codegen::split_reshape<C, M>();
      constexpr int m0 = parts.prefix, sfx = parts.suffix;
      constexpr int m1 = r - sfx, u0 = m0, u1 = ru - sfx;
      for (int d = 0; d < m0; ++d) cu[d] = c[d];
      for (int j = 0; j < sfx; ++j) cu[ru - 1 - j] = c[r - 1 - j];
      idx_t lin = 0;
      unrolled<m1 - m0>([&](auto dd) FUSEX_HOST_LAMBDA {
        constexpr int d = m0 + decltype(dd)::value;
        lin = lin * ext<P::shape(M, d)>() + c[d];
      });
      unrolled<(u1 > u0 ? u1 - u0 : 0)>([&](auto kk) FUSEX_HOST_LAMBDA {
        constexpr int d = u1 - 1 - decltype(kk)::value;
        if constexpr (d == u0) {
          cu[d] = lin;
        } else {
          idx_t q, rem;
          codegen::divmod_by<C, P::shape(U, d)>(a, lin, q, rem);
          cu[d] = rem;
          lin = q;
        }
      });
      if constexpr (la >= m0 && la < m1) {
        // lanes along the middle: they run along U's innermost middle axis
        // while they do not wrap it (one lane per segment otherwise)
        if constexpr (la == m1 - 1 && u1 > u0) {
          if constexpr (u1 - 1 > u0) limit = min(limit, lanes_until(cu[u1 - 1], ext<P::shape(U, u1 - 1)>(), step));
        } else {
          limit = min(limit, 1);
        }
      }
    }
    bind<Fo::child(I, M, 0)>(cu, cstep, limit);
  }

  // ---- evaluation -----------------------------------------------------------

  // Values of a frame's members, one register (or array) of lanes each.
  template <int R>
  struct frame_values {
    using F = codegen::frame<C, R>;
    lanes<float> f[F::nf() > 0 ? F::nf() : 1];
    arr<double> d[F::nd() > 0 ? F::nd() : 1];
    arr<long long> l[F::nl() > 0 ? F::nl() : 1];
    template <int M>
    FUSEX_HOST_INLINE auto& at() {
      constexpr int w = F::where(M);
      static_assert(w >= 0, "fusex internal: local outside its frame");
      constexpr int c = F::cls(w), p = F::pos(w);
      if constexpr (c == 0) return f[p];
      else if constexpr (c == 1) return d[p];
      else return l[p];
    }
  };

  // The lanes of instance J: its stored value when it is one value for all
  // lanes, else its evaluation.
  template <int J>
  FUSEX_HOST_INLINE root_lanes<J> value(idx_t i) const {
    if constexpr (Fo::rec(J).la < 0) {
      constexpr int s = Fo::splat_slot(J);
      using T = vt<P::dt(root_of<J>())>;
      if constexpr (std::is_same_v<T, float>) return splat(b.sf[s]);
      else if constexpr (std::is_same_v<T, double>) return splat(b.sd[s]);
      else return splat(b.sl[s]);
    } else {
      return eval<J, false>(i);
    }
  }

  // Instance I's root at lanes [i, i + V) of the segment, every leaf read
  // at unit stride (a gathered register's leaves point at buffers). Raw: a
  // 16-bit root is left unrounded (its store rounds).
  template <int I, bool Raw>
  FUSEX_HOST_INLINE root_lanes<I> eval(idx_t i) const {
    constexpr int R = root_of<I>();
    using F = codegen::frame<C, R>;
    frame_values<R> st;
    unrolled<F::size()>([&](auto kk) FUSEX_HOST_LAMBDA {
      constexpr int M = F::id(decltype(kk)::value);
      st.template at<M>() = compute<I, M, Raw && M == R>(st, i);
    });
    return st.template at<R>();
  }

  // Operand k of member M of instance I.
  template <int I, int M, int k, class S>
  FUSEX_HOST_INLINE auto operand(S& st, idx_t i) const {
    if constexpr (P::identity(M, k)) return st.template at<P::operand(M, k)>();
    else return value<Fo::child(I, M, k)>(i);
  }

  template <int I, int M, bool NoRound, class S>
  FUSEX_HOST_INLINE dlanes<P::dt(M)> compute(S& st, idx_t i) const {
    constexpr op_kind K = P::op(M);
    constexpr dtype D = P::dt(M);
    using T = vt<D>;
    if constexpr (K == op_kind::input) {
      if constexpr (Fo::staged_leaf(Fo::leaf(I, M)))
        return load_held<float, mode::fast>(static_cast<const float*>(b.leaf[Fo::leaf(I, M)].p) + i, 1, V);
      else
        return load<D, mode::fast>(static_cast<const storage_t<D>*>(b.leaf[Fo::leaf(I, M)].p) + i, 1, V);
    } else if constexpr (K == op_kind::constant || K == op_kind::full) {
      return splat(codegen::to_dtype<D>(P::value(M)));
    } else if constexpr (K == op_kind::index_value) {
      return splat(codegen::to_dtype<D>(static_cast<double>(ext<P::iparam(M, 0)>())));
    } else if constexpr (K == op_kind::scalar_param) {
      return splat(codegen::to_dtype<D>(a.scal[P::slot(M)]));
    } else if constexpr (K == op_kind::iota) {
      const auto& lf = b.leaf[Fo::leaf(I, M)];
      dlanes<D> v;
      for (int l = 0; l < V; ++l) {
        const idx_t pos = lf.base + (i + l) * lf.stride;
        v[l] = codegen::to_dtype<D>(P::value(M) + static_cast<double>(pos) * P::value2(M));
      }
      return v;
    } else if constexpr (P::computes(M)) {
      if constexpr (Fo::dense) {
        return load_held<T, mode::fast>(static_cast<const T*>(b.leaf[Fo::leaf(I, M)].p) + i, 1, V);
      } else {
        return splat(static_cast<T>(red.row->template at<P::red_index(M)>()[0]));
      }
    } else if constexpr (K == op_kind::cat) {
      dlanes<D> v = splat(T(0));
      const int sel = b.sel[Fo::sel(I, M)];
      unrolled<P::nops(M)>([&](auto kk) FUSEX_HOST_LAMBDA {
        constexpr int k = decltype(kk)::value;
        if (sel == k) v = convert<D, P::dt(P::operand(M, k))>(value<Fo::child(I, M, k)>(i));
      });
      return v;
    } else if constexpr (K == op_kind::pad) {
      if (b.sel[Fo::sel(I, M)]) return convert<D, P::dt(P::operand(M, 0))>(value<Fo::child(I, M, 0)>(i));
      return splat(codegen::to_dtype<D>(P::value(M)));
    } else if constexpr (category(K) == op_category::remap) {
      return convert<D, P::dt(P::operand(M, 0))>(value<Fo::child(I, M, 0)>(i));
    } else {
      return elementwise<I, M, NoRound>(st, i);
    }
  }

  // Is operand k of member M of instance I one value for all lanes?
  static consteval bool one_value_operand(int I, int M, int k) {
    return !P::identity(M, k) && Fo::rec(Fo::child(I, M, k)).la < 0;
  }
  // Is local u held as float lanes in registers?
  static consteval bool float_lanes(int u) { return is_float_vector<lanes<float>> && (P::dt(u) == dtype::f32 || is_16bit(P::dt(u))); }
  // Float lanes in, float lanes out, computed in f32: whole-register code.
  template <int M>
  static consteval bool vector_op_of() {
    if (!float_lanes(M) || codegen::compute_dtype_of<C, M>() != dtype::f32 || is_comparison(P::op(M))) return false;
    for (int k = 0; k < P::nops(M); ++k)
      if (!float_lanes(P::operand(M, k))) return false;
    return true;
  }

  template <int I, int M, bool NoRound, class S>
  FUSEX_HOST_INLINE dlanes<P::dt(M)> elementwise(S& st, idx_t i) const {
    constexpr op_kind K = P::op(M);
    constexpr dtype D = P::dt(M);
    constexpr dtype ct = codegen::compute_dtype_of<C, M>();
    using T = vt<D>;
    using CT = vt<ct>;
    constexpr bool d16 = is_16bit(D);
    // a computed value as D's value (16-bit: the float, rounded below)
    const auto as_d = [](auto t) FUSEX_HOST_LAMBDA -> T {
      if constexpr (d16) return static_cast<float>(t);
      else return codegen::to_dtype<D>(t);
    };
    constexpr auto c0 = ic<0>{};
    constexpr auto c1 = ic<1>{};
    constexpr auto c2 = ic<2>{};
    const auto opnd = [&](auto kk) FUSEX_HOST_LAMBDA { return operand<I, M, decltype(kk)::value>(st, i); };
    constexpr bool vector_op = vector_op_of<M>();
    dlanes<D> v;
    if constexpr (K == op_kind::convert) {
      constexpr dtype DU = P::dt(P::operand(M, 0));
      const auto x = opnd(c0);
      if constexpr (std::is_same_v<vt<DU>, float> && std::is_same_v<T, float>) v = x;  // exact, or rounded below
      else v = lanewise<T>([&](vt<DU> t) FUSEX_HOST_LAMBDA { return as_d(t); }, x);
    } else if constexpr (K == op_kind::where) {
      const auto pr = opnd(c0);
      const auto x = opnd(c1);
      const auto y = opnd(c2);
      if constexpr (float_lanes(M) && ct == dtype::f32 && float_lanes(P::operand(M, 1)) &&
                    float_lanes(P::operand(M, 2))) {
#if FUSEX_HOST_SIMD
        simd::i32v mask;
        if constexpr (is_float_vector<std::remove_cv_t<decltype(pr)>>) {
          mask = pr != 0.0f;
        } else {
          for (int l = 0; l < V; ++l) mask[l] = pr[l] != 0 ? -1 : 0;
        }
        v = mask ? x : y;
#endif
      } else {
        for (int l = 0; l < V; ++l) v[l] = as_d(pr[l] != 0 ? static_cast<CT>(x[l]) : static_cast<CT>(y[l]));
      }
    } else if constexpr (P::nops(M) == 1) {
      const auto x = opnd(c0);
      if constexpr (vector_op) {
#if FUSEX_HOST_SIMD
        v = codegen::unary<K>(x);
#endif
      } else {
        for (int l = 0; l < V; ++l) v[l] = as_d(codegen::unary<K>(static_cast<CT>(x[l])));
      }
    } else {
      const auto x = opnd(c0);
      const auto y = opnd(c1);
      constexpr bool splat_divisor =
          K == op_kind::div && is_floating(ct) && one_value_operand(I, M, 1);
      if constexpr (splat_divisor) {
        // one divisor for all the lanes (a row's sum, a norm): its
        // reciprocal once, then a multiply per lane (within 2 ulp of division)
        const CT rc = CT(1) / static_cast<CT>(y[0]);
        if constexpr (vector_op) {
          v = x * rc;
        } else {
          for (int l = 0; l < V; ++l) v[l] = as_d(static_cast<CT>(x[l]) * rc);
        }
      } else if constexpr (vector_op) {
#if FUSEX_HOST_SIMD
        v = codegen::binary<K>(x, y);
#endif
      } else {
        for (int l = 0; l < V; ++l) v[l] = as_d(codegen::binary<K>(static_cast<CT>(x[l]), static_cast<CT>(y[l])));
      }
    }
    if constexpr (d16 && !NoRound && !codegen::exact_in_dtype<C, M>()) v = round_to<D>(v);
    return v;
  }

  // Root j's value as bf16 pairs: where it is a bf16 input widened to f32
  // (convert_element_type of the input, nothing between; kind 1) or the
  // square of one (kind 2), the input's leaf slot; else leaf -1. A row pass
  // may then take its lanes from memory as bf16 pairs
  // (simd::dot_bf16_pairs), the leaf at unit stride in a fast segment.
  struct pairs_form {
    int leaf = -1, kind = 0;
  };
  template <int I, int M>
  static consteval int widened_leaf() {
    if constexpr (Fo::rec(I).la < 0 || P::op(M) != op_kind::convert || P::dt(M) != dtype::f32) {
      return -1;
    } else {
      constexpr int U = P::operand(M, 0);
      if constexpr (P::op(U) != op_kind::input || P::dt(U) != dtype::bf16) {
        return -1;
      } else {
        constexpr int IU = P::identity(M, 0) ? I : Fo::child(I, M, 0);
        if constexpr (Fo::rec(IU).la < 0) return -1;
        else return Fo::lane_leaf(Fo::leaf(IU, U)) && !Fo::staged_leaf(Fo::leaf(IU, U)) ? Fo::leaf(IU, U) : -1;
      }
    }
  }
  // Operand k of member M of instance I, as a widened bf16 input's leaf.
  template <int I, int M, int k>
  static consteval int widened_operand_leaf() {
    if constexpr (P::identity(M, k)) return widened_leaf<I, P::operand(M, k)>();
    else return widened_leaf<Fo::child(I, M, k), root_of<Fo::child(I, M, k)>()>();
  }
  template <int j>
  static consteval pairs_form bf16_pairs_form() {
    constexpr int I = Fo::root_instance(j);
    constexpr int R = root_of<I>();
    if constexpr (Fo::rec(I).la < 0) {
      return {};
    } else if constexpr (P::op(R) == op_kind::convert) {
      return {widened_leaf<I, R>(), 1};
    } else if constexpr (P::op(R) == op_kind::mul && P::dt(R) == dtype::f32) {
      if constexpr (P::operand(R, 0) != P::operand(R, 1) || P::bcast(R, 0) != P::bcast(R, 1)) return {};
      else return {widened_operand_leaf<I, R, 0>(), 2};
    } else {
      return {};
    }
  }

  // The leaf slot of the input instance I's root reads when, under the
  // segment's selections, the root is nothing but that input's elements of
  // storage type T (remaps, and the selected operands of cats and pads);
  // else -1.
  template <class T, int I>
  FUSEX_HOST_INLINE int copy_leaf() const {
    constexpr int M = root_of<I>();
    constexpr op_kind K = P::op(M);
    if constexpr (Fo::rec(I).la < 0) {
      return -1;  // one value for all lanes
    } else if constexpr (K == op_kind::input) {
      if constexpr (std::is_same_v<storage_t<P::dt(M)>, T> && !Fo::staged_leaf(Fo::leaf(I, M))) return Fo::leaf(I, M);
      else return -1;
    } else if constexpr (K == op_kind::cat) {
      const int sel = b.sel[Fo::sel(I, M)];
      int leaf = -1;
      unrolled<P::nops(M)>([&](auto kk) FUSEX_HOST_LAMBDA {
        if (sel == decltype(kk)::value) leaf = copy_leaf<T, Fo::child(I, M, decltype(kk)::value)>();
      });
      return leaf;
    } else if constexpr (K == op_kind::pad) {
      return b.sel[Fo::sel(I, M)] ? copy_leaf<T, Fo::child(I, M, 0)>() : -1;
    } else if constexpr (category(K) == op_category::remap) {
      return copy_leaf<T, Fo::child(I, M, 0)>();
    } else {
      return -1;
    }
  }

  // ---- rows -----------------------------------------------------------------

  static constexpr int nroots = Fo::nroots;

  // Root j's lanes.
  template <int j, mode Md, bool Raw>
  FUSEX_HOST_INLINE auto root(idx_t i, int n) const {
    constexpr int I = Fo::root_instance(j);
    if constexpr (Fo::rec(I).la < 0) {
      return value<I>(i);
    } else if constexpr (Md == mode::fast) {
      return eval<I, Raw>(i);
    } else {
      return gathered<I, Raw>(i, n);
    }
  }
  static consteval bool any_lane_leaf() {
    for (int s = 0; s < Fo::nleaf; ++s)
      if (Fo::lane_leaf(s)) return true;
    return false;
  }
  // Lanes [i, i + n) of instance I at their strides: each load's lanes
  // gathered into a buffer (lanes past n repeat lane n - 1), then the same
  // evaluation.
  template <int I, bool Raw>
  FUSEX_HOST_OUTLINE root_lanes<I> gathered(idx_t i, int n) const {
    // nothing read from memory per lane (a row group's row-shaped output:
    // its mean, its rstd): every lane is computed where it is, no buffers
    if constexpr (!any_lane_leaf()) return eval<I, Raw>(i);
    const binding<Fo> saved = b;
    alignas(64) unsigned char bufs[Fo::nleaf][8 * V];
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA { gather_leaf<decltype(ss)::value>(i, n, bufs[decltype(ss)::value]); });
    const auto v = eval<I, Raw>(0);
    b = saved;
    return v;
  }
  template <int S>
  FUSEX_HOST_INLINE void gather_leaf(idx_t i, int n, unsigned char* buf) const {
    if constexpr (Fo::lane_leaf(S)) {
      auto& lf = b.leaf[S];
      if (lf.p == nullptr) return;  // not bound in this segment
      using T = leaf_value_t<S>;
      const unsigned char* p = static_cast<const unsigned char*>(lf.p);
      for (int l = 0; l < V; ++l)
        std::memcpy(buf + l * sizeof(T), p + (i + (l < n ? l : n - 1)) * lf.stride * static_cast<idx_t>(sizeof(T)), sizeof(T));
      lf.p = buf;
    } else if constexpr (Fo::iota_leaf(S)) {
      b.leaf[S].base += i * b.leaf[S].stride;
    }
  }

  FUSEX_HOST_OUTLINE void bind_roots(const idx_t* c, idx_t& limit) {
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      if constexpr (Fo::lane_leaf(decltype(ss)::value)) b.leaf[decltype(ss)::value] = {nullptr, 1, 0};
    });
    // Selections of cats and pads the segment does not reach keep one value:
    // left from the previous segment, they made two rows' bindings differ
    // where they do not (run_rows compares them) and the qkv backward's
    // rows of 64 segments were bound one by one.
    for (int k = 0; k < Fo::nsel; ++k) b.sel[k] = -1;
    unrolled<nroots>([&](auto jj) FUSEX_HOST_LAMBDA { bind<Fo::root_instance(decltype(jj)::value)>(c, 1, limit); });
    if constexpr (any_staged) stage_leaves(limit);
  }
  static consteval bool any_staged_leaf() {
    for (int s = 0; s < Fo::nleaf; ++s)
      if (Fo::staged_leaf(s)) return true;
    return false;
  }
  static constexpr bool any_staged = any_staged_leaf();
  // The bound segment's n lanes of each staged leaf, as floats at unit stride.
  FUSEX_HOST_INLINE void stage_leaves(idx_t n) {
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      constexpr int S = decltype(ss)::value;
      if constexpr (Fo::staged_leaf(S)) {
        auto& lf = b.leaf[S];
        if (lf.p == nullptr) return;  // not reached in this segment
        lf.p = stage_arena::local().template stage<P::dt(Fo::leaf_member(S))>(lf.p, lf.stride, n);
        lf.stride = 1;
      }
    });
  }
  // Where binding starts afresh: no binding of this thread points into the
  // stage arena any more.
  static FUSEX_HOST_INLINE void trim_stage() {
    if constexpr (any_staged) stage_arena::local().trim();
  }
  FUSEX_HOST_INLINE bool lanes_contiguous() const {
    bool ok = true;
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      if constexpr (Fo::lane_leaf(decltype(ss)::value)) ok = ok && b.leaf[decltype(ss)::value].stride == 1;
    });
    return ok;
  }

  // The lanes [0, n) of the bound segment into the sink: whole registers
  // (in pairs: slot 0 and slot 1, two reduction chains) when everything has
  // unit stride, gathered lanes otherwise and for the last partial register.
  // The sink stays the caller's: a copy to work on in registers (as Welford
  // moments once were) stalled each row's first block on the copy's loads
  // (a tenth of LayerNorm's forward), and whole blocks keep their partial
  // states in locals anyway.
  template <class Sink>
  FUSEX_HOST_OUTLINE void run_segment(idx_t n, bool fast, Sink& sink_ref) {
    if constexpr (requires { typename Sink::copy_type; }) {
      // a segment whose value is an input's elements, moved (a qkv split's
      // v, RoPE's pass-through part): copied as bytes, with no widening
      // and rounding per register
      if (fast) {
        const int s = copy_leaf<typename Sink::copy_type, Fo::root_instance(0)>();
        if (s >= 0) {
          sink_ref.copy(b.leaf[s].p, n);
          return;
        }
      }
    }
    run_segment_with(n, fast, sink_ref);
  }
  template <class Sink>
  FUSEX_HOST_INLINE void run_segment_with(idx_t n, bool fast, Sink& sink) {
    idx_t i = 0;
    if (fast && n >= V) {
      if constexpr (requires { Sink::block_registers; }) {
        // whole blocks, the sink's partial states local to run_block
        constexpr idx_t w = Sink::slots * V * Sink::block_registers;
        for (; i + w <= n; i += w) sink.run_block(*this, i);
      }
      if constexpr (requires { Sink::store_registers; }) {
        constexpr idx_t w = V * Sink::store_registers;
        for (; i + w <= n; i += w) sink.put_block(*this, i);
      }
      if constexpr (Sink::slots > 1) {
        for (; i + 2 * V <= n; i += 2 * V) {
          sink.template put<mode::fast, 0>(*this, i, V);
          sink.template put<mode::fast, 1>(*this, i + V, V);
        }
      }
      for (; i + V <= n; i += V) sink.template put<mode::fast, 0>(*this, i, V);
    }
    for (; i < n; i += V) sink.template put<mode::gather, 0>(*this, i, static_cast<int>(n - i < V ? n - i : V));
  }

  // How the bound segment moves from one row of a run to the next: every
  // leaf's pointer by dp bytes and iota base by db (zero for what stays).
  struct row_step {
    std::array<std::intptr_t, Fo::nleaf> dp;
    std::array<idx_t, Fo::nleaf> db;
  };
  FUSEX_HOST_INLINE void step_leaves(const row_step& st, idx_t k) {
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      constexpr int S = decltype(ss)::value;
      auto& lf = b.leaf[S];
      lf.p = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(lf.p) +
                                           static_cast<std::uintptr_t>(k * st.dp[S]));
      lf.base += k * st.db[S];
    });
  }
  // The bound segment over `rows` rows, each moved from the last by st (the
  // sink's output by dsink bytes): one call, and a row costs its lanes plus
  // a few adds, where binding a segment per row cost more than a 16-lane
  // segment's arithmetic (RoPE's rotated halves).
  template <class Sink>
  FUSEX_HOST_OUTLINE void run_segment_rows(idx_t n, bool fast, idx_t rows, const row_step& st,
                                           std::intptr_t dsink, Sink& sink) {
    if constexpr (requires { typename Sink::copy_type; }) {
      if (fast) {
        const int s = copy_leaf<typename Sink::copy_type, Fo::root_instance(0)>();
        if (s >= 0) {
          std::uintptr_t from = reinterpret_cast<std::uintptr_t>(b.leaf[s].p);
          for (idx_t row = 0; row < rows; ++row) {
            sink.copy(reinterpret_cast<const void*>(from), n);
            from += static_cast<std::uintptr_t>(st.dp[s]);
            sink.advance(dsink);
          }
          return;
        }
      }
    }
    for (idx_t row = 0; row < rows; ++row) {
      run_segment_with(n, fast, sink);
      step_leaves(st, 1);
      sink.advance(dsink);
    }
  }

  // Positions [c0, c1) along the roots' last axis at outer coordinates c
  // (c[r - 1] is overwritten), segment by segment, into the sink.
  template <class Sink>
  FUSEX_HOST_INLINE void run(idx_t* c, int r, idx_t c0, idx_t c1, Sink& sink) {
    trim_stage();
    idx_t s = c0;
    while (s < c1) {
      idx_t n = c1 - s;
      c[r - 1] = s;
      bind_roots(c, n);
      sink.bind(*this, c);
      run_segment(n, sink.contiguous() && lanes_contiguous(), sink);
      s += n;
    }
  }

  // One row's segments, bound: what a row of a run of rows replays.
  struct bound_segment {
    binding<Fo> b;
    idx_t start, n;
    bool fast;
    // b copied word by word, in place (no zeroed or stacked copy first), as
    // bind_row copies it back: the binding's fields were just stored one by
    // one, and a wider load of them waits for every store before it
    bound_segment(const binding<Fo>& from, idx_t s, idx_t len, bool f) : start(s), n(len), fast(f) {
      copy_words(b, from);
    }
  };
  static std::vector<bound_segment>& second_row_cache() {
    thread_local std::vector<bound_segment> cache;
    return cache;
  }
  // The bytes of one lane of leaf S (0: not read from memory with lanes).
  template <int S>
  static consteval idx_t leaf_bytes() {
    if constexpr (Fo::lane_leaf(S)) {
      return static_cast<idx_t>(sizeof(leaf_value_t<S>));
    } else {
      return 0;
    }
  }
  template <int... S>
  static consteval std::array<idx_t, Fo::nleaf> leaf_sizes_of(std::integer_sequence<int, S...>) {
    return {leaf_bytes<S>()...};
  }
  static constexpr std::array<idx_t, Fo::nleaf> leaf_sizes = leaf_sizes_of(std::make_integer_sequence<int, Fo::nleaf>{});
  static consteval std::array<bool, Fo::nleaf> staged_leaves() {
    std::array<bool, Fo::nleaf> out{};
    for (int s = 0; s < Fo::nleaf; ++s) out[s] = Fo::staged_leaf(s);
    return out;
  }
  static constexpr std::array<bool, Fo::nleaf> staged = staged_leaves();

  // How a run of rows replays its first row: each segment's row_step, and
  // what a row reads far from the previous row's reads: a leaf that moves a
  // page or more from row to row, skipping more than it reads (a qkv split's
  // q, k and v read time step by time step, a qkv row apart). The hardware
  // prefetchers stop at page boundaries, so every such row began with a
  // miss; the replay prefetches the rows ahead instead. Rows that follow
  // each other in memory are left to the hardware. Ranges of one delta that
  // touch are merged (RoPE's halves read one row's neighbouring bytes).
  struct prefetch_stream {
    std::uintptr_t p0;
    std::intptr_t delta;
    idx_t bytes;
  };
  struct replay_plan {
    std::vector<bound_segment> segs;  // the first rows' segments, run after run
    std::vector<std::size_t> begin;   // run i's segments: [begin[i], begin[i + 1])
    std::vector<row_step> steps;      // one per segment
    std::vector<prefetch_stream> streams;
  };
  static replay_plan& replay_cache() {
    thread_local replay_plan cache;
    return cache;
  }
  // Rows of a tile of a write's run (run_rows): up to 16, with at most 4 of
  // them on one set of an L1 indexed by the address's low 12 bits (x86 and
  // Arm cores alike): rows 512 KiB apart all fall on one set, and a tile of
  // 16 of them lost its lines before the next segment completed them.
  static constexpr idx_t tile_rows = 16;
  static constexpr idx_t tile_rows_per_set = 4;
  static idx_t rows_per_tile(std::intptr_t dsink) {
    std::array<unsigned char, 64> on_set{};
    for (idx_t t = 0; t < tile_rows; ++t) {
      const auto set = (static_cast<std::uintptr_t>(t * dsink) >> 6) & 63;
      if (++on_set[set] > tile_rows_per_set) return t;
    }
    return tile_rows;
  }
  static constexpr idx_t prefetch_rows = 4;
  static constexpr std::intptr_t prefetch_min_delta = 4096;
  static void add_stream(std::vector<prefetch_stream>& out, std::uintptr_t p0, std::intptr_t delta, idx_t bytes) {
    for (auto& s : out) {
      if (s.delta != delta) continue;
      const std::uintptr_t lo = std::min(s.p0, p0), hi = std::max(s.p0 + static_cast<std::uintptr_t>(s.bytes),
                                                                  p0 + static_cast<std::uintptr_t>(bytes));
      if (hi - lo <= static_cast<std::uintptr_t>(s.bytes + bytes) + 64) {
        s.p0 = lo;
        s.bytes = static_cast<idx_t>(hi - lo);
        return;
      }
    }
    out.push_back({p0, delta, bytes});
  }
  static FUSEX_HOST_INLINE void prefetch_row(const std::vector<prefetch_stream>& streams, idx_t row) {
#if defined(__GNUC__)
    for (const auto& s : streams) {
      const char* q = reinterpret_cast<const char*>(s.p0 + static_cast<std::uintptr_t>(row * s.delta));
      for (idx_t off = 0; off < s.bytes; off += 64) __builtin_prefetch(q + off, 0, 3);
    }
#else
    (void)streams;
    (void)row;
#endif
  }
  FUSEX_HOST_INLINE void collect(idx_t* c, int r, idx_t c0, idx_t c1, std::vector<bound_segment>& out) {
    out.clear();
    append_segments(c, r, c0, c1, out);
  }
  FUSEX_HOST_INLINE void append_segments(idx_t* c, int r, idx_t c0, idx_t c1, std::vector<bound_segment>& out) {
    idx_t s = c0;
    while (s < c1) {
      idx_t n = c1 - s;
      c[r - 1] = s;
      bind_roots(c, n);
      out.emplace_back(b, s, n, lanes_contiguous());
      s += n;
    }
  }

  // nrows rows from c, consecutive along outer axis d, each over [c0, c1);
  // with ne > 1, as many such runs at consecutive coordinates along axis e.
  // Where no segment boundary, selection or one-value instance depends on d
  // (forest::steppable), the first row's segments are bound once and every
  // row replays them with its pointers moved by a constant delta per row
  // (the second row, bound too, gives the deltas); a qkv backward row of
  // dozens of segments is bound once per run of rows instead of per row,
  // and a write's rows go in tiles, segment by segment.
  template <class Sink>
  FUSEX_HOST_INLINE void run_rows(idx_t* c, int r, int d, idx_t nrows, idx_t c0, idx_t c1, Sink& sink, int e = -1,
                                  idx_t ne = 1) {
    if (ne > 1) {
      if constexpr (tiled_sink<Sink>)
        if (nrows >= 3 && Fo::steppable(d) && run_tiles(c, r, d, nrows, c0, c1, sink, e, ne)) return;
      // some run's rows cannot replay: each run on its own, replaying where
      // it can
      const idx_t ce = c[e];
      for (idx_t i = 0; i < ne; ++i) {
        c[e] = ce + i;
        one_run(c, r, d, nrows, c0, c1, sink);
      }
      c[e] = ce;
      return;
    }
    one_run(c, r, d, nrows, c0, c1, sink);
  }
  template <class Sink>
  static constexpr bool tiled_sink = requires(Sink& s) {
    Sink::rows_any_order;
    s.advance(std::intptr_t{});
  };
  // One run of rows.
  template <class Sink>
  FUSEX_HOST_INLINE void one_run(idx_t* c, int r, int d, idx_t nrows, idx_t c0, idx_t c1, Sink& sink) {
    if (nrows >= 3 && Fo::steppable(d)) {
      if constexpr (tiled_sink<Sink>) {
        if (run_tiles(c, r, d, nrows, c0, c1, sink, -1, 1)) return;
      } else if (replay_rows(c, r, d, nrows, c0, c1, sink)) {
        return;
      }
    }
    const idx_t cd = d >= 0 ? c[d] : 0;
    for (idx_t row = 0; row < nrows; ++row) {
      if (d >= 0) c[d] = cd + row;
      run(c, r, c0, c1, sink);
    }
    if (d >= 0) c[d] = cd;
  }

  static constexpr std::size_t max_plan_bytes = 128 << 10;
  // Binds the first two rows of each run (run i at c[e] + i) into the
  // replay plan: false where a second row's segments differ from its first
  // row's (a boundary that moves with d), or grouped runs' plan outgrows
  // max_plan_bytes, and nothing may replay.
  FUSEX_HOST_INLINE bool plan_replay(idx_t* c, int r, int d, idx_t c0, idx_t c1, int e, idx_t ne) {
    const idx_t cd = c[d], ce = e >= 0 ? c[e] : 0;
    trim_stage();
    auto& plan = replay_cache();
    plan.segs.clear();
    plan.begin.clear();
    plan.steps.clear();
    plan.streams.clear();
    auto& second = second_row_cache();
    bool same = true;
    for (idx_t i = 0; i < ne && same; ++i) {
      // Grouped runs of rows of many segments each (a qkv backward's rows
      // hold dozens) would sweep a plan of megabytes once per tile, out of
      // L2: they go run by run instead.
      if (ne > 1 && plan.segs.size() * sizeof(bound_segment) > max_plan_bytes) {
        same = false;
        break;
      }
      if (e >= 0) c[e] = ce + i;
      c[d] = cd;
      const std::size_t at = plan.segs.size();
      plan.begin.push_back(at);
      append_segments(c, r, c0, c1, plan.segs);
      c[d] = cd + 1;
      collect(c, r, c0, c1, second);
      same = second.size() == plan.segs.size() - at;
      for (std::size_t j = 0; same && j < second.size(); ++j) {
        const auto& f = plan.segs[at + j];
        const auto& g = second[j];
        same = f.start == g.start && f.n == g.n && f.fast == g.fast &&
               std::equal(std::begin(f.b.sel), std::end(f.b.sel), std::begin(g.b.sel));
      }
      for (std::size_t j = 0; same && j < second.size(); ++j) {
        const auto& first = plan.segs[at + j];
        auto& st = plan.steps.emplace_back();  // filled in place: no copy of just stored fields
        for (int k = 0; k < Fo::nleaf; ++k) {
          // as integers: a leaf the segment does not use may hold any value
          const auto& f = first.b.leaf[k];
          const auto& g = second[j].b.leaf[k];
          const auto p0 = reinterpret_cast<std::uintptr_t>(f.p), p1 = reinterpret_cast<std::uintptr_t>(g.p);
          const auto delta = static_cast<std::intptr_t>(p1 - p0);
          st.dp[k] = delta;
          st.db[k] = g.base - f.base;
          // a staged leaf reads one buffer in every row (the arena gives
          // the second row's range the first row's floats)
          if (staged[k] && delta != 0) same = false;
          const std::intptr_t far = delta < 0 ? -delta : delta;
          const idx_t bytes = first.n * leaf_sizes[k];
          if (first.fast && bytes > 0 && p0 != 0 && far >= prefetch_min_delta && far >= 2 * bytes)
            add_stream(plan.streams, p0, delta, bytes);
        }
      }
    }
    plan.begin.push_back(plan.segs.size());
    c[d] = cd;
    if (e >= 0) c[e] = ce;
    return same;
  }

  // Segment j of the plan at row `row` of its run, bound by replaying the
  // run's first row (c[e] already at the run's coordinate).
  template <class Sink>
  FUSEX_HOST_INLINE void bind_row(const replay_plan& plan, std::size_t j, idx_t* c, int r, int d, idx_t cd, idx_t row,
                                  Sink& sink) {
    // Copied word by word, and the leaves from the plan's copy: the segment
    // loads b's fields one by one next, and a load of part of a wider store
    // (the compiler's 64-byte moves) waits for every store before it to
    // complete, a row tile's output among them (a fifth of the qkv + RoPE
    // forward).
    const auto& from = plan.segs[j].b;
    const auto& st = plan.steps[j];
    copy_words(b, from);
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      constexpr int S = decltype(ss)::value;
      b.leaf[S].p = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(from.leaf[S].p) +
                                                  static_cast<std::uintptr_t>(row * st.dp[S]));
      b.leaf[S].base = from.leaf[S].base + row * st.db[S];
    });
    c[d] = cd + row;
    c[r - 1] = plan.segs[j].start;
    sink.bind(*this, c);
  }

  // A sink that takes rows in any order and moves a constant step per row
  // (a write): rows in tiles, segment by segment, each segment over a
  // tile's rows in one call (run_segment_rows). A RoPE row's rotated halves
  // are 16 lanes each: binding them per row cost more than their
  // arithmetic. The tile keeps a segment's rows in L1 until the next
  // segment completes their lines. With several runs (ne > 1), a tile of
  // rows goes through every run before the next tile: the runs of a qkv
  // split's heads read neighbouring bytes of the same qkv rows (and the
  // heads of one query group the same bytes), which then come from the
  // cache once the first run has read them, where a run after run order
  // read every qkv row again from memory for each head.
  template <class Sink>
  FUSEX_HOST_INLINE bool run_tiles(idx_t* c, int r, int d, idx_t nrows, idx_t c0, idx_t c1, Sink& sink, int e,
                                   idx_t ne) {
    if (!plan_replay(c, r, d, c0, c1, e, ne)) return false;
    const auto& plan = replay_cache();
    const idx_t cd = c[d], ce = e >= 0 ? c[e] : 0;
    c[d] = cd + 1;
    c[r - 1] = plan.segs[0].start;
    sink.bind(*this, c);
    const auto a1 = reinterpret_cast<std::uintptr_t>(sink.address());
    c[d] = cd;
    sink.bind(*this, c);
    const auto dsink = static_cast<std::intptr_t>(a1 - reinterpret_cast<std::uintptr_t>(sink.address()));
    const idx_t tile = rows_per_tile(dsink);
    // Several runs read their rows' neighbouring bytes one after the other,
    // within the pages the first run opened, where the hardware prefetchers
    // follow; prefetches ahead of them measured slower (qkv + RoPE forward
    // 2.68 -> 2.35 ms on one thread without).
    static const std::vector<prefetch_stream> none;
    const auto& streams = ne == 1 ? plan.streams : none;
    if (!streams.empty())
      for (idx_t row = 0; row < tile && row < nrows; ++row) prefetch_row(streams, row);
    for (idx_t r0 = 0; r0 < nrows; r0 += tile) {
      const idx_t r1 = r0 + tile < nrows ? r0 + tile : nrows;
      if (!streams.empty())
        for (idx_t row = r1; row < r1 + tile && row < nrows; ++row) prefetch_row(streams, row);
      for (idx_t i = 0; i < ne; ++i) {
        if (e >= 0) c[e] = ce + i;
        for (std::size_t j = plan.begin[i]; j < plan.begin[i + 1]; ++j) {
          bind_row(plan, j, c, r, d, cd, r0, sink);
          run_segment_rows(plan.segs[j].n, plan.segs[j].fast && sink.contiguous(), r1 - r0, plan.steps[j], dsink,
                           sink);
        }
      }
    }
    c[d] = cd;
    if (e >= 0) c[e] = ce;
    return true;
  }

  // Any other sink (a reduction's): row by row, each row's segments in turn.
  template <class Sink>
  FUSEX_HOST_INLINE bool replay_rows(idx_t* c, int r, int d, idx_t nrows, idx_t c0, idx_t c1, Sink& sink) {
    if (!plan_replay(c, r, d, c0, c1, -1, 1)) return false;
    const auto& plan = replay_cache();
    const idx_t cd = c[d];
    for (idx_t row = 0; row < nrows; ++row) {
      if (!plan.streams.empty() && row + prefetch_rows < nrows) prefetch_row(plan.streams, row + prefetch_rows);
      for (std::size_t j = 0; j < plan.segs.size(); ++j) {
        bind_row(plan, j, c, r, d, cd, row, sink);
        run_segment(plan.segs[j].n, plan.segs[j].fast && sink.contiguous(), sink);
      }
    }
    c[d] = cd;
    return true;
  }

  // The one element at coordinates c.
  template <class Sink>
  FUSEX_HOST_INLINE void run_one(const idx_t* c, Sink& sink) {
    trim_stage();
    idx_t n = 1;
    bind_roots(c, n);
    sink.bind(*this, c);
    sink.template put<mode::gather, 0>(*this, 0, 1);
  }
};

// Writes root 0 (write W of the group) into its output.
template <class C, int W>
struct write_sink {
  using P = prog<C>;
  static constexpr int R = P::write_local(W);
  static constexpr dtype D = P::dt(R);
  static constexpr int r = P::rank(R);
  static constexpr int slots = 1;  // registers in any order
  static constexpr bool rows_any_order = true;  // each position written once
  storage_t<D>* p = nullptr;
  idx_t stride = 0;
  // Whole blocks on a cache line past the caches (the launch's outputs
  // would not stay in the last-level cache: stream_writes).
  bool stream = false;
  template <class E>
  FUSEX_HOST_INLINE void bind(const E& e, const idx_t* c) {
    idx_t off = 0;
    for (int d = 0; d < r; ++d) off += c[d] * e.a.out_str[W][d];
    p = static_cast<storage_t<D>*>(e.a.out[W]) + off;
    stride = r > 0 ? e.a.out_str[W][r > 0 ? r - 1 : 0] : 0;
  }
  FUSEX_HOST_INLINE bool contiguous() const { return stride == 1; }
  const char* address() const { return reinterpret_cast<const char*>(p); }
  FUSEX_HOST_INLINE void advance(std::intptr_t bytes) {
    p = reinterpret_cast<storage_t<D>*>(reinterpret_cast<std::uintptr_t>(p) + static_cast<std::uintptr_t>(bytes));
  }
  // n elements of an input of the output's storage type, moved unchanged
  // (memmove: an output written in place over its input is the same bytes)
  using copy_type = storage_t<D>;
  FUSEX_HOST_INLINE void copy(const void* from, idx_t n) {
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(copy_type);
#if FUSEX_HOST_SIMD
    if (stream) {
      simd::stream_copy(static_cast<void*>(p), from, bytes);
      return;
    }
#endif
    std::memmove(static_cast<void*>(p), from, bytes);
  }
  template <mode Md, int Slot, class E>
  FUSEX_HOST_INLINE void put(const E& e, idx_t i, int n) {
    const auto v = e.template root<0, Md, true>(i, n);
    if constexpr (Md == mode::fast) store<D, Md>(p + i, 1, V, v);
    else store<D, Md>(p + i * stride, stride, n, v);
  }
  // Whole registers computed four at a time and rounded together: their
  // chains overlap, and the 16-bit rounding's subnormal test is one for four.
  static constexpr int store_registers = 4;
  template <class E>
  FUSEX_HOST_INLINE void put_block(const E& e, idx_t i) {
    dlanes<D> v[store_registers];
    unrolled<store_registers>([&](auto jj) FUSEX_HOST_LAMBDA {
      v[decltype(jj)::value] = e.template root<0, mode::fast, true>(i + decltype(jj)::value * V, V);
    });
    if (stream && reinterpret_cast<std::uintptr_t>(p + i) % stream_line == 0) store_block<D, store_registers, true>(p + i, v);
    else store_block<D, store_registers>(p + i, v);
  }
};

}  // namespace fusex::detail::host_engine
