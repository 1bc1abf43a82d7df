#pragma once
// The host executor: each group of a plan runs as an OpenMP-parallel loop
// over the same group programs the CUDA executor instantiates, evaluating
// 16 lanes at a time so that the math vectorises (at -O3).
//
//   fusex::run(plan, fusex::host{}, fusex::inputs(x, dy), fusex::outputs(dx));
//   auto dx = fusex::evaluate(plan, fusex::host{}, x, dy);

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <cstdlib>
#include <memory>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "host_blas.hpp"
#include "runner.hpp"

namespace fusex {

struct host {
  int threads = 0;  // 0: OpenMP's default
};

namespace detail::exec {

using codegen::chunk_index;
using codegen::context;
using codegen::eval;
using codegen::group_args;
using codegen::prog;
using codegen::reduction_values;
using codegen::static_for;
using codegen::vt;

inline constexpr int host_lanes = 16;

inline int omp_default_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <class C, int R, int W, class Ctx>
void write_lanes(const Ctx& cx, const group_args<C>& a, int w, const idx_t* idx, int n) {
  using Q = prog<C>;
  constexpr dtype D = Q::dt(R);
  constexpr int r = Q::rank(R);
  vt<D> v[W];
  eval<C, R, W, r - 1>(cx, idx, 1, n, v);
  idx_t off = 0;
  for (int d = 0; d < r; ++d) off += idx[d] * a.out_str[w][d];
  const idx_t step = r > 0 ? a.out_str[w][r - 1] : 0;
  for (int l = 0; l < n; ++l) codegen::store_value<D>(a.out[w], off + l * step, v[l]);
}

// Calls body(idx, n) for every run of up to W lanes along the innermost axis
// of `ext`, in parallel.
template <int W, class Body>
void for_each_chunk(const idx_t* ext, int r, int threads, Body&& body) {
  const idx_t last = r > 0 ? ext[r - 1] : 1;
  idx_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= ext[d];
  const idx_t per_row = (last + W - 1) / W;
  const idx_t total = rows * per_row;
  const bool parallel = total > 64;
  (void)parallel;  // used only by the pragma, which nvcc's front end does not see
  (void)threads;
#pragma omp parallel for schedule(static) if (parallel) num_threads(threads > 0 ? threads : omp_default_threads())
  for (idx_t c = 0; c < total; ++c) {
    idx_t idx[max_rank] = {};
    const int n = chunk_index<W>(c, ext, r, idx);
    body(idx, n);
  }
}

template <class C>
void pointwise_host(const group_args<C>& a, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes;
  const context<C, 1> cx{&a, nullptr};
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    constexpr int r = Q::rank(R);
    idx_t ext[max_rank] = {};
    for (int d = 0; d < r; ++d) ext[d] = a.ext[Q::shape(R, d)];
    for_each_chunk<W>(ext, r, threads, [&](const idx_t* idx, int n) { write_lanes<C, R, W>(cx, a, w, idx, n); });
  });
}

// Per-lane accumulators of reduction M (host: sums and moments in double).
template <class C, int M, int W>
struct accumulator {
  using Q = prog<C>;
  static constexpr op_kind K = Q::op(M);
  static constexpr dtype DU = Q::dt(Q::operand(M, 0));
  static constexpr dtype DM = Q::dt(M);
  static constexpr bool fp = is_floating(DU);
  // var_mean's mean output alone is a plain sum (Welford's updates, with a
  // division per element, are for the variance).
  static constexpr bool mean_only = K == op_kind::var_mean && (Q::flag(M) & 2) != 0;
  double sum[W] = {}, mean[W] = {}, m2[W] = {};
  idx_t count[W] = {};
  long long isum[W] = {};
  vt<DU> mx[W];

