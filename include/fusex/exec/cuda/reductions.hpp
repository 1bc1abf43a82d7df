#pragma once
// The reductions of a row or column group on the device: their levels
// (a reduction whose operand reads another one's result runs in a later
// pass), their states, and a group-wide combine in a fixed order (an ordered
// warp butterfly, then the warps in order), so results depend on the
// extents only, never on timing.

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
    int twin[N > 0 ? N : 1] = {};    // a var_mean mean output: the variance of the same operand, or -1
    int online[N > 0 ? N : 1] = {};  // sum(exp(y - amax(y))): the amax, or -1
    int max_of[N > 0 ? N : 1] = {};  // that amax: its sum, or -1
  };
  // In a row group, s = sum(exp(y - m)) over the row with m = amax(y) (a
  // softmax's denominator) runs as one online pass over y: the running sum
  // is rescaled when the running maximum grows. Both are f32.
  static consteval int online_max(int k) {
    const int M = RL::local(k);
    if (Q::kind() != group_kind::row_reduction || Q::op(M) != op_kind::sum || Q::dt(M) != dtype::f32) return -1;
    const int E = Q::operand(M, 0);
    if (Q::op(E) != op_kind::exp || Q::dt(E) != dtype::f32 || Q::nops(E) != 1) return -1;
    const int S = Q::operand(E, 0);
    if (Q::op(S) != op_kind::sub || Q::dt(S) != dtype::f32 || Q::nops(S) != 2) return -1;
    const int Y = Q::operand(S, 0);
    int X = Q::operand(S, 1);
    if (Q::op(X) == op_kind::broadcast_in_dim && Q::nops(X) == 1) X = Q::operand(X, 0);
    if (!Q::computes(X) || Q::op(X) != op_kind::amax || Q::operand(X, 0) != Y || Q::dt(X) != dtype::f32) return -1;
    return Q::red_index(X);
  }
  static consteval info make() {
    info I{};
    for (int k = 0; k < N; ++k) I.max_of[k] = -1;
    for (int k = 0; k < N; ++k) {
      const std::uint64_t m = reads(RL::local(k));
      I.online[k] = online_max(k);
      int lv = 0;
      for (int j = 0; j < k; ++j)
        if ((m >> j) & 1) lv = I.level[j] + 1 > lv ? I.level[j] + 1 : lv;
      if (I.online[k] >= 0) {
        lv = I.level[I.online[k]];
        I.max_of[I.online[k]] = k;
      }
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
  static consteval int online(int k) { return I.online[k]; }
  // Reduction k keeps a state of its own: not a mean with a variance twin,
  // nor a maximum that its online sum computes.
  static consteval bool accumulates(int k) { return I.twin[k] < 0 && I.max_of[k] < 0; }
  // The local whose values reduction k's pass reads: its operand, or for an
  // online sum the amax's operand.
  static consteval int source(int k) {
    return I.online[k] >= 0 ? Q::operand(RL::local(I.online[k]), 0) : Q::operand(RL::local(k), 0);
  }
};

// The online softmax denominator: the running maximum m and the sum of
// exp(y - m), rescaled when m grows.
struct online_softmax {
  struct state {
    float m = -INFINITY, s = 0;
  };
  using value = float;
  // exp(from - to), or 1 when they are equal (also both -inf: an empty part)
  __device__ static float rescale(float from, float to) { return from == to ? 1.0f : ::expf(from - to); }
  __device__ static state identity() { return {}; }
  __device__ static state of(float y) { return {y, 1.0f}; }
  __device__ static void add(state& st, float y) { st = combine(st, of(y)); }
  template <int W>
  __device__ static void add_lanes(state& st, const float* y) {
    float m = y[0];
#pragma unroll
    for (int l = 1; l < W; ++l) m = math::maximum(m, y[l]);
    m = math::maximum(m, st.m);
    float s = 0;
#pragma unroll
    for (int l = 0; l < W; ++l) s += ::expf(y[l] - m);
    st = {m, st.s * rescale(st.m, m) + s};
  }
  __device__ static state combine(const state& a, const state& b) {
    const float m = math::maximum(a.m, b.m);
    return {m, a.s * rescale(a.m, m) + b.s * rescale(b.m, m)};
  }
  template <dtype DM>
  __device__ static float finish(const state& st, long long, double) {
    return st.s;
  }
};

// The device reducer of compact reduction k: f32 states for 16- and 32-bit
// floats, f64 for f64, wrapping 64-bit integers.
template <class C, int K>
struct device_reducer {
  using Q = prog<C>;
  static constexpr int M = codegen::reduction_layout<C>::local(K);
  static constexpr dtype DU = Q::dt(Q::operand(M, 0));
  using A = std::conditional_t<DU == dtype::f64, double, float>;
  using type = std::conditional_t<(reduction_plan<C>::online(K) >= 0), online_softmax,
                                  codegen::reducer<Q::op(M), DU, A, Q::op(M) == op_kind::var_mean && (Q::flag(M) & 2) != 0>>;
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
  if constexpr (RP::online(K) >= 0) {
    constexpr int J = RP::online(K);
#pragma unroll
    for (int l = 0; l < RW; ++l)
      if (l < lanes) rv.template at<J>()[l] = codegen::to_dtype<Q::dt(RL::local(J))>(states[l].m);
  }
}

// Shared memory for combining one state per warp of a group, for each
// reduction of a level: enough for the widest state.
inline constexpr int max_state_bytes = 24;
struct alignas(8) state_slot {
  unsigned char bytes[max_state_bytes];
};

template <class RD, class Sync>
__device__ typename RD::state group_combine(typename RD::state s, state_slot* slots, int threads, Sync&& sync);

// The online pair in two plain passes: the group's maximum first, then the
// sum of every thread's part rescaled to it (one exp per thread, where
// combining pairs of states would take two per step).
struct max_reducer {
  using state = float;
  static constexpr bool commutative = true;
  __device__ static float combine(float a, float b) { return math::maximum(a, b); }
};
struct sum_reducer {
  using state = float;
  static constexpr bool commutative = true;
  __device__ static float combine(float a, float b) { return a + b; }
};
template <class Sync>
__device__ online_softmax::state combine_online(online_softmax::state s, state_slot* slots, int threads, Sync&& sync) {
  const float m = group_combine<max_reducer>(s.m, slots, threads, sync);
  sync();  // the slots are reused
  const float part = s.s * online_softmax::rescale(s.m, m);
  return {m, group_combine<sum_reducer>(part, slots, threads, sync)};
}

// One butterfly step: this lane's state and the one of lane `lane ^ off`,
// as (lower lane's, upper lane's), moved as 32-bit words (a select of
// whole structs would go through local memory).
template <class S>
__device__ inline void butterfly_pair(const S& s, int off, bool upper, S& lo, S& hi) {
  static_assert(sizeof(S) % 4 == 0, "fusex internal: reduction states are whole words");
  constexpr int n = static_cast<int>(sizeof(S) / 4);
  unsigned w[n], a[n], b[n];
  memcpy(w, &s, sizeof(S));
#pragma unroll
  for (int k = 0; k < n; ++k) {
    const unsigned o = __shfl_xor_sync(0xffffffffu, w[k], off);
    a[k] = upper ? o : w[k];
    b[k] = upper ? w[k] : o;
  }
  memcpy(&lo, a, sizeof(S));
  memcpy(&hi, b, sizeof(S));
}

// Combines state s over the `threads` threads of a group (a power of two,
// 32 to 256): the result, the same in every thread, combines the threads'
// states in a fixed tree over thread order. In a warp, a butterfly of
// shuffles where each pair combines (lower lanes, upper lanes) in that
// order, so that both partners compute the same bits; then the warps in
// order through `slots` (one per warp of the group), `sync` being the
// group's barrier. (Hand-written rather than cub::WarpReduce: every thread
// needs the result, and the combine order must not depend on the launch.)
template <class RD, class Sync>
__device__ typename RD::state group_combine(typename RD::state s, state_slot* slots, int threads, Sync&& sync) {
  if constexpr (std::is_same_v<RD, online_softmax>) {
    return combine_online(s, slots, threads, sync);
  } else {
    using S = typename RD::state;
    static_assert(sizeof(S) <= max_state_bytes, "fusex internal: reduction state too large");
    const int lane = static_cast<int>(threadIdx.x) & 31;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      S lo, hi;
      butterfly_pair(s, off, RD::commutative ? false : (lane & off) != 0, lo, hi);
      s = RD::combine(lo, hi);
    }
    if (threads == 32) return s;
    const int warp = (static_cast<int>(threadIdx.x) & (threads - 1)) >> 5;
    if (lane == 0) *reinterpret_cast<S*>(slots[warp].bytes) = s;
    sync();
    S r = *reinterpret_cast<const S*>(slots[0].bytes);
    const int nw = threads >> 5;
#pragma unroll
    for (int k = 1; k < block_threads / 32; ++k)
      if (k < nw) r = RD::combine(r, *reinterpret_cast<const S*>(slots[k].bytes));
    return r;
  }
}

}  // namespace fusex::detail::cuda
