#pragma once
// One descriptor per reduction prim: its state, identity, how values enter
// it (one at a time or a run of W lanes), how two partial states combine
// (a before b: every executor merges partials in a fixed order, so results
// do not depend on how the work was cut), and the finished value. The host,
// CUDA and reference executors all reduce through it.
//
//   sum       state: the running sum (wrapping for integers)
//   amax      state: the running maximum; NaN wins
//   var_mean  state: count, mean and the sum of squared deviations (Chan's
//             pairwise update; a run of lanes enters as its own exact
//             two-pass moments, so there is no division per element); the
//             mean output alone is a plain sum

#include <cstdint>
#include <type_traits>

#include "../capture/op.hpp"
#include "storage.hpp"

namespace fusex::detail::codegen {

// Counts are 32-bit with f32 moments (the device's: no extent reaches
// 2^31 there), 64-bit with f64 ones.
template <class A>
struct moments {
  std::conditional_t<sizeof(A) == 4, int, long long> n = 0;
  A mean = 0, m2 = 0;
};

// b / n for the pairwise update's weight: the device's fast f32 division
// (2 ulp) where the weight only scales a correction term.
template <class A>
FUSEX_HD inline A weight(A b, A n) {
#if FUSEX_DEVICE_PASS
  if constexpr (sizeof(A) == 4) return __fdividef(b, n);
#endif
  return b / n;
}

// K over values of dtype DU held as V (vt<DU> in the fused executors; the
// reference executor holds every float as a double), accumulated in A.
template <op_kind K, dtype DU, class A, bool MeanOnly = false, class V = vt<DU>>
struct reducer {
  static_assert(K == op_kind::sum || K == op_kind::amax || K == op_kind::var_mean, "fusex internal: not a reduction");
  static constexpr op_kind kind = K;
  static constexpr bool fp = is_floating(DU);
  static constexpr bool as_sum = K == op_kind::sum || (K == op_kind::var_mean && MeanOnly);
  using value = V;
  using state = std::conditional_t<as_sum, std::conditional_t<fp, A, long long>,
                                   std::conditional_t<K == op_kind::amax, value, moments<A>>>;
  // combine(a, b) == combine(b, a) bit for bit (sums and maxima; not the
  // moments' pairwise update)
  static constexpr bool commutative = K != op_kind::var_mean || MeanOnly;

  FUSEX_HD static state identity() {
    if constexpr (as_sum) {
      return state(0);
    } else if constexpr (K == op_kind::amax) {
      if constexpr (fp) return static_cast<value>(-INFINITY);
      else if constexpr (DU == dtype::i32) return -2147483647LL - 1;
      else if constexpr (DU == dtype::b8) return 0;
      else return -9223372036854775807LL - 1;
    } else {
      return state{};
    }
  }
  FUSEX_HD static long long wrap_add(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
  }
  FUSEX_HD static value max_of(value a, value b) {
    if constexpr (fp) return math::maximum(a, b);
    else return b > a ? b : a;
  }
  // The state of one value.
  FUSEX_HD static state of(value x) {
    if constexpr (as_sum) {
      if constexpr (fp) return static_cast<A>(x);
      else return static_cast<long long>(x);
    } else if constexpr (K == op_kind::amax) {
      return x;
    } else {
      return moments<A>{1, static_cast<A>(x), A(0)};
    }
  }
  FUSEX_HD static void add(state& s, value x) {
    if constexpr (as_sum) {
      if constexpr (fp) s += static_cast<A>(x);
      else s = wrap_add(s, static_cast<long long>(x));
    } else if constexpr (K == op_kind::amax) {
      s = max_of(s, x);
    } else {
      s = combine(s, moments<A>{1, static_cast<A>(x), A(0)});
    }
  }
  // W values at once: sums and maxima lane by lane in a pairwise tree (the
  // order is fixed by W), moments as one exact two-pass chunk.
  template <int W>
  FUSEX_HD static void add_lanes(state& s, const value* x) {
    if constexpr (K == op_kind::var_mean && !MeanOnly) {
      A sum = 0;
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) sum += static_cast<A>(x[l]);
      const A mean = sum * (A(1) / A(W));
      A m2 = 0;
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) {
        const A d = static_cast<A>(x[l]) - mean;
        m2 += d * d;
      }
      s = combine(s, moments<A>{W, mean, m2});
    } else {
      state t[W];
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) t[l] = of(x[l]);
FUSEX_UNROLL
      for (int step = 1; step < W; step *= 2)
FUSEX_UNROLL
        for (int l = 0; l + step < W; l += 2 * step) t[l] = combine(t[l], t[l + step]);
      s = combine(s, t[0]);
    }
  }
  FUSEX_HD static state combine(const state& a, const state& b) {
    if constexpr (as_sum) {
      if constexpr (fp) return a + b;
      else return wrap_add(a, b);
    } else if constexpr (K == op_kind::amax) {
      return max_of(a, b);
    } else {
      if (b.n == 0) return a;
      if (a.n == 0) return b;
      const auto n = a.n + b.n;
      const A d = b.mean - a.mean;
      // An infinite or NaN mean on either side: the mean is their sum (one
      // sign of infinity, else NaN), the variance NaN (what the two-pass
      // formula gives; the update below would give NaN for inf + -inf * w).
      if (!(d - d == A(0))) return moments<A>{n, a.mean + b.mean, d - d};
      const A fb = weight(static_cast<A>(b.n), static_cast<A>(n));
      return moments<A>{n, a.mean + d * fb, a.m2 + b.m2 + d * d * static_cast<A>(a.n) * fb};
    }
  }
  // The reduction's value over `len` values, before rounding to its dtype.
  FUSEX_HD static auto value_of(const state& s, long long len, double correction) {
    if constexpr (K == op_kind::var_mean) {
      if constexpr (MeanOnly) return len > 0 ? s / static_cast<A>(len) : static_cast<A>(NAN);
      else return s.m2 / (static_cast<A>(len) - static_cast<A>(correction));
    } else {
      return s;
    }
  }
  // ... and in its dtype DM.
  template <dtype DM>
  FUSEX_HD static vt<DM> finish(const state& s, long long len, double correction) {
    return to_dtype<DM>(value_of(s, len, correction));
  }
};

}  // namespace fusex::detail::codegen