  static vt<DU> max_of(vt<DU> x, vt<DU> y) {
    if constexpr (fp) return math::maximum(x, y);
    else return y > x ? y : x;
  }
  accumulator() {
    for (int l = 0; l < W; ++l)
      mx[l] = fp ? static_cast<vt<DU>>(-INFINITY)
                 : static_cast<vt<DU>>(DU == dtype::i32 ? -2147483647LL - 1 : DU == dtype::b8 ? 0 : (-9223372036854775807LL - 1));
  }
  // Lanes below n take one more value each.
  void add(const vt<DU>* v, int n) {
    if constexpr (K == op_kind::sum || mean_only) {
      if constexpr (fp) {
        for (int l = 0; l < W; ++l) sum[l] += l < n ? static_cast<double>(v[l]) : 0.0;
      } else {
        for (int l = 0; l < W; ++l)
          isum[l] = static_cast<long long>(static_cast<unsigned long long>(isum[l]) +
                                           static_cast<unsigned long long>(l < n ? v[l] : 0));
      }
    } else if constexpr (K == op_kind::amax) {
      for (int l = 0; l < n; ++l) mx[l] = max_of(mx[l], v[l]);
    } else {  // Welford
      for (int l = 0; l < n; ++l) {
        const double x = static_cast<double>(v[l]);
        ++count[l];
        const double d = x - mean[l];
        mean[l] += d / static_cast<double>(count[l]);
        m2[l] += d * (x - mean[l]);
      }
    }
  }
  // Folds lane b of o into lane a (Chan's formula for the moments).
  void merge_lane(int a, const accumulator& o, int b) {
    sum[a] += o.sum[b];
    isum[a] = static_cast<long long>(static_cast<unsigned long long>(isum[a]) + static_cast<unsigned long long>(o.isum[b]));
    mx[a] = max_of(mx[a], o.mx[b]);
    const idx_t n = count[a] + o.count[b];
    if (o.count[b] > 0 && n > 0) {
      const double d = o.mean[b] - mean[a];
      const double fb = static_cast<double>(o.count[b]) / static_cast<double>(n);
      mean[a] += d * fb;
      m2[a] += o.m2[b] + d * d * static_cast<double>(count[a]) * fb;
    }
    count[a] = n;
  }
  void merge(int a, int b) { merge_lane(a, *this, b); }
  // The result of lane l, in the reduction's dtype; `len` is the reduced extent.
  void finish(int l, idx_t len, double& f, long long& i) const {
    if constexpr (K == op_kind::sum) {
      if constexpr (fp) f = static_cast<double>(codegen::to_dtype<DM>(sum[l]));
      else i = codegen::to_dtype<DM>(isum[l]);
    } else if constexpr (K == op_kind::amax) {
      if constexpr (fp) f = static_cast<double>(codegen::to_dtype<DM>(mx[l]));
      else i = codegen::to_dtype<DM>(mx[l]);
    } else if constexpr (mean_only) {
      f = static_cast<double>(codegen::to_dtype<DM>(len > 0 ? sum[l] / static_cast<double>(len) : NAN));
    } else {
      const double r = m2[l] / (static_cast<double>(len) - Q::value(M));
      f = static_cast<double>(codegen::to_dtype<DM>(r));
    }
  }
};

template <class C>
void row_reduction_host(const group_args<C>& a, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes;
  constexpr int X = Q::operand(Q::reduction(), 0);  // the row domain's shape
  constexpr int rd = Q::rank(X);
  idx_t ext[max_rank] = {};
  for (int d = 0; d < rd; ++d) ext[d] = a.ext[Q::shape(X, d)];
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
    // Reductions in dependency order, each a pass over the row: lane l
    // accumulates positions l, l + W, ...; the lanes are folded at the end.
    static_for<Q::nlocals()>([&](auto mm) {
      constexpr int M = decltype(mm)::value;
      if constexpr (codegen::is_reduction(Q::op(M)) && Q::nops(M) > 0) {
        constexpr int U = Q::operand(M, 0);
        accumulator<C, M, W> acc;
        vt<Q::dt(U)> v[W];
        for (idx_t c0 = 0; c0 < L; c0 += W) {
          idx[rd - 1] = c0;
          const int n = static_cast<int>(L - c0 < W ? L - c0 : W);
          eval<C, U, W, rd - 1>(cx, idx, 1, n, v);
          acc.add(v, n);
        }
        for (int l = 1; l < W; ++l) acc.merge(0, l);
        acc.finish(0, L, rv.f[Q::red_index(M)][0], rv.i[Q::red_index(M)][0]);
      }
    });
    // Writes: row-domain shaped values over the row, row-shaped ones once.
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1)) {
        for (idx_t c0 = 0; c0 < L; c0 += W) {
          idx[rd - 1] = c0;
          write_lanes<C, R, W>(cx, a, w, idx, static_cast<int>(L - c0 < W ? L - c0 : W));
        }
      } else {
        idx[rd - 1] = 0;
        write_lanes<C, R, W>(cx, a, w, idx, 1);
      }
    });
  }
}

