#pragma once
// Scalar semantics of every elementwise prim, for the fused executors (host
// and device). They match the reference executor: 16-bit values compute in
// float and are rounded to their dtype after each prim, integers wrap,
// integer division truncates with x / 0 == 0, float-to-int conversion
// truncates and saturates with NaN to 0, maximum/minimum propagate NaN.

#include <cstdint>

#include "../capture/op.hpp"
#include "../core/dtype.hpp"
#include "../core/math.hpp"

namespace fusex::detail::codegen {

// Register type of a value of dtype D: float for f16/bf16/f32, double for
// f64, long long for integers and bool.
template <dtype D>
struct value_type {
  using type = long long;
};
template <>
struct value_type<dtype::f16> {
  using type = float;
};
template <>
struct value_type<dtype::bf16> {
  using type = float;
};
template <>
struct value_type<dtype::f32> {
  using type = float;
};
template <>
struct value_type<dtype::f64> {
  using type = double;
};
template <dtype D>
using vt = typename value_type<D>::type;

// Rounds a computed value to what dtype D holds.
template <dtype D, class T>
FUSEX_HD inline vt<D> to_dtype(T x) {
  if constexpr (D == dtype::f32) {
    return static_cast<float>(x);
  } else if constexpr (D == dtype::f64) {
    return static_cast<double>(x);
  } else if constexpr (D == dtype::bf16) {
    return bf16::to_float(bf16::from_float(static_cast<float>(x)));
  } else if constexpr (D == dtype::f16) {
    return f16::to_float(f16::from_float(static_cast<float>(x)));
  } else if constexpr (D == dtype::b8) {
    return x != T(0) ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    // truncate, saturate, NaN -> 0
    constexpr double lo = D == dtype::i32 ? -2147483648.0 : -9223372036854775808.0;
    constexpr double hi = D == dtype::i32 ? 2147483647.0 : 9223372036854775807.0;
    const double v = static_cast<double>(x);
    if (v != v) return 0;
    if (v <= lo) return D == dtype::i32 ? -2147483647LL - 1 : (-9223372036854775807LL - 1);
    if (v >= hi) return D == dtype::i32 ? 2147483647LL : 9223372036854775807LL;
    return static_cast<long long>(v);
  } else if constexpr (D == dtype::i32) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<unsigned long long>(x)));
  } else {
    return static_cast<long long>(x);
  }
}

// Storage <-> register conversions.
template <dtype D>
FUSEX_HD inline vt<D> load_value(const void* p, long long off) {
  const storage_t<D> s = static_cast<const storage_t<D>*>(p)[off];
  if constexpr (D == dtype::bf16) return bf16::to_float(s.bits);
  else if constexpr (D == dtype::f16) return f16::to_float(s.bits);
  else if constexpr (D == dtype::b8) return s ? 1 : 0;
  else return static_cast<vt<D>>(s);
}
// W consecutive values from p + off. On the device, with 4-, 8- or 16-byte
// runs that are aligned, one vector load instead of W scalar ones.
template <dtype D, int W>
FUSEX_HD inline void load_contiguous(const void* p, long long off, vt<D>* out) {
#if FUSEX_DEVICE_PASS
  using S = storage_t<D>;
  constexpr int bytes = static_cast<int>(sizeof(S)) * W;
  const S* q = static_cast<const S*>(p) + off;
  const auto addr = reinterpret_cast<unsigned long long>(q);
  if constexpr (bytes == 16 || bytes == 8 || bytes == 4) {
    if ((addr & (bytes - 1)) == 0) {
      using V = std::conditional_t<bytes == 16, uint4, std::conditional_t<bytes == 8, uint2, unsigned>>;
      const V v = __ldg(reinterpret_cast<const V*>(q));
      for (int l = 0; l < W; ++l) out[l] = load_value<D>(&v, l);
      return;
    }
  }
#endif
  for (int l = 0; l < W; ++l) out[l] = load_value<D>(p, off + l);
}

template <dtype D>
FUSEX_HD inline void store_value(void* p, long long off, vt<D> v) {
  storage_t<D>* q = static_cast<storage_t<D>*>(p) + off;
  if constexpr (D == dtype::bf16) *q = bf16::from_bits(bf16::from_float(v));
  else if constexpr (D == dtype::f16) *q = f16::from_bits(f16::from_float(v));
  else if constexpr (D == dtype::b8) *q = v != 0;
  else *q = static_cast<storage_t<D>>(v);
}

FUSEX_HD inline long long ipow(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  unsigned long long r = 1, b = static_cast<unsigned long long>(base);
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<long long>(r);
}

// T is float, double or long long.
template <op_kind K, class T>
FUSEX_HD inline T unary(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (K == op_kind::neg) return -x;
    else if constexpr (K == op_kind::abs) return math::abs(x);
    else if constexpr (K == op_kind::exp) return math::exp(x);
    else if constexpr (K == op_kind::exp2) return math::exp2(x);
    else if constexpr (K == op_kind::log) return math::log(x);
    else if constexpr (K == op_kind::log1p) return math::log1p(x);
    else if constexpr (K == op_kind::sqrt) return math::sqrt(x);
    else if constexpr (K == op_kind::rsqrt) return math::rsqrt(x);
    else if constexpr (K == op_kind::reciprocal) return T(1) / x;
    else if constexpr (K == op_kind::erf) return math::erf(x);
    else if constexpr (K == op_kind::tanh) return math::tanh(x);
    else if constexpr (K == op_kind::sin) return math::sin(x);
    else if constexpr (K == op_kind::cos) return math::cos(x);
    else return math::sigmoid(x);
  } else {
    const unsigned long long u = static_cast<unsigned long long>(x);
    if constexpr (K == op_kind::neg) return static_cast<long long>(0ull - u);
    else return x < 0 ? static_cast<long long>(0ull - u) : x;  // abs
  }
}

template <op_kind K, class T>
FUSEX_HD inline auto binary(T a, T b) {
  if constexpr (is_comparison(K)) {
    bool r;
    if constexpr (K == op_kind::eq) r = a == b;
    else if constexpr (K == op_kind::ne) r = a != b;
    else if constexpr (K == op_kind::lt) r = a < b;
    else if constexpr (K == op_kind::le) r = a <= b;
    else if constexpr (K == op_kind::gt) r = a > b;
    else r = a >= b;
    return static_cast<long long>(r);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (K == op_kind::add) return a + b;
    else if constexpr (K == op_kind::sub) return a - b;
    else if constexpr (K == op_kind::mul) return a * b;
    else if constexpr (K == op_kind::div) return a / b;
    else if constexpr (K == op_kind::pow) return math::pow(a, b);
    else if constexpr (K == op_kind::maximum) return math::maximum(a, b);
    else return math::minimum(a, b);
  } else {
    const unsigned long long ua = static_cast<unsigned long long>(a), ub = static_cast<unsigned long long>(b);
    if constexpr (K == op_kind::add) return static_cast<long long>(ua + ub);
    else if constexpr (K == op_kind::sub) return static_cast<long long>(ua - ub);
    else if constexpr (K == op_kind::mul) return static_cast<long long>(ua * ub);
    else if constexpr (K == op_kind::div) return b == 0 ? 0LL : (b == -1 ? static_cast<long long>(0ull - ua) : a / b);
    else if constexpr (K == op_kind::pow) return ipow(a, b);
    else if constexpr (K == op_kind::maximum) return a > b ? a : b;
    else return a < b ? a : b;
  }
}

}  // namespace fusex::detail::codegen
