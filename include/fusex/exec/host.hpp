#pragma once
// The host executor: each group of a plan runs as an OpenMP-parallel loop
// over the same group programs the CUDA executor instantiates, evaluating
// 16 lanes at a time so that the math vectorises (at -O3).
//
//   fusex::run(plan, fusex::host{}, fusex::inputs(x, dy), fusex::outputs(dx));
//   auto dx = fusex::evaluate(plan, fusex::host{}, x, dy);

#include <array>
#include <tuple>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <cstdlib>
#include <memory>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../plan/launch_cost.hpp"
#include "host_blas.hpp"
#include "runner.hpp"

namespace fusex {

struct host {
  int threads = 0;  // 0: OpenMP's default
  // what a group launch costs here (measured at OpenMP's default threads)
  static constexpr launch_cost launch = launch_costs::host;
};

namespace detail::exec {

using codegen::chunk_index;
using codegen::context;
using codegen::idx_t;
using codegen::eval;
using codegen::group_args;
using codegen::prog;
using codegen::reduction_values;
using codegen::static_for;
using codegen::vt;

// Lanes per run: 64 (four AVX-512 registers, whose chains overlap, and a
// quarter of the per-run index arithmetic) for pointwise groups whose only
// remaps are broadcasts; 16 where a cat, pad, slice or reshape may split a
// run (RoPE's rotate-half splits at n / 2), which then goes value by value,
// and in reductions (measured: wider runs there were slower).
template <class C>
consteval int host_lanes() {
  using Q = prog<C>;
  if (Q::kind() != group_kind::pointwise) return 16;
  for (int i = 0; i < Q::nlocals(); ++i)
    if (category(Q::op(i)) == op_category::remap && Q::op(i) != op_kind::broadcast_in_dim) return 16;
  return 64;
}

// The loops over a group's lanes inline the whole evaluation: out of line,
// its lanes would pass through memory at every call.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define FUSEX_HOST_FLATTEN __attribute__((flatten))
#else
#define FUSEX_HOST_FLATTEN
#endif

inline int omp_default_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Writes the chunk of n lanes at idx of write w (root R): a full run in
// lanes mode, a partial one value by value.
// Each takes its own copy of the context: its failure flag (a lanes-mode
// evaluation that must be redone value by value) belongs to one chunk, and
// chunks run on several threads.
template <class C, int R, int W, class Ctx>
FUSEX_HOST_FLATTEN void write_lanes(const Ctx& shared, const group_args<C>& a, int w, const idx_t* idx, int n) {
  const Ctx cx = shared;
  using Q = prog<C>;
  constexpr dtype D = Q::dt(R);
  constexpr int r = Q::rank(R);
  idx_t off = 0;
  for (int d = 0; d < r; ++d) off += idx[d] * a.out_str[w][d];
  if constexpr (r == 0) {
    codegen::store_value<D>(a.out[w], off, codegen::eval_one<C, R>(cx, idx));
  } else {
    const idx_t step = a.out_str[w][r - 1];
    if (n == W) {
      codegen::rep_t<D> v[codegen::rep_n<D, W>];
      eval<C, R, W, r - 1, idx_t, true>(cx, idx, v);
      if (!cx.failed) {
        codegen::store_rep<D, W>(a.out[w], off, step, v);
        return;
      }
      cx.failed = false;  // a remap split the lanes: value by value
    }
    {
      idx_t il[r];
      for (int d = 0; d < r; ++d) il[d] = idx[d];
      for (int l = 0; l < n; ++l) {
        il[r - 1] = idx[r - 1] + l;
        Ctx c1 = cx;
        c1.lane = l;
        codegen::store_value<D>(a.out[w], off + l * step, codegen::eval_one<C, R>(c1, il));
      }
    }
  }
}

// Writes the row at idx (its last coordinate is overwritten) of length L,
// as one loop: values the row shares (a norm's scale, from the row's
// reductions) can be hoisted out of it.
template <class C, int R, int W, class Ctx>
FUSEX_HOST_FLATTEN void write_row(const Ctx& cx, const group_args<C>& a, int w, idx_t* idx, idx_t L) {
  constexpr int r = prog<C>::rank(R);
  for (idx_t c0 = 0; c0 < L; c0 += W) {
    idx[r - 1] = c0;
    write_lanes<C, R, W>(cx, a, w, idx, static_cast<int>(L - c0 < W ? L - c0 : W));
  }
}

// range(begin, end) on nt threads, each a contiguous share of [0, total).
template <class Range>
FUSEX_HOST_FLATTEN void split_among_threads(idx_t total, int nt, const Range& range) {
  if (nt == 1) {
    range(idx_t{0}, total);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
#if defined(_OPENMP)
    const idx_t t = omp_get_thread_num(), k = omp_get_num_threads();
#else
    const idx_t t = 0, k = 1;
#endif
    range(total * t / k, total * (t + 1) / k);
  }
}

// Calls body(idx, n) for every run of up to W lanes along the innermost axis
// of `ext`, in parallel. Each thread takes one contiguous range of runs and
// steps its index like an odometer: no division per run.
template <int W, class Body>
FUSEX_HOST_FLATTEN void for_each_chunk(const idx_t* ext, int r, int threads, Body&& body) {
  const idx_t last = r > 0 ? ext[r - 1] : 1;
  idx_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= ext[d];
  const idx_t per_row = (last + W - 1) / W;
  const idx_t total = rows * per_row;
  if (total == 0) return;
  const int nt = total > 64 ? (threads > 0 ? threads : omp_default_threads()) : 1;
  const auto range = [&](idx_t begin, idx_t end) {
    idx_t idx[max_rank] = {};
    int n = chunk_index<W>(begin, ext, r, idx);
    for (idx_t c = begin; c < end; ++c) {
      body(static_cast<const idx_t*>(idx), n);
      if (r == 0) continue;
      idx[r - 1] += W;
      if (idx[r - 1] >= last) {
        idx[r - 1] = 0;
        for (int d = r - 2; d >= 0; --d) {
          if (++idx[d] < ext[d]) break;
          idx[d] = 0;
        }
      }
      n = last - idx[r - 1] < W ? static_cast<int>(last - idx[r - 1]) : W;
    }
  };
  split_among_threads(total, nt, range);
}

// Calls row(idx) for every row of `ext` (every coordinate but the innermost,
// which the row steps itself), in parallel: each thread takes a contiguous
// range of rows and steps its index like an odometer. Inside a row only the
// innermost coordinate changes, so what depends on the outer ones alone (a
// reshape's division by a head count, a slice's or a broadcast's offset,
// the other axes' share of every address) is loop-invariant and computed
// once per row.
template <class Row>
FUSEX_HOST_FLATTEN void for_each_row(const idx_t* ext, int r, idx_t rows, int nt, Row&& row) {
  const auto range = [&](idx_t begin, idx_t end) {
    idx_t idx[max_rank] = {};
    idx_t rr = begin;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = rr % ext[d];
      rr /= ext[d];
    }
    for (idx_t i = begin; i < end; ++i) {
      row(idx);
      for (int d = r - 2; d >= 0; --d) {
        if (++idx[d] < ext[d]) break;
        idx[d] = 0;
      }
    }
  };
  split_among_threads(rows, nt, range);
}

// Extents of local U, from the group's expr slots.
template <class C, int U>
void extents_of(const group_args<C>& a, idx_t* ext) {
  static_for<prog<C>::rank(U)>([&](auto dd) {
    constexpr int d = decltype(dd)::value;
    ext[d] = codegen::ext_of<C, prog<C>::shape(U, d)>(a);
  });
}

// A pointwise group, a write at a time: row by row where there are rows
// enough to share among the threads and each holds a full run, else run by
// run (one long row, or many short ones).
template <class C>
void pointwise_host(const group_args<C>& shared, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes<C>();
  // A copy of the arguments no output can alias, so that their loads (and
  // what is computed from them) leave the row loop.
  const group_args<C> a = shared;
  const context<C, 1> cx{&a};
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    constexpr int r = Q::rank(R);
    idx_t ext[max_rank] = {};
    extents_of<C, R>(a, ext);
    idx_t rows = 1;
    for (int d = 0; d + 1 < r; ++d) rows *= ext[d];
    const idx_t L = r > 0 ? ext[r - 1] : 1;
    const int nt = threads > 0 ? threads : omp_default_threads();
    if constexpr (r >= 2) {
      // (threads only for more than 64 runs, as for_each_chunk)
      if (L >= W && rows >= 8 * static_cast<idx_t>(nt) && rows * ((L + W - 1) / W) > 64) {
        for_each_row(ext, r, rows, nt, [&](idx_t* idx) { write_row<C, R, W>(cx, a, w, idx, L); });
        return;
      }
    }
    for_each_chunk<W>(ext, r, threads, [&](const idx_t* idx, int n) { write_lanes<C, R, W>(cx, a, w, idx, n); });
  });
}

