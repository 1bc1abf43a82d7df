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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../codegen/reduce.hpp"
#include "lanes.hpp"

namespace fusex::detail::host_engine {

// 1 / k for the Welford weights, k = 1 .. 16.
inline constexpr float welford_weight[17] = {0.0f,        1.0f,        0.5f,        1.0f / 3,  0.25f,       0.2f,
                                             1.0f / 6,    1.0f / 7,    0.125f,      1.0f / 9,  0.1f,        1.0f / 11,
                                             1.0f / 12,   1.0f / 13,   1.0f / 14,   1.0f / 15, 0.0625f};
inline constexpr int block_registers = 16;

// Full registers alternate between two slots (the row loop hands out
// registers in pairs), so that a reduction carries two independent chains:
// one chain's latency (a Welford update is a subtract and a multiply-add
// deep) would otherwise bound the loop.
inline constexpr int slots = 2;

// Combines V lane states pairwise in lane order.
template <class RD, class S>
inline typename RD::state combine_lanes(S* t) {
  for (int step = 1; step < V; step *= 2)
    for (int l = 0; l + step < V; l += 2 * step) t[l] = RD::combine(t[l], t[l + step]);
  return t[0];
}
// Slot 1's lanes into slot 0's, lane by lane, then the lanes pairwise.
template <class RD, class S>
inline typename RD::state combine_slots(S (*t)[V]) {
  for (int l = 0; l < V; ++l) t[0][l] = RD::combine(t[0][l], t[1][l]);
  return combine_lanes<RD>(t[0]);
}

// Any reduction, lane by lane in its state type.
template <class RD>
struct generic_acc {
  using state = typename RD::state;
  state s[slots][V], rest;
  generic_acc() : rest(RD::identity()) {
    for (auto& t : s)
      for (auto& x : t) x = RD::identity();
  }
  template <int S, class L>
  FUSEX_HOST_INLINE void add(const L& v) {
    for (int l = 0; l < V; ++l) RD::add(s[S][l], v[l]);
  }
  template <class L>
  FUSEX_HOST_INLINE void add_part(const L& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() { return RD::combine(combine_slots<RD>(s), rest); }
};

#if FUSEX_HOST_SIMD
using simd::widen;

// t's bytes zeroed by whole-register stores of a zero the compiler does
// not know is zero (T trivially copyable, its size a multiple of a
// register). The row pass copies a Welford accumulator by whole registers,
// and a register load forwards only from one store that covers it: cleared
// member by member (or by the `rep stos` that GCC merges constant zero
// stores into), the first copy waited until those stores had drained, 6% of
// LayerNorm's forward.
template <class T>
FUSEX_HOST_INLINE void clear_by_registers(T& t) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(simd::f32v) == 0);
  std::uint32_t z = 0;
#if defined(__GNUC__)
  asm("" : "+r"(z));
#endif
  float f;
  std::memcpy(&f, &z, sizeof f);
  const simd::f32v zero = simd::splat(f);
  auto* p = reinterpret_cast<unsigned char*>(&t);
  for (std::size_t i = 0; i < sizeof(T); i += sizeof zero) std::memcpy(p + i, &zero, sizeof zero);
}

// Float sums in f64 lanes: a sum of many terms that cancel keeps the
// accuracy of the reference (f32 partial sums would not).
template <class RD>
struct float_sum_acc {
  using state = typename RD::state;  // double
  simd::f64v lo[slots] = {}, hi[slots] = {};
  state rest = 0;
  template <int S>
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    simd::f64v a, b;
    widen(v, a, b);
    lo[S] += a;
    hi[S] += b;
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() {
    double t[slots][V];
    for (int j = 0; j < slots; ++j) {
      std::memcpy(t[j], &lo[j], sizeof lo[j]);
      std::memcpy(t[j] + V / 2, &hi[j], sizeof hi[j]);
    }
    return RD::combine(combine_slots<RD>(t), rest);
  }
};

