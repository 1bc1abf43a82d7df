#pragma once
// Reduction accumulators of the host's row engine.
//
// Row groups: a reduction over a row takes its operand a register at a
// time; lane l accumulates positions l, l + V, ... of each segment, and the
// lanes combine in a fixed pairwise order at the end, so the result depends
// on the extents only, never on the thread count. Float sums accumulate in
// f64 lanes (terms that cancel would lose the reference's accuracy in f32
// partial sums). Moments sum v - K and its square in f32 lanes for blocks
// of 16 registers, each block added into f64 lanes, K a shift near the
// lane's mean (float_moments_acc). Partial registers (a segment's last
// lanes) enter a scalar f64 state value by value, in order. With
// AVX512_BF16, the moments or sum of squares of a bf16 input take whole
// blocks straight from memory as bf16 pairs (simd::dot_bf16_pairs), with
// the shift at zero; bf16 values' squares and their sums of 16 are mostly
// exact in f32, and a row far from zero against its spread still drifts
// and runs again centred.
//
// Column groups: a reduction over an outer axis accumulates, per output
// position, the rows of one block (float sums in f64).

#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../codegen/reduce.hpp"
#include "lanes.hpp"

namespace fusex::detail::host_engine {

// 1 / k, k = 1 .. 16 (a block's mean from its sum).
inline constexpr float inverse_count[17] = {0.0f,        1.0f,        0.5f,        1.0f / 3,  0.25f,       0.2f,
                                             1.0f / 6,    1.0f / 7,    0.125f,      1.0f / 9,  0.1f,        1.0f / 11,
                                             1.0f / 12,   1.0f / 13,   1.0f / 14,   1.0f / 15, 0.0625f};
inline constexpr int block_registers = 16;

// Full registers alternate between two slots (the row loop hands out
// registers in pairs), so that a reduction carries two independent chains:
// one chain's latency would otherwise bound the loop.
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
// register). A row pass loads an accumulator's members as whole registers,
// and a register load forwards only from one store that covers it: cleared
// member by member (or by the `rep stos` that GCC merges constant zero
// stores into), the first load waited until those stores had drained, 6%
// of LayerNorm's forward.
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
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    // Pair register k of 2V bf16 values (see float_moments_acc::block), the
    // values themselves (Kind 1) or their squares (Kind 2: RMSNorm's sum of
    // squares), into slot k & 1: 2 terms a lane, as a register per k.
    template <int Kind>
    FUSEX_HOST_INLINE void add_pairs(const simd::u32v& r, int k) {
      const simd::u32v ones = simd::u32v{} + 0x3f803f80u;  // two bf16 1.0s
      s[k & 1] = simd::dot_bf16_pairs(s[k & 1], r, Kind == 2 ? r : ones);
    }
#endif
  };
  void start_pairs() {}
  bool pairs_ready() const { return true; }
  FUSEX_HOST_INLINE block begin_block() const { return {}; }
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