// The host's reducer of reduction M: sums and moments in double.
template <class C, int M>
using host_reducer = codegen::reducer<prog<C>::op(M), prog<C>::dt(prog<C>::operand(M, 0)), double,
                                      prog<C>::op(M) == op_kind::var_mean && (prog<C>::flag(M) & 2) != 0>;

// Stores the finished value of reduction M (lane l) into rv.
template <class C, int M, int RW>
void finish_into(reduction_values<C, RW>& rv, int l, const typename host_reducer<C, M>::state& s, idx_t len) {
  using Q = prog<C>;
  rv.template at<Q::red_index(M)>()[l] = host_reducer<C, M>::template finish<Q::dt(M)>(s, len, Q::value(M));
}

// A row's reduction over runs of W lanes: lane l accumulates positions
// l, l + W, l + 2W, ... of the row (sums in double, maxima in the value
// type, moments by Welford's update, whose weight 1/n is one reciprocal per
// run since every lane has seen the same count), and the lanes combine in
// a fixed pairwise order at the end. The loop carries W independent chains
// instead of one, and its body is whole-vector code.
template <class RD, int W>
struct lane_accumulator {
  using state = typename RD::state;
  using value = typename RD::value;
  static constexpr bool moments = RD::kind == op_kind::var_mean && !RD::as_sum;
  using acc_t = std::conditional_t<RD::as_sum && RD::fp, double, std::conditional_t<moments, double, state>>;
  // float lanes as vectors of doubles (sums, moments) or floats (maxima)
#if FUSEX_HOST_SIMD
  static constexpr bool vector = W % simd::width == 0 && std::is_same_v<value, float>;
#else
  static constexpr bool vector = false;
#endif
  acc_t a[W], m2[moments ? W : 1];
  long long runs = 0;
  lane_accumulator() {
    for (int l = 0; l < W; ++l) {
      if constexpr (RD::as_sum && RD::fp) a[l] = 0;
      else if constexpr (moments) a[l] = 0, m2[l] = 0;
      else a[l] = RD::identity();
    }
  }
  void add(const value* x) {
#if FUSEX_HOST_SIMD
    if constexpr (vector) {
      if constexpr (!RD::as_sum && !moments) {  // maxima, in the value type
        simd::map<W>(a, a, x, [](simd::f32v p, simd::f32v q) { return math::maximum(p, q); });
        return;
      } else {
        constexpr int h = simd::width / 2;  // doubles per register
        [[maybe_unused]] const double w = moments ? 1.0 / static_cast<double>(++runs) : 0.0;
        for (int k = 0; k < W; k += 2 * h) {
          simd::f64v xv[2], s[2], q[2];
          simd::widen(x + k, xv[0], xv[1]);
          std::memcpy(s, a + k, sizeof s);
          if constexpr (moments) {
            std::memcpy(q, m2 + k, sizeof q);
            for (int j = 0; j < 2; ++j) {
              const simd::f64v d = xv[j] - s[j];
              s[j] += d * w;
              q[j] += d * (xv[j] - s[j]);
            }
            std::memcpy(m2 + k, q, sizeof q);
          } else {
            s[0] += xv[0];
            s[1] += xv[1];
          }
          std::memcpy(a + k, s, sizeof s);
        }
        return;
      }
    }
#endif
    if constexpr (RD::as_sum && RD::fp) {
      for (int l = 0; l < W; ++l) a[l] += static_cast<double>(x[l]);
    } else if constexpr (moments) {
      const double w = 1.0 / static_cast<double>(++runs);
      for (int l = 0; l < W; ++l) {
        const double d = static_cast<double>(x[l]) - a[l];
        a[l] += d * w;
        m2[l] += d * (static_cast<double>(x[l]) - a[l]);
      }
    } else {
      for (int l = 0; l < W; ++l) RD::add(a[l], x[l]);
    }
  }
  // The lanes' states, combined pairwise (lane order), as one state.
  state finish() const {
    state t[W];
    for (int l = 0; l < W; ++l) {
      if constexpr (moments) {
        t[l] = {static_cast<decltype(t[l].n)>(runs), a[l], m2[l]};
        if (runs == 0) t[l] = RD::identity();
      } else {
        t[l] = static_cast<state>(a[l]);
      }
    }
    for (int step = 1; step < W; step *= 2)
      for (int l = 0; l + step < W; l += 2 * step) t[l] = RD::combine(t[l], t[l + step]);
    return t[0];
  }
};