// A column reduction (over an outer axis) of extent T: the rows are cut into
// blocks and the output's chunks of W lanes into tiles; each (block, tile)
// task walks its rows reading a contiguous run of each, into its own partial
// accumulators, which are then merged in block order. The cut depends on the
// extents only, never on the thread count, so results are reproducible.
// Under 128 rows (one block) each chunk reduces its rows directly.
template <class C>
void column_reduction_host(const group_args<C>& a, int threads) {
  using Q = prog<C>;
  constexpr int W = host_lanes;
  constexpr int R0 = Q::reduction();
  constexpr int X = Q::operand(R0, 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(R0);
  constexpr int ro = rx - 1;
  idx_t xext[max_rank] = {};
  for (int d = 0; d < rx; ++d) xext[d] = a.ext[Q::shape(X, d)];
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
  constexpr idx_t tile = 16;  // chunks per task: 256 consecutive outputs
  const idx_t ntiles = (nchunks + tile - 1) / tile;
  idx_t nb = T / 64;  // blocks of at least 64 rows, at most 64 blocks,
  if (nb > 64) nb = 64;
  if (nb > 8192 / nchunks) nb = 8192 / nchunks;  // and at most 8192 partial accumulators
  if (nb < 1) nb = 1;
  const int nthreads = threads > 0 ? threads : omp_default_threads();
  (void)nthreads;
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
        const context<C, 1> cx{&a, nullptr};
        for_each_chunk<W>(xext, rx, threads, [&](const idx_t* idx, int n) { write_lanes<C, R, W>(cx, a, w, idx, n); });
      }
    });
  };

  if (nb == 1) {
    // Few rows: each chunk reduces all of them and writes, with no partials.
#pragma omp parallel for schedule(static) if (nchunks > 1) num_threads(nthreads)
    for (idx_t c = 0; c < nchunks; ++c) {
      idx_t oidx[max_rank] = {}, iu[max_rank] = {};
      const int n = chunk(c, oidx);
      reduction_values<C, W> rv{};
      const context<C, W> cx{&a, &rv};
      static_for<Q::nlocals()>([&](auto mm) {
        constexpr int M = decltype(mm)::value;
        if constexpr (codegen::is_reduction(Q::op(M)) && Q::nops(M) > 0) {
          constexpr int U = Q::operand(M, 0);
          constexpr int ri = Q::red_index(M);
          accumulator<C, M, W> acc;
          vt<Q::dt(U)> v[W];
          for (idx_t t = 0; t < T; ++t) {
            for (int d = 0, j = 0; d < rx; ++d) iu[d] = d == ax ? t : oidx[j++];
            eval<C, U, W, rx - 1>(cx, iu, 1, n, v);
            acc.add(v, n);
          }
          for (int l = 0; l < W; ++l) acc.finish(l, T, rv.f[ri][l], rv.i[ri][l]);
        }
      });
      write_chunk(cx, oidx, n);
    }
    write_input_shaped();
    return;
  }

  std::vector<reduction_values<C, W>> rvs(static_cast<std::size_t>(nchunks));

  // Reductions in dependency order: a later one may read an earlier one's
  // finished values (rvs) for the same outputs.
  static_for<Q::nlocals()>([&](auto mm) {
    constexpr int M = decltype(mm)::value;
    if constexpr (codegen::is_reduction(Q::op(M)) && Q::nops(M) > 0) {
      constexpr int U = Q::operand(M, 0);
      constexpr int ri = Q::red_index(M);
      std::vector<accumulator<C, M, W>> part(static_cast<std::size_t>(nb * nchunks));
      const idx_t tasks = nb * ntiles;
#pragma omp parallel for schedule(dynamic) if (tasks > 1) num_threads(nthreads)
      for (idx_t task = 0; task < tasks; ++task) {
        const idx_t blk = task / ntiles, c0 = (task % ntiles) * tile;
        const idx_t c1 = c0 + tile < nchunks ? c0 + tile : nchunks;
        const idx_t t0 = T * blk / nb, t1 = T * (blk + 1) / nb;
        vt<Q::dt(U)> v[W];
        idx_t oidx[max_rank] = {}, iu[max_rank] = {};
        for (idx_t t = t0; t < t1; ++t)
          for (idx_t c = c0; c < c1; ++c) {
            const int n = chunk(c, oidx);
            for (int d = 0, j = 0; d < rx; ++d) iu[d] = d == ax ? t : oidx[j++];
            const context<C, W> cx{&a, &rvs[static_cast<std::size_t>(c)]};
            eval<C, U, W, rx - 1>(cx, iu, 1, n, v);
            part[static_cast<std::size_t>(blk * nchunks + c)].add(v, n);
          }
      }
#pragma omp parallel for schedule(static) if (nchunks > 1) num_threads(nthreads)
      for (idx_t c = 0; c < nchunks; ++c) {
        auto& acc = part[static_cast<std::size_t>(c)];
        for (idx_t blk = 1; blk < nb; ++blk)
          for (int l = 0; l < W; ++l) acc.merge_lane(l, part[static_cast<std::size_t>(blk * nchunks + c)], l);
        auto& rv = rvs[static_cast<std::size_t>(c)];
        for (int l = 0; l < W; ++l) acc.finish(l, T, rv.f[ri][l], rv.i[ri][l]);
      }
    }
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
  for (int d = 0; d < r; ++d) oe[d] = a.ext[Q::shape(M, d)];
  for (int d = 0; d < r; ++d) ae[d] = a.ext[Q::shape(A, d)];
  for (int d = 0; d < rb; ++d) be[d] = a.ext[Q::shape(B, d)];
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

template <class P, int G, class Args, class Outs, class Env>
void run_group_host(const std::vector<location>& loc, const Args& args, const Outs& outs, const Env& env, int threads) {
  using C = typename codegen::group_code<P, G>::type;
  constexpr group_kind kind = P::data.groups[G].kind;
  const auto ga = group_arguments<P, G>(loc, args, outs, env);
  if constexpr (kind == group_kind::pointwise) {
    pointwise_host<C>(ga, threads);
  } else if constexpr (kind == group_kind::row_reduction) {
    row_reduction_host<C>(ga, threads);
  } else if constexpr (kind == group_kind::column_reduction) {
    column_reduction_host<C>(ga, threads);
  } else if constexpr (kind == group_kind::matmul) {
    matmul_host<C>(ga);
  } else {
    constexpr int node = P::data.members[P::data.groups[G].member0];
    constexpr int executor = P::data.groups[G].executor;
    using claimant = typename P::claimants::template at<executor>;
    static_assert(has_run_host<claimant>::value,
                  "fusex::host: a claimed op's executor has no run_host(const fusex::claimed_call&)");
    claimed_operands ops;
    const claimed_call call = claimed_call_of(P::graph, node, loc, env, ga.out[0], ga.out_str[0], ops);
    claimant::run_host(call);
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
}

}  // namespace detail::exec

// Runs plan `pl` on the host: inputs and outputs are host memory.
template <class P, class Policy, class... A, class... O>
void run(plan<P, Policy> pl, host h, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  using PL = plan<P, Policy>;
  (void)pl;
  const auto args = bind_args(P{}, in);
  const auto outs = bind_results(P{}, out);
  const auto env = check_inputs(P::graph, args.data());
  check_outputs(P::graph, env, args.data(), outs.data());
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  const auto loc = detail::exec::place_values<PL>(args, outs, env, [&](std::size_t bytes) -> void* {
    buffers.emplace_back(new std::byte[bytes > 0 ? bytes : 1]);
    return buffers.back().get();
  });
  detail::codegen::static_for<PL::data.ngroups>([&](auto gg) {
    detail::exec::run_group_host<PL, decltype(gg)::value>(loc, args, outs, env, h.threads);
  });
}

// A program runs with the default (fused) plan.
template <program_like P, class... A, class... O>
void run(P p, host h, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  run(partition(p), h, in, out);
}

}  // namespace fusex
