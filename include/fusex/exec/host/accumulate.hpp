#pragma once
// Reduction accumulators of the host's row engine.
//
// Row groups: a reduction over a row takes its operand a register at a
// time; lane l accumulates positions l, l + V, ... of each segment, and the
// lanes combine in a fixed pairwise order at the end, so the result depends
// on the extents only, never on the thread count. Float sums accumulate in
// f64 lanes (terms that cancel would lose the reference's accuracy in f32
// partial sums). Moments take Welford's update in f32 lanes for blocks of
// 16 registers, each block then merged into f64 lanes by Chan's update:
// Welford's error is relative to the variance itself, so f32 suffices
// within a block. Partial registers (a segment's last lanes) enter a scalar
// f64 state value by value, in order.
//
// Column groups: a reduction over an outer axis accumulates, per output
// position, the rows of one block (float sums in f64).

#include <cstdint>
#include <vector>

#include "../../codegen/reduce.hpp"
#include "lanes.hpp"

namespace fusex::detail::host_engine {

// 1 / k for the Welford weights, k = 1 .. 16.
inline constexpr float welford_weight[17] = {0.0f,        1.0f,        0.5f,        1.0f / 3,  0.25f,       0.2f,
                                             1.0f / 6,    1.0f / 7,    0.125f,      1.0f / 9,  0.1f,        1.0f / 11,
                                             1.0f / 12,   1.0f / 13,   1.0f / 14,   1.0f / 15, 0.0625f};
inline constexpr int block_registers = 16;

// Combines V lane states pairwise in lane order.
template <class RD, class S>
inline typename RD::state combine_lanes(S* t) {
  for (int step = 1; step < V; step *= 2)
    for (int l = 0; l + step < V; l += 2 * step) t[l] = RD::combine(t[l], t[l + step]);
  return t[0];
}

// Any reduction, lane by lane in its state type.
template <class RD>
struct generic_acc {
  using state = typename RD::state;
  state s[V], rest;
  generic_acc() : rest(RD::identity()) {
    for (auto& x : s) x = RD::identity();
  }
  template <class L>
  FUSEX_HOST_INLINE void add(const L& v) {
    for (int l = 0; l < V; ++l) RD::add(s[l], v[l]);
  }
  template <class L>
  FUSEX_HOST_INLINE void add_part(const L& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() { return RD::combine(combine_lanes<RD>(s), rest); }
};

#if FUSEX_HOST_SIMD
// The lanes of a register of floats as two registers of doubles.
FUSEX_HOST_INLINE void widen(const simd::f32v& v, simd::f64v& lo, simd::f64v& hi) {
  simd::f32h a, b;
  std::memcpy(&a, &v, sizeof a);
  std::memcpy(&b, reinterpret_cast<const char*>(&v) + sizeof a, sizeof b);
  lo = __builtin_convertvector(a, simd::f64v);
  hi = __builtin_convertvector(b, simd::f64v);
}

// Float sums in f64 lanes: a sum of many terms that cancel keeps the
// accuracy of the reference (f32 partial sums would not).
template <class RD>
struct float_sum_acc {
  using state = typename RD::state;  // double
  simd::f64v lo = {}, hi = {};
  state rest = 0;
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    simd::f64v a, b;
    widen(v, a, b);
    lo += a;
    hi += b;
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() {
    double t[V];
    std::memcpy(t, &lo, sizeof lo);
    std::memcpy(t + V / 2, &hi, sizeof hi);
    return RD::combine(combine_lanes<RD>(t), rest);
  }
};

// Float maxima, NaN-propagating, in f32 lanes.
template <class RD>
struct float_max_acc {
  using state = typename RD::state;  // float
  simd::f32v acc = simd::splat(-INFINITY);
  state rest = RD::identity();
  FUSEX_HOST_INLINE void add(const simd::f32v& v) { acc = math::maximum(acc, v); }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() {
    state t[V];
    for (int l = 0; l < V; ++l) t[l] = acc[l];
    return RD::combine(combine_lanes<RD>(t), rest);
  }
};

// Float moments: Welford's update in f32 lanes for a block (every lane has
// seen the same count, so its weight is a constant), merged into f64 lane
// moments by Chan's update after each block.
template <class RD>
struct float_moments_acc {
  using state = typename RD::state;  // moments<double>
  simd::f32v mean = simd::splat(0.0f), m2 = simd::splat(0.0f);
  simd::f32v nonfinite = simd::splat(0.0f);  // NaN once a lane saw an infinity or NaN
  int k = 0;
  state s[V] = {}, rest = {};
  FUSEX_HOST_INLINE void flush() {
    if (k == 0) return;
    for (int l = 0; l < V; ++l) s[l] = RD::combine(s[l], state{k, static_cast<double>(mean[l]), static_cast<double>(m2[l])});
    mean = simd::splat(0.0f);
    m2 = simd::splat(0.0f);
    k = 0;
  }
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    nonfinite += v - v;
    const simd::f32v d = v - mean;
    mean += d * welford_weight[++k];
    m2 += d * (v - mean);
    if (k == block_registers) flush();
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() {
    flush();
    return RD::combine(combine_lanes<RD>(s), rest);
  }
  // Is the moments' mean exact in kind? An infinity makes the lanes' means
  // NaN (inf - inf in the update); the mean is then summed again instead.
  bool mean_valid() const {
    for (int l = 0; l < V; ++l)
      if (nonfinite[l] != 0.0f || nonfinite[l] != nonfinite[l]) return false;
    return true;
  }
};
#endif

template <class A>
inline bool mean_valid(const A& acc) {
  if constexpr (requires { acc.mean_valid(); }) return acc.mean_valid();
  else return true;
}

// The accumulator of reducer RD on lanes of its value type.
template <class RD>
consteval int acc_kind() {
#if FUSEX_HOST_SIMD
  if constexpr (std::is_same_v<typename RD::value, float>) {
    if (RD::as_sum && RD::fp && std::is_same_v<typename RD::state, double>) return 1;
    if (RD::kind == op_kind::amax) return 2;
    if (RD::kind == op_kind::var_mean && !RD::as_sum) return 3;
  }
#endif
  return 0;
}
template <class RD, int K = acc_kind<RD>()>
struct row_acc_of {
  using type = generic_acc<RD>;
};
#if FUSEX_HOST_SIMD
template <class RD>
struct row_acc_of<RD, 1> {
  using type = float_sum_acc<RD>;
};
template <class RD>
struct row_acc_of<RD, 2> {
  using type = float_max_acc<RD>;
};
template <class RD>
struct row_acc_of<RD, 3> {
  using type = float_moments_acc<RD>;
};
#endif
template <class RD>
using row_acc = typename row_acc_of<RD>::type;

// ---- column groups ------------------------------------------------------------
// The states of one block of rows at the positions of a tile, in place in
// the group's partial states (float sums in f64, a register of floats
// widened at a time).
template <class RD>
struct column_acc {
  using state = typename RD::state;
  static constexpr bool float_sum = acc_kind<RD>() == 1;
  state* s = nullptr;
  void start(state* at, idx_t n) {
    s = at;
    for (idx_t j = 0; j < n; ++j) s[j] = RD::identity();
  }
  template <mode Md, class L>
  FUSEX_HOST_INLINE void add(idx_t pos, const L& v, int n) {
    if constexpr (float_sum && Md == mode::fast) {
#if FUSEX_HOST_SIMD
      simd::f64v lo, hi, a, b;
      widen(v, a, b);
      double* p = s + pos;
      std::memcpy(&lo, p, sizeof lo);
      std::memcpy(&hi, p + V / 2, sizeof hi);
      lo += a;
      hi += b;
      std::memcpy(p, &lo, sizeof lo);
      std::memcpy(p + V / 2, &hi, sizeof hi);
#endif
    } else {
      for (int l = 0; l < (Md == mode::fast ? V : n); ++l) RD::add(s[pos + l], v[l]);
    }
  }
};

}  // namespace fusex::detail::host_engine