// Reduction M over the row at idx (its last coordinate is overwritten), of
// length L: full runs of W lanes into the lane accumulator, the rest (and
// runs a remap split) value by value, in a fixed order.
template <class C, int M, int W, class Ctx>
FUSEX_HOST_FLATTEN typename host_reducer<C, M>::state reduce_row(const Ctx& shared, idx_t* idx, idx_t L) {
  const Ctx cx = shared;
  using Q = prog<C>;
  constexpr int U = Q::operand(M, 0);
  constexpr int ru = Q::rank(U);
  using RD = host_reducer<C, M>;
  lane_accumulator<RD, W> acc;
  auto rest = RD::identity();
  for (idx_t c0 = 0; c0 < L; c0 += W) {
    idx[ru - 1] = c0;
    const int n = static_cast<int>(L - c0 < W ? L - c0 : W);
    if (n == W) {
      vt<Q::dt(U)> v[W];
      codegen::eval_values<C, U, W, ru - 1, idx_t>(cx, idx, v);
      if (!cx.failed) {
        acc.add(v);
        continue;
      }
      cx.failed = false;
    }
    for (int l = 0; l < n; ++l) {
      idx[ru - 1] = c0 + l;
      RD::add(rest, codegen::eval_one<C, U>(cx, idx));
    }
  }
  return RD::combine(acc.finish(), rest);
}