// Float sums of a reduction whose value only reaches 16-bit outputs (a
// norm's backward): f32 lanes for blocks of 16 registers, each block added
// into f64 lanes. The block's rounding (about 16 terms' worth of f32 error)
// is far below the outputs' bf16 or f16 rounding; one add per register.
template <class RD>
struct float_block_sum_acc {
  using state = typename RD::state;  // double
  simd::f32v acc[slots];
  int k[slots];
  simd::f64v lo[slots], hi[slots];
  state rest;
  // by registers, not by a `rep stos` (see clear_by_registers)
  float_block_sum_acc() { clear_by_registers(*this); }
  template <int S>
  FUSEX_HOST_INLINE void flush() {
    simd::f64v a, b;
    widen(acc[S], a, b);
    lo[S] += a;
    hi[S] += b;
    acc[S] = simd::splat(0.0f);
    k[S] = 0;
  }
  template <int S>
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    acc[S] += v;
    if (++k[S] == block_registers) flush<S>();
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  // A whole block of both slots, summed in a local (registers; the
  // accumulator itself lives in memory), then added in.
  struct block {
    simd::f32v s[slots] = {};
    template <int S>
    FUSEX_HOST_INLINE void add(const simd::f32v& v, int) {
      s[S] += v;
    }
  };
  FUSEX_HOST_INLINE void add_block(const block& b) {
    for (int j = 0; j < slots; ++j) {
      simd::f64v x, y;
      widen(b.s[j], x, y);
      lo[j] += x;
      hi[j] += y;
    }
  }
  state finish() {
    flush<0>();
    flush<1>();
    double t[slots][V];
    for (int j = 0; j < slots; ++j) {
      std::memcpy(t[j], &lo[j], sizeof lo[j]);
      std::memcpy(t[j] + V / 2, &hi[j], sizeof hi[j]);
    }
    return RD::combine(combine_slots<RD>(t), rest);
  }
};

// Float maxima, NaN-propagating, in f32 lanes.
template <class RD>
struct float_max_acc {
  using state = typename RD::state;  // float
  simd::f32v acc[slots] = {simd::splat(-INFINITY), simd::splat(-INFINITY)};
  state rest = RD::identity();
  template <int S>
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    acc[S] = math::maximum(acc[S], v);
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int n) {
    for (int l = 0; l < n; ++l) RD::add(rest, v[l]);
  }
  state finish() {
    state t[slots][V];
    for (int j = 0; j < slots; ++j)
      for (int l = 0; l < V; ++l) t[j][l] = acc[j][l];
    return RD::combine(combine_slots<RD>(t), rest);
  }
};

