#pragma once
// The host executor: each group of a plan runs as an OpenMP-parallel loop
// over the same group programs the CUDA executor instantiates, on the row
// engine (exec/host/): index remaps resolved once per row segment, the
// values of a register of lanes at a time.
//
//   fusex::run(plan, fusex::host{}, fusex::inputs(x, dy), fusex::outputs(dx));
//   auto dx = fusex::evaluate(plan, fusex::host{}, x, dy);

#include <algorithm>
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
#include "host/groups.hpp"
#include "host_blas.hpp"
#include "runner.hpp"

namespace fusex {

struct host {
  int threads = 0;  // 0: OpenMP's default
  // Outputs of a launch that total at least this many bytes are written
  // past the caches (non-temporal stores of whole lines): they would not
  // stay in the last-level cache for a consumer, and streamed they are not
  // read before they are written. 0: half the last-level cache; 1: always;
  // SIZE_MAX: never.
  std::size_t stream_writes_from = 0;
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
using host_engine::extents_of;

inline int omp_default_threads() { return host_engine::default_threads(); }

template <class C>
void pointwise_host(const group_args<C>& a, int threads, std::size_t stream_from) {
  host_engine::pointwise_host<C>(a, threads, stream_from);
}
template <class C>
void row_reduction_host(const group_args<C>& a, int threads, std::size_t stream_from) {
  host_engine::row_reduction_host<C>(a, threads, stream_from);
}
template <class C>
void column_reduction_host(const group_args<C>& a, int threads, std::size_t stream_from) {
  host_engine::column_reduction_host<C>(a, threads, stream_from);
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

// Intermediate buffers of the calling thread, kept between runs: an
// intermediate of megabytes freshly allocated is fresh pages, which the
// kernel clears one by one when first touched; on a memory-bound plan that
// cost more than the group that wrote them. A run takes the smallest free
// buffer that fits and gives its buffers back when it ends (a run nested in
// a claimed op's executor takes others); the pool keeps the largest few.
struct host_buffer {
  std::size_t bytes = 0;
  std::unique_ptr<std::byte[]> data;
};
inline std::vector<host_buffer>& host_buffer_pool() {
  thread_local std::vector<host_buffer> pool;
  return pool;
}
inline constexpr std::size_t host_pool_buffers = 16;

// The host's launchers for the shared run skeleton.
struct host_runner {
  int threads = 0;
  std::size_t stream_from = 0;
  std::vector<host_buffer> buffers;

  explicit host_runner(const host& h) : threads(h.threads), stream_from(h.stream_writes_from) {}
  host_runner(const host_runner&) = delete;
  host_runner& operator=(const host_runner&) = delete;
  ~host_runner() {
    auto& pool = host_buffer_pool();
    for (auto& b : buffers) pool.push_back(std::move(b));
    std::sort(pool.begin(), pool.end(), [](const host_buffer& a, const host_buffer& b) { return a.bytes > b.bytes; });
    if (pool.size() > host_pool_buffers) pool.resize(host_pool_buffers);
  }
  void* allocate(std::size_t bytes) {
    if (bytes == 0) bytes = 1;
    auto& pool = host_buffer_pool();
    std::size_t best = pool.size();
    for (std::size_t i = 0; i < pool.size(); ++i)
      if (pool[i].bytes >= bytes && (best == pool.size() || pool[i].bytes < pool[best].bytes)) best = i;
    if (best < pool.size()) {
      buffers.push_back(std::move(pool[best]));
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(best));
    } else {
      buffers.push_back(host_buffer{bytes, std::unique_ptr<std::byte[]>(new std::byte[bytes])});
    }
    return buffers.back().data.get();
  }
  template <group_kind K, class C>
  void launch(const group_args<C>& ga, const group_label&) {
    if constexpr (K == group_kind::pointwise) pointwise_host<C>(ga, threads, stream_from);
    else if constexpr (K == group_kind::row_reduction) row_reduction_host<C>(ga, threads, stream_from);
    else if constexpr (K == group_kind::column_reduction) column_reduction_host<C>(ga, threads, stream_from);
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
  detail::exec::host_runner ex{h};
  detail::exec::run_plan<plan<P, Policy>>(ex, in, out);
}

// A program runs with the default (fused) plan.
template <program_like P, class... A, class... O>
void run(P p, host h, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  run(partition(p), h, in, out);
}

}  // namespace fusex