// An earlier full var_mean of the group over the same operand and axis as
// mean-only var_mean m (LayerNorm's mean beside its variance): its local,
// or -1.
template <class C>
consteval int moments_twin(int m) {
  using Q = prog<C>;
  if (Q::op(m) != op_kind::var_mean || (Q::flag(m) & 2) == 0) return -1;
  for (int t = 0; t < m; ++t)
    if (Q::computes(t) && Q::op(t) == op_kind::var_mean && (Q::flag(t) & 2) == 0 &&
        Q::operand(t, 0) == Q::operand(m, 0) && Q::axis(t) == Q::axis(m))
      return t;
  return -1;
}

template <class C>
void row_reduction_host(const group_args<C>& a, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes<C>();
  constexpr int X = Q::operand(Q::reduction(), 0);  // the row domain's shape
  constexpr int rd = Q::rank(X);
  idx_t ext[max_rank] = {};
  extents_of<C, X>(a, ext);
  idx_t rows = 1;
  for (int d = 0; d + 1 < rd; ++d) rows *= ext[d];
  const idx_t L = ext[rd - 1];
  (void)threads;
#pragma omp parallel for schedule(static) if (rows > 1) num_threads(threads > 0 ? threads : omp_default_threads())
  for (idx_t row = 0; row < rows; ++row) {
    idx_t idx[max_rank] = {};
    idx_t rr = row;
    for (int d = rd - 2; d >= 0; --d) {
      idx[d] = rr % ext[d];
      rr /= ext[d];
    }
    reduction_values<C, 1> rv{};
    const context<C, 1> cx{&a, &rv};
    // the moments of the row's full var_means, for their mean-only twins
    codegen::moments<double> moments[Q::nreductions() > 0 ? Q::nreductions() : 1];
    // Reductions in dependency order, each a pass over the row; a mean
    // whose moments an earlier var_mean has is read from them, not summed.
    static_for<Q::nlocals()>([&](auto mm) {
      constexpr int M = decltype(mm)::value;
      if constexpr (Q::computes(M)) {
        constexpr int T = moments_twin<C>(M);
        if constexpr (T >= 0) {
          rv.template at<Q::red_index(M)>()[0] = codegen::to_dtype<Q::dt(M)>(moments[Q::red_index(T)].mean);
        } else {
          const auto s = reduce_row<C, M, W>(cx, idx, L);
          if constexpr (std::is_same_v<std::remove_cv_t<decltype(s)>, codegen::moments<double>>) moments[Q::red_index(M)] = s;
          finish_into<C, M>(rv, 0, s, L);
        }
      }
    });
    // The row's row-invariant values, once (a norm's scale), for the writes.
    constexpr int NRV = codegen::row_value_count<C>();
    double row_values[NRV > 0 ? NRV : 1];
    context<C, 1> cw{&a, &rv};
    if constexpr (NRV > 0) {
      idx[rd - 1] = 0;
      static_for<Q::nlocals()>([&](auto uu) {
        constexpr int U = decltype(uu)::value;
        constexpr int slot = codegen::row_value_slot<C>(U);
        if constexpr (slot >= 0) row_values[slot] = static_cast<double>(codegen::eval_one<C, U>(cx, idx));
      });
      cw.row_values = row_values;
    }
    // Writes: row-domain shaped values over the row, row-shaped ones once.
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1)) {
        write_row<C, R, W>(cw, a, w, idx, L);
      } else {
        idx[rd - 1] = 0;
        write_lanes<C, R, W>(cw, a, w, idx, 1);
      }
    });
  }
}

