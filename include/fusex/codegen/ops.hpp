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
#include "storage.hpp"

namespace fusex::detail::codegen {

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

// Floats, and on the host a register of float lanes (simd::f32v).
template <class T>
inline constexpr bool float_like = std::is_floating_point_v<T>
#if FUSEX_HOST_SIMD
                                   || simd::is_f32v<T>
#endif
    ;

// T is float, double or long long (or float lanes).
template <op_kind K, class T>
FUSEX_HD inline T unary(T x) {
  if constexpr (float_like<T>) {
    if constexpr (K == op_kind::neg) return -x;
    else if constexpr (K == op_kind::abs) return math::abs(x);
    else if constexpr (K == op_kind::exp) return math::exp(x);
    else if constexpr (K == op_kind::exp2) return math::exp2(x);
    else if constexpr (K == op_kind::log) return math::log(x);
    else if constexpr (K == op_kind::log1p) return math::log1p(x);
    else if constexpr (K == op_kind::sqrt) return math::sqrt(x);
    else if constexpr (K == op_kind::rsqrt) return math::rsqrt(x);
    else if constexpr (K == op_kind::reciprocal) {
      if constexpr (std::is_floating_point_v<T>) return T(1) / x;
      else return 1.0f / x;
    }
    else if constexpr (K == op_kind::erf) return math::erf(x);
    else if constexpr (K == op_kind::tanh) return math::tanh(x);
    else if constexpr (K == op_kind::sin) return math::sin(x);
    else if constexpr (K == op_kind::cos) return math::cos(x);
    else if constexpr (K == op_kind::sigmoid) return math::sigmoid(x);
    else return math::dgelu(x);
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
  } else if constexpr (float_like<T>) {
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
