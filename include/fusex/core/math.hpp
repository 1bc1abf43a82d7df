#pragma once
// Float math for fused kernels. On the device these are CUDA's own functions.
// On the host they are branch-free polynomial versions (coefficients fitted
// by tools/fit_math.py, errors of 1-3 ulp), so that the loops over lanes in
// the host executor vectorise: a scalar erff loop is about 20x slower.
// Double-precision math uses the standard library on the host.

#include <cmath>
#include <cstdint>

#include "config.hpp"
#include "dtype.hpp"

namespace fusex::math {

#if FUSEX_DEVICE_PASS

FUSEX_HD inline float exp(float x) { return ::expf(x); }
FUSEX_HD inline float exp2(float x) { return ::exp2f(x); }
FUSEX_HD inline float log(float x) { return ::logf(x); }
FUSEX_HD inline float log1p(float x) { return ::log1pf(x); }
FUSEX_HD inline float erf(float x) { return ::erff(x); }
FUSEX_HD inline float tanh(float x) { return ::tanhf(x); }
FUSEX_HD inline float sin(float x) { return ::sinf(x); }
FUSEX_HD inline float cos(float x) { return ::cosf(x); }
FUSEX_HD inline float sqrt(float x) { return ::sqrtf(x); }
FUSEX_HD inline float rsqrt(float x) { return ::rsqrtf(x); }
FUSEX_HD inline float pow(float x, float y) { return ::powf(x, y); }
FUSEX_HD inline float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
FUSEX_HD inline float abs(float x) { return ::fabsf(x); }
FUSEX_HD inline float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
// NaN-propagating max and min in one instruction (PTX max.NaN, sm_80+).
FUSEX_HD inline float maximum(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
FUSEX_HD inline float minimum(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
FUSEX_HD inline double abs(double x) { return ::fabs(x); }
FUSEX_HD inline double maximum(double a, double b) { return (a != a || b != b) ? a + b : ::fmax(a, b); }
FUSEX_HD inline double minimum(double a, double b) { return (a != a || b != b) ? a + b : ::fmin(a, b); }
FUSEX_HD inline double exp(double x) { return ::exp(x); }
FUSEX_HD inline double exp2(double x) { return ::exp2(x); }
FUSEX_HD inline double log(double x) { return ::log(x); }
FUSEX_HD inline double log1p(double x) { return ::log1p(x); }
FUSEX_HD inline double erf(double x) { return ::erf(x); }
FUSEX_HD inline double tanh(double x) { return ::tanh(x); }
FUSEX_HD inline double sin(double x) { return ::sin(x); }
FUSEX_HD inline double cos(double x) { return ::cos(x); }
FUSEX_HD inline double sqrt(double x) { return ::sqrt(x); }
FUSEX_HD inline double rsqrt(double x) { return ::rsqrt(x); }
FUSEX_HD inline double pow(double x, double y) { return ::pow(x, y); }
FUSEX_HD inline double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }

#else

namespace detail {
inline float bits_to_float(std::uint32_t u) { return fusex::detail::bit_cast<float>(u); }
inline std::uint32_t float_to_bits(float f) { return fusex::detail::bit_cast<std::uint32_t>(f); }
// A select by bit masks. GCC will not if-convert `c ? a : b` when a or b is
// a floating computation (it could trap), which stops vectorisation; with
// both sides computed and blended, the loops vectorise at -O3.
inline float sel(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return bits_to_float((float_to_bits(a) & m) | (float_to_bits(b) & ~m));
}
inline float clamp(float x, float lo, float hi) { return sel(x < lo, lo, sel(x > hi, hi, x)); }
inline float horner(float, float c0) { return c0; }
template <class... C>
inline float horner(float t, float c0, C... rest) {
  return c0 + t * horner(t, rest...);
}
// Round to nearest integer (|v| < 2^22) without a library call.
inline float round_int(float v) {
  const float magic = 12582912.0f;  // 1.5 * 2^23
  return (v + magic) - magic;
}
// y * 2^n for integral n in [-252, 254], in two steps so neither factor
// overflows and results near the float range limits stay exact.
inline float scale2(float y, float n) {
  const std::int32_t k = static_cast<std::int32_t>(n);
  const std::int32_t k1 = k >> 1, k2 = k - k1;
  return (y * bits_to_float(static_cast<std::uint32_t>(k1 + 127) << 23)) *
         bits_to_float(static_cast<std::uint32_t>(k2 + 127) << 23);
}
// e^r for |r| <= ln2 / 2
inline float exp_core(float r) {
  const float p = horner(r, 5.000000000e-01f, 1.666666567e-01f, 4.166626930e-02f, 8.333429694e-03f,
                         1.394602936e-03f, 1.982649410e-04f);
  return 1.0f + r + r * r * p;
}
}  // namespace detail

using detail::sel;

inline float exp(float x) {
  const float xc = detail::clamp(x, -104.0f, 89.0f);
  const float n = detail::round_int(xc * 1.44269504088896341f);
  const float r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  const float y = detail::scale2(detail::exp_core(r), n);
  return sel(x != x, x, y);
}

inline float exp2(float x) {
  const float xc = detail::clamp(x, -151.0f, 129.0f);
  const float n = detail::round_int(xc);
  const float y = detail::scale2(detail::exp_core((xc - n) * 0.693147180559945309f), n);
  return sel(x != x, x, y);
}

inline float log(float x) {
  // Subnormals are scaled into the normal range first.
  const bool sub = x < 1.17549435e-38f;
  const float xs = sel(sub, x * 8388608.0f, x);
  const std::uint32_t u = detail::float_to_bits(xs);
  float e = static_cast<float>(static_cast<std::int32_t>(u >> 23) - 127) - sel(sub, 23.0f, 0.0f);
  float m = detail::bits_to_float((u & 0x007fffffu) | 0x3f800000u);
  const bool big = m > 1.41421356f;
  m = sel(big, m * 0.5f, m);
  e = sel(big, e + 1.0f, e);
  const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const float lm = 2.0f * s + s * s2 * detail::horner(s2, 6.666666865e-01f, 4.000031948e-01f, 2.853813767e-01f,
                                                        2.356793135e-01f);
  float y = e * 0.693145751953125f + (lm + e * 1.428606765330187e-06f);
  y = sel(x == 0.0f, -INFINITY, y);
  y = sel(x < 0.0f, NAN, y);
  y = sel(x == INFINITY, INFINITY, y);
  return sel(x != x, x, y);
}

inline float log1p(float x) {
  const float u = 1.0f + x;
  const float d = u - 1.0f;
  // log(u) * x / (u - 1) corrects for the rounding of 1 + x.
  const float y = sel(d == 0.0f, x, log(u) * (x / sel(d == 0.0f, 1.0f, d)));
  return sel(u == INFINITY, INFINITY, y);
}

inline float erf(float x) {
  const float a = sel(x < 0, -x, x);
  const float x2 = x * x;
  const float small = x * detail::horner(x2, 1.128379226e+00f, -3.761262894e-01f, 1.128361225e-01f,
                                         -2.685480937e-02f, 5.190053489e-03f, -8.024353883e-04f,
                                         7.898209878e-05f);
  const float t = sel(a > 4.0f, 4.0f, a);
  const float r = detail::horner(t, 4.005004885e-04f, -1.130604506e+00f, 3.689111173e-01f, -1.109074205e-01f,
                                 2.699949779e-02f, -5.021044984e-03f, 6.733375485e-04f, -6.006879630e-05f,
                                 3.095204647e-06f, -6.582857992e-08f);
  float big = 1.0f - exp(r - t * t);
  big = sel(a >= 4.0f, 1.0f, big);
  big = sel(x < 0, -big, big);
  const float y = sel(a <= 1.0f, small, big);
  return sel(x != x, x, y);
}

inline float tanh(float x) {
  const float a = sel(x < 0, -x, x);
  const float small = x * detail::horner(x * x, 1.000000000e+00f, -3.333327472e-01f, 1.333136559e-01f,
                                         -5.373586342e-02f, 2.063030750e-02f, -5.697522312e-03f);
  const float e = exp(2.0f * sel(a > 9.0f, 9.0f, a));
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = sel(a > 9.0f, 1.0f, big);
  big = sel(x < 0, -big, big);
  const float y = sel(a <= 0.625f, small, big);
  return sel(x != x, x, y);
}

namespace detail {
// x = n * pi/2 + r with |r| <= pi/4, reduced in double (accurate to |x| ~ 2^30).
inline float reduce_half_pi(float x, std::int32_t& quadrant) {
  const double xd = x;
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  const double n = (xd * 0.63661977236758134 + magic) - magic;
  quadrant = static_cast<std::int32_t>(n);
  return static_cast<float>((xd - n * 1.5707963267341256) - n * 6.077100506506192e-11);
}
inline float sin_poly(float r) {
  const float r2 = r * r;
  return r + r * r2 * horner(r2, -1.666666716e-01f, 8.333329111e-03f, -1.983935363e-04f, 2.718451924e-06f);
}
inline float cos_poly(float r) {
  const float r2 = r * r;
  return 1.0f - 0.5f * r2 + r2 * r2 * horner(r2, 4.166666791e-02f, -1.388888340e-03f, 2.479946306e-05f, -2.720596513e-07f);
}
// sin (phase 0) or cos (phase 1) of x; accurate for |x| < 2^30, beyond
// which consecutive floats lie many periods apart.
inline float sin_cos(float x, std::int32_t phase) {
  std::int32_t q = 0;
  const float ax = sel(x < 0, -x, x);
  const float r = reduce_half_pi(sel(ax > 1.0e9f, 0.0f, x), q);
  const float s = sin_poly(r), c = cos_poly(r);
  const std::int32_t k = (q + phase) & 3;
  const float y = sel(k == 0, s, sel(k == 1, c, sel(k == 2, -s, -c)));
  const float inf_or_nan = x - x;  // NaN for NaN and infinities, else 0
  return sel(inf_or_nan != 0.0f || inf_or_nan != inf_or_nan, inf_or_nan, y);
}
}  // namespace detail

inline float sin(float x) { return detail::sin_cos(x, 0); }
inline float cos(float x) { return detail::sin_cos(x, 1); }

// 1/sqrt(x) by a bit-level estimate and three Newton steps (about 2 ulp);
// std::sqrt would not vectorise without -fno-math-errno.
inline float rsqrt(float x) {
  const bool sub = x < 1.17549435e-38f;
  const float xs = sel(sub, x * 16777216.0f, x);  // 2^24
  float y = detail::bits_to_float(0x5f375a86u - (detail::float_to_bits(xs) >> 1));
  for (int i = 0; i < 3; ++i) y = y * (1.5f - 0.5f * xs * y * y);
  y = sel(sub, y * 4096.0f, y);  // 2^12
  y = sel(x == 0.0f, detail::bits_to_float((detail::float_to_bits(x) & 0x80000000u) | 0x7f800000u), y);  // +-inf
  y = sel(x == INFINITY, 0.0f, y);
  y = sel(x < 0.0f, NAN, y);
  return sel(x != x, x, y);
}

inline float sqrt(float x) {
  const float y = x * rsqrt(x);
  return sel(x == 0.0f || x == INFINITY, x, y);
}

inline float pow(float x, float y) { return std::pow(x, y); }
inline float abs(float x) { return detail::bits_to_float(detail::float_to_bits(x) & 0x7fffffffu); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
// NaN-propagating maximum and minimum (a + b is NaN when either is).
inline float maximum(float a, float b) { return sel(a != a || b != b, a + b, sel(a > b, a, b)); }
inline float minimum(float a, float b) { return sel(a != a || b != b, a + b, sel(a < b, a, b)); }
inline double abs(double x) { return std::fabs(x); }
inline double maximum(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
inline double minimum(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }  // exp(-x) = inf gives 0

inline double exp(double x) { return std::exp(x); }
inline double exp2(double x) { return std::exp2(x); }
inline double log(double x) { return std::log(x); }
inline double log1p(double x) { return std::log1p(x); }
inline double erf(double x) { return std::erf(x); }
inline double tanh(double x) { return std::tanh(x); }
inline double sin(double x) { return std::sin(x); }
inline double cos(double x) { return std::cos(x); }
inline double sqrt(double x) { return std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double pow(double x, double y) { return std::pow(x, y); }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

#endif

}  // namespace fusex::math