// Per-lane states of reduction M for W output lanes.
template <class C, int M, int W>
struct lane_states {
  using RD = host_reducer<C, M>;
  typename RD::state s[W];
  lane_states() {
    for (auto& x : s) x = RD::identity();
  }
  // one more row: lanes below n take v[l]
  template <class V>
  void add(const V* v, int n) {
#if FUSEX_HOST_SIMD
    // float sums in double, a register at a time (the common case: a
    // norm's weight and bias gradients)
    if constexpr (RD::as_sum && RD::fp && std::is_same_v<V, float> && std::is_same_v<typename RD::state, double> &&
                  W % simd::width == 0) {
      if (n == W) {
        for (int k = 0; k < W; k += simd::width) {
          simd::f64v x[2], a[2];
          simd::widen(v + k, x[0], x[1]);
          std::memcpy(a, s + k, sizeof a);
          a[0] += x[0];
          a[1] += x[1];
          std::memcpy(s + k, a, sizeof a);
        }
        return;
      }
    }
#endif
    for (int l = 0; l < n; ++l) RD::add(s[l], v[l]);
  }
  void merge(const lane_states& o) {
    for (int l = 0; l < W; ++l) s[l] = RD::combine(s[l], o.s[l]);
  }
};

// The values of operand U of reduction M at row t of the reduced axis for
// the chunk of n output lanes at oidx.
template <class C, int M, int W, class Ctx, class V>
FUSEX_HOST_FLATTEN void column_values(const Ctx& shared, const idx_t* oidx, idx_t t, int n, V* v) {
  const Ctx cx = shared;
  using Q = prog<C>;
  constexpr int R0 = Q::reduction();
  constexpr int X = Q::operand(R0, 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(R0);
  constexpr int U = Q::operand(M, 0);
  idx_t iu[max_rank] = {};
  for (int d = 0, j = 0; d < rx; ++d) iu[d] = d == ax ? t : oidx[j++];
  if (n == W) {
    codegen::eval_values<C, U, W, rx - 1, idx_t>(cx, iu, v);
    if (!cx.failed) return;
    cx.failed = false;
  }
  {
    const idx_t c0 = iu[rx - 1];
    for (int l = 0; l < n; ++l) {
      iu[rx - 1] = c0 + l;
      Ctx c1 = cx;
      c1.lane = l;
      v[l] = codegen::eval_one<C, U>(c1, iu);
    }
  }
}

// The computed reductions of group C whose operands read no other computed
// reduction of it: they can share one pass over the rows.
template <class C>
struct reduction_sets {
  using Q = prog<C>;
  static consteval bool reads_reduction(int u) {
    bool seen[Q::nlocals()] = {};
    int stack[Q::nlocals()] = {}, sp = 0;
    stack[sp++] = u;
    seen[u] = true;
    while (sp > 0) {
      const int i = stack[--sp];
      if (Q::computes(i)) return true;
      if (Q::is_leaf(i)) continue;
      for (int k = 0; k < Q::nops(i); ++k)
        if (!seen[Q::operand(i, k)]) seen[Q::operand(i, k)] = true, stack[sp++] = Q::operand(i, k);
    }
    return false;
  }
  static consteval int count() {
    int n = 0;
    for (int i = 0; i < Q::nlocals(); ++i) n += Q::computes(i) && !reads_reduction(Q::operand(i, 0));
    return n;
  }
  static constexpr int n_independent = count();
  static consteval std::array<int, (n_independent > 0 ? n_independent : 1)> list() {
    std::array<int, (n_independent > 0 ? n_independent : 1)> r{};
    int n = 0;
    for (int i = 0; i < Q::nlocals(); ++i)
      if (Q::computes(i) && !reads_reduction(Q::operand(i, 0))) r[static_cast<std::size_t>(n++)] = i;
    return r;
  }
  static constexpr auto independent = list();
};

// A column reduction (over an outer axis) of extent T: the rows are cut into
// blocks and the output's chunks of W lanes into tiles; each (block, tile)
// task walks its rows reading a contiguous run of each, into its own partial
// accumulators, which are then merged in block order. The cut depends on the
// extents only, never on the thread count, so results are reproducible.
// Under 128 rows (one block) each chunk reduces its rows directly.
template <class C>
void column_reduction_host(const group_args<C>& a, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes<C>();
  constexpr int R0 = Q::reduction();
  constexpr int X = Q::operand(R0, 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(R0);
  constexpr int ro = rx - 1;
  idx_t xext[max_rank] = {};
  extents_of<C, X>(a, xext);
  // the output index space: X's extents without the reduced axis
  idx_t oext[max_rank] = {};
  for (int d = 0, j = 0; d < rx; ++d)
    if (d != ax) oext[j++] = xext[d];
  const idx_t last = ro > 0 ? oext[ro - 1] : 1;
  idx_t orows = 1;
  for (int d = 0; d + 1 < ro; ++d) orows *= oext[d];
  const idx_t per_row = (last + W - 1) / W;
  const idx_t nchunks = orows * per_row;
  const idx_t T = xext[ax];
  if (nchunks == 0) return;
  // chunk c: its output index and its number of lanes
  auto chunk = [&](idx_t c, idx_t* oidx) { return chunk_index<W>(c, oext, ro, oidx); };
  idx_t nb = T / 64;  // blocks of at least 64 rows, at most 64 blocks,
  if (nb > 64) nb = 64;
  if (nb > 8192 / nchunks) nb = 8192 / nchunks;  // and at most 8192 partial accumulators
  if (nb < 1) nb = 1;
  const int nthreads = threads > 0 ? threads : omp_default_threads();
  // Chunks per task: long contiguous runs of each row (up to 2048 outputs)
  // for the prefetcher, unless that leaves too few tasks for the threads.
  // Tiles change no sum's order: each chunk's partials are its blocks'.
  constexpr idx_t max_tile = 128;
  idx_t tile = nchunks < max_tile ? nchunks : max_tile;
  while (tile > 16 && nb * ((nchunks + tile - 1) / tile) < 4 * nthreads) tile /= 2;
  const idx_t ntiles = (nchunks + tile - 1) / tile;
  // Writes of values that depend on the reductions, for chunk c.
  auto write_chunk = [&](const context<C, W>& cx, const idx_t* oidx, int n) {
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (Q::dep(R)) {
        idx_t idx[max_rank] = {};
        if constexpr (Q::rank(R) == rx) {
          for (int d = 0, j = 0; d < rx; ++d) idx[d] = d == ax ? 0 : oidx[j++];
        } else {
          for (int d = 0; d < rx - 1; ++d) idx[d] = oidx[d];
        }
        write_lanes<C, R, W>(cx, a, w, idx, n);
      }
    });
  };
  // Writes of input-shaped values (not depending on the reductions).
  auto write_input_shaped = [&] {
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (!Q::dep(R)) {
        const context<C, 1> cx{&a};
        for_each_chunk<W>(xext, rx, threads, [&](const idx_t* idx, int n) { write_lanes<C, R, W>(cx, a, w, idx, n); });
      }
    });
  };

  if (nb == 1) {
    // Few rows: each chunk reduces all of them and writes, with no partials.
#pragma omp parallel for schedule(static) if (nchunks > 1) num_threads(nthreads)
    for (idx_t c = 0; c < nchunks; ++c) {
      idx_t oidx[max_rank] = {};
      const int n = chunk(c, oidx);
      reduction_values<C, W> rv{};
      const context<C, W> cx{&a, &rv};
      static_for<Q::nlocals()>([&](auto mm) {
        constexpr int M = decltype(mm)::value;
        if constexpr (Q::computes(M)) {
          lane_states<C, M, W> acc;
          vt<Q::dt(Q::operand(M, 0))> v[W];
          for (idx_t t = 0; t < T; ++t) {
            column_values<C, M, W>(cx, oidx, t, n, v);
            acc.add(v, n);
          }
          for (int l = 0; l < W; ++l) finish_into<C, M>(rv, l, acc.s[l], T);
        }
      });
      write_chunk(cx, oidx, n);
    }
    write_input_shaped();
    return;
  }

  std::vector<reduction_values<C, W>> rvs(static_cast<std::size_t>(nchunks));

  // One pass over the rows for the reductions ms...: each (block, tile)
  // task evaluates all of their operands at each position it reads.
  const auto pass = [&](auto... ms) {
    std::tuple<std::vector<lane_states<C, decltype(ms)::value, W>>...> parts{
        std::vector<lane_states<C, decltype(ms)::value, W>>(static_cast<std::size_t>(nb * nchunks))...};
    const idx_t tasks = nb * ntiles;
#pragma omp parallel for schedule(dynamic) if (tasks > 1) num_threads(nthreads)
    for (idx_t task = 0; task < tasks; ++task) {
      const idx_t blk = task / ntiles, c0 = (task % ntiles) * tile;
      const idx_t c1 = c0 + tile < nchunks ? c0 + tile : nchunks;
      const idx_t t0 = T * blk / nb, t1 = T * (blk + 1) / nb;
      // the tile's output indices, once per task
      idx_t oidx[max_tile][max_rank] = {};
      int lanes[max_tile] = {};
      for (idx_t c = c0; c < c1; ++c) lanes[c - c0] = chunk(c, oidx[c - c0]);
      for (idx_t t = t0; t < t1; ++t)
        for (idx_t c = c0; c < c1; ++c) {
          const context<C, W> cx{&a, &rvs[static_cast<std::size_t>(c)]};
          const auto step = [&](auto m, auto& part) {
            constexpr int M = decltype(m)::value;
            vt<Q::dt(Q::operand(M, 0))> v[W];
            column_values<C, M, W>(cx, oidx[c - c0], t, lanes[c - c0], v);
            part[static_cast<std::size_t>(blk * nchunks + c)].add(v, lanes[c - c0]);
          };
          std::apply([&](auto&... p) { (step(ms, p), ...); }, parts);
        }
    }
#pragma omp parallel for schedule(static) if (nchunks > 1) num_threads(nthreads)
    for (idx_t c = 0; c < nchunks; ++c) {
      const auto finish = [&](auto m, auto& part) {
        constexpr int M = decltype(m)::value;
        auto& acc = part[static_cast<std::size_t>(c)];
        for (idx_t blk = 1; blk < nb; ++blk) acc.merge(part[static_cast<std::size_t>(blk * nchunks + c)]);
        auto& rv = rvs[static_cast<std::size_t>(c)];
        for (int l = 0; l < W; ++l) finish_into<C, M>(rv, l, acc.s[l], T);
      };
      std::apply([&](auto&... p) { (finish(ms, p), ...); }, parts);
    }
  };
  // The reductions that read no other reduction of the group (LayerNorm's
  // weight and bias gradients) share one pass; then the others, each in
  // dependency order after what it reads.
  using sets = reduction_sets<C>;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    if constexpr (sizeof...(I) > 0) pass(std::integral_constant<int, sets::independent[I]>{}...);
  }(std::make_index_sequence<sets::n_independent>{});
  static_for<Q::nlocals()>([&](auto mm) {
    constexpr int M = decltype(mm)::value;
    if constexpr (Q::computes(M) && sets::reads_reduction(Q::operand(M, 0))) pass(mm);
  });
  // Writes of values that depend on the reductions, per chunk.