// Float moments as shifted sums: lane l of slot S sums d = v - K and d * d,
// K the lane's shift, in f32 for blocks of 16 registers, each block then
// added into f64 lanes; a lane's mean is K + S / n and its m2 Q - S^2 / n.
// Two operations per register and no division, where Welford's update took
// a subtract and a multiply-add more and a Chan merge per block (LayerNorm's
// forward spent its statistics pass in those chains).
//
// The f32 rounding of Q is relative to Q = m2 + S^2 / n, so the shift must
// stay near the mean: K is the slot's first register, re-centred after its
// first block on that block's mean (each lane's shift then is the mean of
// its first 16 values). A lane whose later values drift from it has
// S^2 / n > max_spread * m2, and the row then runs again with the row's
// mean as every lane's shift (the two-pass algorithm, from L1 or L2).
template <class RD>
struct float_moments_acc {
  using state = typename RD::state;  // moments<double>
  // S^2 / (n m2) past which a lane's f32 rounding (about 20 ulp of
  // m2 (1 + ratio) at worst) is more than the reference tolerates.
  static constexpr double max_spread = 4;
  simd::f32v shift[slots];
  simd::f32v sum[slots], sq[slots];  // the open block, relative to shift
  simd::f64v dsum[slots][2], dsq[slots][2];  // the flushed blocks, by half register
  long long n[slots];
  int k[slots];
  // 0: no shift yet; 1: the first register (re-centred at the first
  // flush); 2: final
  int phase[slots];
  // set by finish(): a lane mean that is not finite, a lane that drifted
  bool wild_, drifted_;
  bool unshifted_;  // start_unshifted
  state rest = {};
  // The row pass copies this object by whole registers before its first
  // block (see clear_by_registers).
  float_moments_acc() { clear_by_registers(*this); }
  // The row's second pass: every lane shifted by m (the first pass's mean).
  void centre_on(float m) {
    for (int j = 0; j < slots; ++j) {
      shift[j] = simd::splat(m);
      phase[j] = 2;
    }
  }
  // Block sums s and q of cnt registers into slot j's f64 lanes.
  FUSEX_HOST_INLINE void flush_sums(int j, const simd::f32v& s, const simd::f32v& q, int cnt) {
    simd::f64v a[2], b[2];
    widen(s, a[0], a[1]);
    widen(q, b[0], b[1]);
    if (phase[j] == 1) {
      // re-centred on the block's mean: sums relative to K' = K + delta
      // are S - n delta and Q - delta (2 S - n delta), delta exact in f64
      const simd::f32v moved = shift[j] + s * inverse_count[cnt];
      simd::f64v k0[2], k1[2];
      widen(shift[j], k0[0], k0[1]);
      widen(moved, k1[0], k1[1]);
      const double c = cnt;
      for (int h = 0; h < 2; ++h) {
        const simd::f64v delta = k1[h] - k0[h];
        dsum[j][h] = a[h] - delta * c;
        dsq[j][h] = b[h] - delta * (a[h] * 2.0 - delta * c);
      }
      shift[j] = moved;
      phase[j] = 2;
    } else {
      for (int h = 0; h < 2; ++h) {
        dsum[j][h] += a[h];
        dsq[j][h] += b[h];
      }
    }
    n[j] += cnt;
  }
  template <int S>
  FUSEX_HOST_INLINE void flush() {
    if (k[S] == 0) return;
    flush_sums(S, sum[S], sq[S], k[S]);
    sum[S] = simd::splat(0.0f);
    sq[S] = simd::splat(0.0f);
    k[S] = 0;
  }
  template <int S>
  FUSEX_HOST_INLINE void add(const simd::f32v& v) {
    if (phase[S] == 0) {
      shift[S] = v;
      phase[S] = 1;
    }
    const simd::f32v d = v - shift[S];
    sum[S] += d;
    sq[S] += d * d;
    if (++k[S] == block_registers) flush<S>();
  }
  // A whole block of both slots in a local (see float_block_sum_acc), each
  // slot's sums as two chains (its even and odd registers).
  struct block {
    simd::f32v shift[slots];
    bool fresh[slots];
    bool unshifted;  // see start_unshifted
    simd::f32v s[slots][2] = {}, q[slots][2] = {};
    template <int S>
    FUSEX_HOST_INLINE void add(const simd::f32v& v, int k) {
      if (k == 0 && fresh[S]) shift[S] = v;
      const simd::f32v d = v - shift[S];
      s[S][k & 1] += d;
      q[S][k & 1] += d * d;
    }
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    // Pair register k (k = 0 .. block_registers - 1: the block's 2V
    // block_registers lanes) of 2V bf16 values: their sum and sum of squares
    // as dot products, into slot k & 1. A slot's lane takes 2 values from
    // each of its block_registers / 2 pair registers: block_registers, as
    // from a register per k.
    template <int Kind>
      requires(Kind == 1)  // the values themselves
    FUSEX_HOST_INLINE void add_pairs(const simd::u32v& r, int k) {
      const simd::u32v ones = simd::u32v{} + 0x3f803f80u;  // two bf16 1.0s
      s[k & 1][(k >> 1) & 1] = simd::dot_bf16_pairs(s[k & 1][(k >> 1) & 1], r, ones);
      q[k & 1][(k >> 1) & 1] = simd::dot_bf16_pairs(q[k & 1][(k >> 1) & 1], r, r);
    }
#endif
  };
  // The open sums go first, so that no re-centring falls between a block's
  // shift and its sums.
  FUSEX_HOST_INLINE block begin_block() {
    flush<0>();
    flush<1>();
    block b;
    for (int j = 0; j < slots; ++j) {
      b.shift[j] = shift[j];
      b.fresh[j] = phase[j] == 0;
    }
    b.unshifted = unshifted_;
    return b;
  }
  // Every lane's shift zero from the start: the row pass may then add whole
  // blocks of bf16 pairs (block::add_pairs), which cannot be shifted. A row
  // whose mean is far from zero against its spread drifts (max_spread) and
  // runs again centred on its mean, as any other drifted row.
  void start_unshifted() {
    for (int j = 0; j < slots; ++j) {
      shift[j] = simd::splat(0.0f);
      phase[j] = 2;
    }
    unshifted_ = true;
  }
  // The row pass's protocol for bf16 pairs (row_block_sink): before the
  // row, and may a block take pairs now (not in a row centred on its mean)?
  void start_pairs() { start_unshifted(); }
  bool pairs_ready() const { return unshifted_; }
  FUSEX_HOST_INLINE void add_block(const block& b) {
    if (b.unshifted) {
      // no shift to keep per slot: both slots' chains into slot 0, one
      // widening per sum instead of one per slot
      flush_sums(0, (b.s[0][0] + b.s[0][1]) + (b.s[1][0] + b.s[1][1]),
                 (b.q[0][0] + b.q[0][1]) + (b.q[1][0] + b.q[1][1]), 2 * block_registers);
      return;
    }
    for (int j = 0; j < slots; ++j) {
      if (b.fresh[j]) {
        shift[j] = b.shift[j];
        phase[j] = 1;
      }
      flush_sums(j, b.s[j][0] + b.s[j][1], b.q[j][0] + b.q[j][1], block_registers);
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
  // Slot j's lane moments (mean, m2) by half register; ok keeps the lanes
  // whose mean is finite and whose shift stayed near it.
  template <class Mask>
  FUSEX_HOST_INLINE void lane_moments(int j, simd::f64v* m, simd::f64v* q, Mask& finite, Mask& near) {
    simd::f64v k0[2];
    widen(shift[j], k0[0], k0[1]);
    const double inv = 1.0 / static_cast<double>(n[j]);
    for (int h = 0; h < 2; ++h) {
      const simd::f64v s = dsum[j][h];
      const simd::f64v c = s * s * inv;
      m[h] = k0[h] + s * inv;
      q[h] = dsq[j][h] - c;
      finite &= m[h] - m[h] == 0.0;
      near &= c <= max_spread * q[h];
    }
  }
  // The lanes of a slot share one count, so the weights of the slot merge
  // and of the lane tree are scalars: one division per row, not one per
  // combine. Same order as combine_slots: slot 1 into slot 0 lane by lane,
  // then the lanes pairwise (l with l + 1, then l with l + 2, ...), each
  // level as whole registers: the even lanes take the odd ones, dealt apart.
  state finish() {
    static_assert(offsetof(float_moments_acc, rest) % 16 == 8 && offsetof(state, mean) == 8);
    flush<0>();
    flush<1>();
    if (n[0] == 0) return rest;  // slot 0 takes the first full register
    if (unshifted_) return finish_unshifted();
    simd::f64v m[2], q[2];
    using mask = decltype(simd::f64v{} == simd::f64v{});
    mask finite = ~mask{}, near = ~mask{};
    lane_moments(0, m, q, finite, near);
    long long cnt = n[0];
    if (n[1] > 0) {
      simd::f64v m1[2], q1[2];
      lane_moments(1, m1, q1, finite, near);
      const long long total = n[0] + n[1];
      const double fb = codegen::weight(static_cast<double>(n[1]), static_cast<double>(total));
      const double fab = static_cast<double>(n[0]) * fb;
      for (int h = 0; h < 2; ++h) chan(m[h], q[h], m1[h], q1[h], fb, fab);
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
    for (int l = 0; l < V / 2; ++l) {
      wild_ = wild_ || !finite[l];
      drifted_ = drifted_ || !near[l];
    }
    const state r = RD::combine(state{cnt, m[0][0], q[0][0]}, rest);
    // a spread past f32's range: the merged means carry an error of about
    // 2^-52 of it, which a mean near zero would not survive
    wild_ = wild_ || !(r.m2 <= static_cast<double>(FLT_MAX) * static_cast<double>(r.n));
    return r;
  }
  // Lanes that share the shift zero: their f64 sums add up as they are, in
  // a fixed order, with no merge of means per level of a lane tree (a
  // chain of Chan updates that was a seventh of LayerNorm's forward). The
  // f64 sums hold the f32 blocks' rounding exactly; m2 = Q - S^2 / N then
  // loses 2^-53 of Q, far below that rounding, for any row that did not
  // drift.
  state finish_unshifted() {
    simd::f64v m[2], q[2], s = {}, sq = {};
    using mask = decltype(simd::f64v{} == simd::f64v{});
    mask finite = ~mask{}, near = ~mask{};
    long long cnt = 0;
    for (int j = 0; j < slots; ++j) {
      if (n[j] == 0) continue;
      lane_moments(j, m, q, finite, near);
      s += dsum[j][0] + dsum[j][1];
      sq += dsq[j][0] + dsq[j][1];
      cnt += n[j] * V;
    }
    double ts = 0, tq = 0;
    for (int l = 0; l < V / 2; ++l) {
      ts += s[l];
      tq += sq[l];
      wild_ = wild_ || !finite[l];
      drifted_ = drifted_ || !near[l];
    }
    const double inv = 1.0 / static_cast<double>(cnt);
    const state r = RD::combine(state{cnt, ts * inv, tq - ts * ts * inv}, rest);
    wild_ = wild_ || !(r.m2 <= static_cast<double>(FLT_MAX) * static_cast<double>(r.n));
    return r;
  }

  // Is the moments' mean exact in kind? An infinity or NaN makes its lanes'
  // means infinite or NaN (inf - inf in a sum), and a variance past f32's
  // range makes the merges' rounding larger than f32's own (the sum of
  // -3e38 and 3e38 is 0, their merged mean only near it): the mean is then
  // summed again instead. Call after finish().
  bool mean_valid() const { return !wild_; }
  // Did every lane's shift stay near its mean (see max_spread)? Call after
  // finish().
  bool precise() const { return !drifted_; }
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