// Float moments: Welford's update in f32 lanes for a block, merged into f64
// lane moments by Chan's update after each block. Every lane of a slot has
// seen the same count, so Welford's weight and Chan's are scalars and the
// merge is a few whole-register operations.
template <class RD>
struct float_moments_acc {
  using state = typename RD::state;  // moments<double>
  simd::f32v mean[slots], m2[slots];
  int k[slots];
  // f64 moments of the merged blocks, by slot and half register
  simd::f64v dmean[slots][2], dm2[slots][2];
  long long n[slots];
  // rest's mean and m2 at a 16-byte boundary: GCC loads them as one pair,
  // and a pair that straddles two 16-byte halves of the clearing store
  // (below) does not forward from it (the load waits for the store to
  // drain: 6% of LayerNorm's forward)
  long long pad_ = 0;
  state rest = {};
  // The row pass copies this object by whole registers before its first
  // block (see clear_by_registers).
  float_moments_acc() { clear_by_registers(*this); }
  // Chan's update of slot S by a block of cnt registers' moments.
  FUSEX_HOST_INLINE void merge(int S, const simd::f32v& bmean, const simd::f32v& bm2, int cnt) {
    simd::f64v bm[2], bq[2];
    widen(bmean, bm[0], bm[1]);
    widen(bm2, bq[0], bq[1]);
    const long long total = n[S] + cnt;
    const double fb = static_cast<double>(cnt) / static_cast<double>(total);
    const double fab = static_cast<double>(n[S]) * fb;
    for (int h = 0; h < 2; ++h) {
      const simd::f64v d = bm[h] - dmean[S][h];
      dmean[S][h] += d * fb;
      dm2[S][h] += bq[h] + d * d * fab;
    }
    n[S] = total;
  }
  template <int S>
  FUSEX_HOST_INLINE void flush() {
    if (k[S] == 0) return;
    merge(S, mean[S], m2[S], k[S]);
    mean[S] = simd::splat(0.0f);
    m2[S] = simd::splat(0.0f);
    k[S] = 0;
  }
  // Welford's update of one register, the (k + 1)-th of its chain.
  static FUSEX_HOST_INLINE void update(simd::f32v& mn, simd::f32v& q, const simd::f32v& v, int k) {
    const simd::f32v d = v - mn;
    mn += d * welford_weight[k + 1];
    q += d * (v - mn);
  }
  template <int S>
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    update(mean[S], m2[S], v, k[S]++);
    if (k[S] == block_registers) flush<S>();
  }
  // A whole block of both slots in a local (see float_block_sum_acc). Each
  // slot's block runs as two chains (its even and odd registers), merged
  // at the end: a Welford chain is a subtract and a multiply-add deep, and
  // two chains per row left LayerNorm's statistics pass latency-bound.
  struct block {
    simd::f32v mean[slots][2] = {}, m2[slots][2] = {};
    template <int S>
    FUSEX_HOST_INLINE void add(const simd::f32v& v, int k) {
      update(mean[S][k & 1], m2[S][k & 1], v, k >> 1);
    }
  };
  FUSEX_HOST_INLINE void add_block(const block& b) {
    // Chan's update of equal halves (block_registers / 2 each): the mean
    // is the midpoint, and na * nb / n is a quarter of the block.
    constexpr float quarter = static_cast<float>(block_registers) / 4;
    for (int j = 0; j < slots; ++j) {
      const simd::f32v d = b.mean[j][1] - b.mean[j][0];
      merge(j, (b.mean[j][0] + b.mean[j][1]) * 0.5f, b.m2[j][0] + b.m2[j][1] + d * d * quarter, block_registers);
    }
  }
  FUSEX_HOST_INLINE void add_part(const simd::f32v& v, int cnt) {
    for (int l = 0; l < cnt; ++l) RD::add(rest, v[l]);
  }
  // Chan's update of (ma, qa) by (mb, qb), lane by lane, with weights
  // fb = nb / n and fab = na * nb / n; an infinite or NaN mean as
  // RD::combine treats it.
  static FUSEX_HOST_INLINE void chan(simd::f64v& ma, simd::f64v& qa, const simd::f64v& mb, const simd::f64v& qb,
                                     double fb, double fab) {
    const simd::f64v d = mb - ma;
    const auto finite = d - d == 0.0;
    const simd::f64v m = ma + d * fb, q = qa + (qb + d * d * fab);
    ma = finite ? m : ma + mb;
    qa = finite ? q : d - d;
  }
  // Lanes 2i and 2i + 1 of (a, b) as lane i of two registers.
  template <std::size_t... I>
  static FUSEX_HOST_INLINE void deal(const simd::f64v& a, const simd::f64v& b, simd::f64v& even, simd::f64v& odd,
                                     std::index_sequence<I...>) {
    const simd::f64v e = __builtin_shufflevector(a, b, static_cast<int>(2 * I)...);
    odd = __builtin_shufflevector(a, b, static_cast<int>(2 * I + 1)...);
    even = e;  // even may be a or b
  }
  // The lanes of a slot share one count, so the weights of the slot merge
  // and of the lane tree are scalars: one division per row, not one per
  // combine (the scalar combines were a tenth of LayerNorm's forward).
  // Same order as combine_slots: slot 1 into slot 0 lane by lane, then the
  // lanes pairwise (l with l + 1, then l with l + 2, ...), each level as
  // whole registers: the even lanes take the odd ones, dealt apart (lane by
  // lane, the tree was half of a row's fixed cost in LayerNorm's forward).
  state finish() {
    static_assert(offsetof(float_moments_acc, rest) % 16 == 8 && offsetof(state, mean) == 8);
    flush<0>();
    flush<1>();
    if (n[0] == 0) return rest;  // slot 0 takes the first full register
    simd::f64v m[2] = {dmean[0][0], dmean[0][1]}, q[2] = {dm2[0][0], dm2[0][1]};
    long long cnt = n[0];
    if (n[1] > 0) {
      const long long total = n[0] + n[1];
      const double fb = codegen::weight(static_cast<double>(n[1]), static_cast<double>(total));
      const double fab = static_cast<double>(n[0]) * fb;
      for (int h = 0; h < 2; ++h) chan(m[h], q[h], dmean[1][h], dm2[1][h], fb, fab);
      cnt = total;
    }
    constexpr auto half = std::make_index_sequence<V / 2>{};
    // V lanes in two registers, then V / 2, V / 4, ... in the lower lanes of one
    simd::f64v mo, qo;
    deal(m[0], m[1], m[0], mo, half);
    deal(q[0], q[1], q[0], qo, half);
    chan(m[0], q[0], mo, qo, 0.5, static_cast<double>(cnt) * 0.5);  // equal counts: fb is one half
    cnt *= 2;
    for (int step = 2; step < V; step *= 2) {
      deal(m[0], m[0], m[0], mo, half);
      deal(q[0], q[0], q[0], qo, half);
      chan(m[0], q[0], mo, qo, 0.5, static_cast<double>(cnt) * 0.5);
      cnt *= 2;
    }
    return RD::combine(state{cnt, m[0][0], q[0][0]}, rest);
  }
  // Is the moments' mean exact in kind? An infinity or NaN makes its lanes'
  // means NaN or infinite for good (inf - inf in the update, NaN - x in
  // every merge after), so a lane's merged mean that is not finite flags it
  // (as does an overflow of v - mean, which the exact sum then handles);
  // the mean is then summed again instead. Checked once per row, not per
  // register. Call after finish().
  bool mean_valid() const {
    for (int j = 0; j < slots; ++j)
      for (int h = 0; h < 2; ++h)
        for (int l = 0; l < V / 2; ++l)
          if (!(dmean[j][h][l] - dmean[j][h][l] == 0.0)) return false;
    return true;
  }
};
#endif