#pragma omp parallel for schedule(static) if (nchunks > 1) num_threads(nthreads)
  for (idx_t c = 0; c < nchunks; ++c) {
    idx_t oidx[max_rank] = {};
    const int n = chunk(c, oidx);
    write_chunk(context<C, W>{&a, &rvs[static_cast<std::size_t>(c)]}, oidx, n);
  }
  write_input_shaped();
}

// matmul through host BLAS: operands gathered into contiguous arrays of the
// compute type (float, or double for f64), then stored in the output dtype.
template <class C>
void matmul_host(const group_args<C>& a) {
  using Q = prog<C>;
  constexpr int M = Q::write_local(0);
  constexpr int A = Q::operand(M, 0), B = Q::operand(M, 1);
  constexpr int r = Q::rank(M), rb = Q::rank(B);
  constexpr dtype DA = Q::dt(A), DB = Q::dt(B), DM = Q::dt(M);
  using T = std::conditional_t<DM == dtype::f64, double, float>;
  idx_t oe[max_rank] = {}, ae[max_rank] = {}, be[max_rank] = {};
  extents_of<C, M>(a, oe);
  extents_of<C, A>(a, ae);
  extents_of<C, B>(a, be);
  const idx_t m = oe[r - 2], nn = oe[r - 1], k = ae[r - 1];
  std::vector<T> am(static_cast<std::size_t>(m * k)), bm(static_cast<std::size_t>(k * nn)), cm(static_cast<std::size_t>(m * nn));
  idx_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= oe[d];
  const int ra = Q::slot(A), rbs = Q::slot(B);
  for (idx_t bt = 0; bt < batches; ++bt) {
    idx_t bi[max_rank] = {};
    idx_t rem = bt;
    for (int d = r - 3; d >= 0; --d) {
      bi[d] = rem % oe[d];
      rem /= oe[d];
    }
    idx_t oa = 0, ob = 0, oc = 0;
    for (int d = 0; d < r - 2; ++d) {
      oa += (ae[d] == 1 ? 0 : bi[d]) * a.in_str[ra][d];
      if constexpr (rb == r) ob += (be[d] == 1 ? 0 : bi[d]) * a.in_str[rbs][d];
      oc += bi[d] * a.out_str[0][d];
    }
    for (idx_t i = 0; i < m; ++i)
      for (idx_t j = 0; j < k; ++j)
        am[static_cast<std::size_t>(i * k + j)] = static_cast<T>(codegen::load_value<DA>(a.in[ra], oa + i * a.in_str[ra][r - 2] + j * a.in_str[ra][r - 1]));
    for (idx_t i = 0; i < k; ++i)
      for (idx_t j = 0; j < nn; ++j)
        bm[static_cast<std::size_t>(i * nn + j)] = static_cast<T>(codegen::load_value<DB>(a.in[rbs], ob + i * a.in_str[rbs][rb - 2] + j * a.in_str[rbs][rb - 1]));
    host_gemm<T>(m, nn, k, am.data(), k, bm.data(), nn, cm.data(), nn);
    for (idx_t i = 0; i < m; ++i)
      for (idx_t j = 0; j < nn; ++j)
        codegen::store_value<DM>(a.out[0], oc + i * a.out_str[0][r - 2] + j * a.out_str[0][r - 1],
                                 codegen::to_dtype<DM>(cm[static_cast<std::size_t>(i * nn + j)]));
  }
}


