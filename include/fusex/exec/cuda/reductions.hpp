#pragma once
// The reductions of a row or column group on the device: their levels
// (a reduction whose operand reads another one's result runs in a later
// pass), their states, and a group-wide combine in a fixed order (warp
// shuffles through cub::WarpReduce, then the warps in order), so results
// depend on the extents only, never on timing.

#include <cub/warp/warp_reduce.cuh>

#include "lanes.hpp"

namespace fusex::detail::cuda {

// Reduction facts of group program C, computed at compile time.
template <class C>
struct reduction_plan {
  using Q = prog<C>;
  using RL = codegen::reduction_layout<C>;
  static constexpr int N = Q::nreductions();
  static_assert(N <= 64, "fusex: a group computes more than 64 reductions");

  // Reductions (compact indices) that local i reads, directly or not.
  static consteval std::uint64_t reads(int i) {
    std::uint64_t m = 0;
    bool seen[Q::nlocals() > 0 ? Q::nlocals() : 1] = {};
    int stack[Q::nlocals() > 0 ? Q::nlocals() : 1] = {};
    int sp = 0;
    stack[sp++] = i;
    seen[i] = true;
    while (sp > 0) {
      const int v = stack[--sp];
      for (int k = 0; k < Q::nops(v); ++k) {
        const int u = Q::operand(v, k);
        if (seen[u]) continue;
        seen[u] = true;
        if (Q::computes(u)) m |= std::uint64_t{1} << Q::red_index(u);
        else stack[sp++] = u;
      }
    }
    return m;
  }
  struct info {
    int level[N > 0 ? N : 1] = {};
    int nlevels = 0;
    int twin[N > 0 ? N : 1] = {};  // a var_mean mean output: the variance of the same operand, or -1
  };
  static consteval info make() {
    info I{};
    for (int k = 0; k < N; ++k) {
      const std::uint64_t m = reads(RL::local(k));
      int lv = 0;
      for (int j = 0; j < k; ++j)
        if ((m >> j) & 1) lv = I.level[j] + 1 > lv ? I.level[j] + 1 : lv;
      I.level[k] = lv;
      I.nlevels = lv + 1 > I.nlevels ? lv + 1 : I.nlevels;
      I.twin[k] = -1;
      const int M = RL::local(k);
      if (Q::op(M) == op_kind::var_mean && (Q::flag(M) & 2))
        for (int j = 0; j < N; ++j) {
          const int V = RL::local(j);
          if (Q::op(V) == op_kind::var_mean && !(Q::flag(V) & 2) && Q::operand(V, 0) == Q::operand(M, 0)) I.twin[k] = j;
        }
    }
    return I;
  }
  static constexpr info I = make();
  static consteval int level(int k) { return I.level[k]; }
  static consteval int nlevels() { return I.nlevels; }
  static consteval int twin(int k) { return I.twin[k]; }
  // Reduction k keeps a state of its own (a mean with a variance twin reads the twin's).
  static consteval bool accumulates(int k) { return I.twin[k] < 0; }
};

// The device reducer of compact reduction k: f32 states for 16- and 32-bit
// floats, f64 for f64, wrapping 64-bit integers.
template <class C, int K>
struct device_reducer {
  using Q = prog<C>;
  static constexpr int M = codegen::reduction_layout<C>::local(K);
  static constexpr dtype DU = Q::dt(Q::operand(M, 0));
  using A = std::conditional_t<DU == dtype::f64, double, float>;
  using type = codegen::reducer<Q::op(M), DU, A, Q::op(M) == op_kind::var_mean && (Q::flag(M) & 2) != 0>;
};

// Reduction J, when it is the mean output of a var_mean whose moments are K's.
template <class C, int K, int J, int RW, class S>
__device__ inline void finish_twin(codegen::reduction_values<C, RW>& rv, const S* states, int lanes, long long len) {
  if constexpr (reduction_plan<C>::twin(J) == K) {
    using A = decltype(states[0].mean);
#pragma unroll
    for (int l = 0; l < RW; ++l)
      if (l < lanes)
        rv.template at<J>()[l] = codegen::to_dtype<prog<C>::dt(codegen::reduction_layout<C>::local(J))>(
            len > 0 ? states[l].mean : static_cast<A>(NAN));
  }
}

// Finishes the reductions whose value comes from compact reduction K's
// combined state (lane l of `states`): K itself, and a var_mean mean output
// that shares K's moments. `len` values were reduced.
template <class C, int K, int RW, class S>
__device__ inline void finish_from(codegen::reduction_values<C, RW>& rv, const S* states, int lanes, long long len) {
  using Q = prog<C>;
  using RP = reduction_plan<C>;
  using RL = codegen::reduction_layout<C>;
  using RD = typename device_reducer<C, K>::type;
  constexpr int M = RL::local(K);
#pragma unroll
  for (int l = 0; l < RW; ++l)
    if (l < lanes) rv.template at<K>()[l] = RD::template finish<Q::dt(M)>(states[l], len, Q::value(M));
  static_for<RP::N>([&](auto jj) { finish_twin<C, K, decltype(jj)::value>(rv, states, lanes, len); });
}

// Shared memory for combining one state per warp of a group, for each
// reduction of a level: enough for the widest state.
inline constexpr int max_state_bytes = 24;
struct alignas(8) state_slot {
  unsigned char bytes[max_state_bytes];
};

// Combines state s over the `threads` threads of a group (a multiple of
// 32, in whole warps): the result, the same in every thread, combines the
// threads' states in thread order. `slots` has one entry per warp of the
// group; `sync` is the group's barrier.
template <class RD, class Sync>
__device__ typename RD::state group_combine(typename RD::state s, state_slot* slots, int threads, Sync&& sync) {
  using S = typename RD::state;
  static_assert(sizeof(S) <= max_state_bytes, "fusex internal: reduction state too large");
  using WR = cub::WarpReduce<S>;
  __shared__ typename WR::TempStorage unused;  // shuffles only: no storage is used on sm_70+
  struct op {
    __device__ S operator()(const S& a, const S& b) const { return RD::combine(a, b); }
  };
  const S w = WR(unused).Reduce(s, op{});
  const int lane = threadIdx.x & 31, warp = (threadIdx.x % threads) / 32;
  if (lane == 0) *reinterpret_cast<S*>(slots[warp].bytes) = w;
  sync();
  S r = *reinterpret_cast<const S*>(slots[0].bytes);
  const int nw = threads / 32;
#pragma unroll
  for (int k = 1; k < block_threads / 32; ++k)
    if (k < nw) r = RD::combine(r, *reinterpret_cast<const S*>(slots[k].bytes));
  return r;
}

}  // namespace fusex::detail::cuda