template <class A>
inline bool mean_valid(const A& acc) {
  if constexpr (requires { acc.mean_valid(); }) return acc.mean_valid();
  else return true;
}

// The accumulator of reducer RD on lanes of its value type. Coarse: the
// reduction's value only reaches 16-bit outputs (f32 blocks suffice).
template <class RD, bool Coarse = false>
consteval int acc_kind() {
#if FUSEX_HOST_SIMD
  if constexpr (std::is_same_v<typename RD::value, float>) {
    if (RD::as_sum && RD::fp && std::is_same_v<typename RD::state, double>) return Coarse ? 4 : 1;
    if (RD::kind == op_kind::amax) return 2;
    if (RD::kind == op_kind::var_mean && !RD::as_sum) return 3;
  }
#endif
  return 0;
}
template <class RD, int K>
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
template <class RD>
struct row_acc_of<RD, 4> {
  using type = float_block_sum_acc<RD>;
};
#endif
template <class RD, bool Coarse>
using row_acc = typename row_acc_of<RD, acc_kind<RD, Coarse>()>::type;

// ---- column groups ------------------------------------------------------------
// The states of one block of rows at the positions of a tile, in place in
// the group's partial states. Float sums in f64, a register of floats
// widened at a time; coarse ones (only reaching 16-bit outputs) in an f32
// tile added into the states every 16 rows. The f32 tile is the caller's
// scratch, and the first flush stores the states instead of adding to
// zeroed ones: a qkv backward sums 4 heads per block, 128 positions at a
// time, and allocating and zeroing per block cost more than the sums.
template <class RD, bool Coarse>
struct column_acc {
  using state = typename RD::state;
  static constexpr int kind = acc_kind<RD, Coarse>();
  state* s = nullptr;
  idx_t n = 0;
  int rows = 0;
  float* f = nullptr;   // coarse sums: the block's last rows, in f32
  bool stored = false;  // coarse sums: s holds what was flushed
  void start(state* at, idx_t count, std::vector<float>& scratch) {
    s = at;
    n = count;
    rows = 0;
    if constexpr (kind == 4) {
      if (scratch.size() < static_cast<std::size_t>(n)) scratch.resize(static_cast<std::size_t>(n));
      f = scratch.data();
      std::fill(f, f + n, 0.0f);
      stored = false;
    } else {
      for (idx_t j = 0; j < n; ++j) s[j] = RD::identity();
    }
  }
  // A new row of the block begins.
  void row() {
    if constexpr (kind == 4) {
      if (++rows > block_registers) flush();
    }
  }
  // Must end every block: until then, coarse sums' states are unset.
  void flush() {
    if constexpr (kind == 4) {
      if (stored) {
        for (idx_t j = 0; j < n; ++j) {
          s[j] += static_cast<double>(f[j]);
          f[j] = 0.0f;
        }
      } else {
        for (idx_t j = 0; j < n; ++j) {
          s[j] = static_cast<double>(f[j]);
          f[j] = 0.0f;
        }
        stored = true;
      }
      rows = 1;
    }
  }
  template <mode Md, class L>
  FUSEX_HOST_INLINE void add(idx_t pos, const L& v, int cnt) {
    if constexpr (kind == 4) {
      float* t = f + pos;
      if constexpr (Md == mode::fast) {
#if FUSEX_HOST_SIMD
        simd::f32v x;
        std::memcpy(&x, t, sizeof x);
        x += v;
        std::memcpy(t, &x, sizeof x);
#endif
      } else {
        for (int l = 0; l < cnt; ++l) t[l] += v[l];
      }
    } else if constexpr (kind == 1 && Md == mode::fast) {
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
      for (int l = 0; l < (Md == mode::fast ? V : cnt); ++l) RD::add(s[pos + l], v[l]);
    }
  }
};

}  // namespace fusex::detail::host_engine