template <class Claimant, class = void>
struct has_run_host : std::false_type {};
template <class Claimant>
struct has_run_host<Claimant, std::void_t<decltype(Claimant::run_host(std::declval<const claimed_call&>()))>>
    : std::true_type {};

// The host's launchers for the shared run skeleton.
struct host_runner {
  int threads = 0;
  std::vector<std::unique_ptr<std::byte[]>> buffers;

  void* allocate(std::size_t bytes) {
    buffers.emplace_back(new std::byte[bytes > 0 ? bytes : 1]);
    return buffers.back().get();
  }
  template <group_kind K, class C>
  void launch(const group_args<C>& ga, const group_label&) {
    if constexpr (K == group_kind::pointwise) pointwise_host<C>(ga, threads);
    else if constexpr (K == group_kind::row_reduction) row_reduction_host<C>(ga, threads);
    else if constexpr (K == group_kind::column_reduction) column_reduction_host<C>(ga, threads);
    else matmul_host<C>(ga);
  }
  template <class Claimant, class C>
  void claimed(const claimed_call& call, const group_args<C>& ga, const group_label&) {
    static_assert(has_run_host<Claimant>::value,
                  "fusex::host: a claimed op's executor has no run_host(const fusex::claimed_call&)");
    Claimant::run_host(call);
    // a claimed node returned more than once is copied to its other slots
    for (int w = 1; w < codegen::prog<C>::nwrites(); ++w) {
      const int r = call.out.rank;
      idx_t total = 1;
      for (int i = 0; i < r; ++i) total *= call.out.ext[i];
      for (idx_t e = 0; e < total; ++e) {
        idx_t rem = e, so = 0, dof = 0;
        for (int i = r - 1; i >= 0; --i) {
          const idx_t ii = rem % call.out.ext[i];
          rem /= call.out.ext[i];
          so += ii * call.out.str[i];
          dof += ii * ga.out_str[w][i];
        }
        std::memcpy(static_cast<std::byte*>(ga.out[w]) + dof * size_of(call.out.dt),
                    static_cast<const std::byte*>(call.out.data) + so * size_of(call.out.dt),
                    static_cast<std::size_t>(size_of(call.out.dt)));
      }
    }
  }
};

}  // namespace detail::exec

// Runs plan `pl` on the host: inputs and outputs are host memory.
template <class P, class Policy, class... A, class... O>
void run(plan<P, Policy>, host h, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  detail::exec::host_runner ex{h.threads, {}};
  detail::exec::run_plan<plan<P, Policy>>(ex, in, out);
}

// A program runs with the default (fused) plan.
template <program_like P, class... A, class... O>
void run(P p, host h, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  run(partition(p), h, in, out);
}

}  // namespace fusex
