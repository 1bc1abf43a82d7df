#pragma once
// Float math for fused kernels. On the device these are CUDA's own functions.
// On the host they are branch-free polynomial versions (coefficients fitted
// by tools/fit_math.py, errors of 1-4 ulp; erf 2.3 or 7), so that the loops
// over lanes in the host executor vectorise: a scalar erff loop is about 20x slower.
// Double-precision math uses the standard library on the host.

#include <cmath>
#include <cstdint>

#include "config.hpp"
#include "dtype.hpp"
#include "simd.hpp"

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
// e^-|x| (no overflow), and e / (1 + e) for x < 0: as on the host
FUSEX_HD inline float sigmoid(float x) {
  const float e = ::expf(-::fabsf(x)), r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}
// d gelu / dx = Phi(x) + x phi(x), Phi from erff (normcdff costs 1.7x the
// instructions); x clamped in the pdf term so that +-inf give 1 and 0, not inf * 0
FUSEX_HD inline float dgelu(float x) {
  const float c = ::fminf(::fmaxf(x, -10.0f), 10.0f);
  return ::fmaf(0.5f, ::erff(x * 0.707106781f), 0.5f) + c * (::expf(-0.5f * c * c) * 0.398942280f);
}
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
FUSEX_HD inline double sigmoid(double x) {
  const double e = ::exp(-::fabs(x)), r = 1.0 / (1.0 + e);
  return x < 0.0 ? e * r : r;
}
FUSEX_HD inline double dgelu(double x) {
  const double c = ::fmin(::fmax(x, -40.0), 40.0);
  return ::normcdf(x) + c * (::exp(-0.5 * c * c) * 0.39894228040143267794);
}

#else

// One definition of each float function over F = float and, where the host
// has vector types, F = simd::f32v (a register of lanes): the helpers below are
// overloaded for both, and the lanes compute exactly what float does.
namespace detail {
inline float bits_to_float(std::uint32_t u) { return fusex::detail::bit_cast<float>(u); }
inline std::uint32_t float_to_bits(float f) { return fusex::detail::bit_cast<std::uint32_t>(f); }
inline std::int32_t to_i32(float f) { return static_cast<std::int32_t>(f); }
inline float to_f32(std::int32_t i) { return static_cast<float>(i); }
inline std::uint32_t as_u32(std::int32_t i) { return static_cast<std::uint32_t>(i); }
inline std::int32_t as_i32(std::uint32_t u) { return static_cast<std::int32_t>(u); }
template <class F>
inline F splat(float a) { return a; }
// A select by bit masks. GCC will not if-convert `c ? a : b` when a or b is
// a floating computation (it could trap), which stops vectorisation; with
// both sides computed and blended, the loops vectorise at -O3.
inline float sel(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return bits_to_float((float_to_bits(a) & m) | (float_to_bits(b) & ~m));
}
#if FUSEX_HOST_SIMD
using simd::f32v;
using simd::i32v;
using simd::u32v;
inline f32v bits_to_float(u32v u) { return reinterpret_cast<f32v>(u); }
inline u32v float_to_bits(f32v f) { return reinterpret_cast<u32v>(f); }
inline i32v to_i32(f32v f) { return __builtin_convertvector(f, i32v); }
inline f32v to_f32(i32v i) { return __builtin_convertvector(i, f32v); }
inline u32v as_u32(i32v i) { return reinterpret_cast<u32v>(i); }
inline i32v as_i32(u32v u) { return reinterpret_cast<i32v>(u); }
template <>
inline f32v splat<f32v>(float a) { return simd::splat(a); }
// c: a lane comparison (all ones or zero per lane)
template <class A, class B>
inline f32v sel(i32v c, A a, B b) { return c ? simd::as_vector(a) : simd::as_vector(b); }
#endif
template <class F>
inline F clamp(F x, float lo, float hi) { return sel(x < lo, lo, sel(x > hi, hi, x)); }
// min(x, hi), hi when x is NaN.
template <class F>
inline F below(F x, float hi) { return sel(x < hi, x, hi); }
// min(x, hi), x when x is NaN.
template <class F>
inline F cap(F x, float hi) { return sel(x > hi, hi, x); }
#if FUSEX_HOST_SIMD
// The same on lanes, one max and one min: both return their second operand,
// x, when it is NaN.
inline f32v clamp(f32v x, float lo, float hi) {
  return simd::min_else_second(simd::splat(hi), simd::max_else_second(simd::splat(lo), x));
}
inline f32v below(f32v x, float hi) { return simd::min_else_second(x, simd::splat(hi)); }
inline f32v cap(f32v x, float hi) { return simd::min_else_second(simd::splat(hi), x); }
#endif
template <class F>
inline F horner(F, float c0) { return splat<F>(c0); }
template <class F, class... C>
inline F horner(F t, float c0, C... rest) {
  return c0 + t * horner(t, rest...);
}
// Round to nearest, ties to even (the default rounding mode). The argument
// is rounded to float first on every path: an add of 1.5 * 2^23 and its
// subtraction would let the compiler fuse a product into the add (RNE of
// the exact product), which one instruction on lanes cannot match.
inline float round_int(float v) { return std::nearbyint(v); }
// y * 2^n for integral n in [-252, 254], in two steps so neither factor
// overflows; the second rounds once, to the correctly rounded product,
// subnormal or not.
template <class F>
inline F scale2(F y, F n) {
  const auto k = to_i32(n);
  const auto k1 = k >> 1, k2 = k - k1;
  return (y * bits_to_float(as_u32(k1 + 127) << 23)) * bits_to_float(as_u32(k2 + 127) << 23);
}
#if FUSEX_HOST_SIMD
inline f32v round_int(f32v v) { return simd::round_even(v); }
#if defined(__AVX512F__)
// scalef: one instruction for the two exponent constructions and
// multiplies above, correctly rounded as they are, so the same bits.
inline f32v scale2(f32v y, f32v n) { return _mm512_scalef_ps(y, n); }
#endif
#endif
// e^r for |r| <= ln2 / 2
template <class F>
inline F exp_core(F r) {
  const F p = horner(r, 5.000000000e-01f, 1.666666567e-01f, 4.166626930e-02f, 8.333429694e-03f,
                     1.394602936e-03f, 1.982649410e-04f);
  return 1.0f + r + r * r * p;
}

template <class F>
inline F exp(F x) {
  const F xc = clamp(x, -104.0f, 89.0f);
  const F n = round_int(xc * 1.44269504088896341f);
  const F r = (xc - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  const F y = scale2(exp_core(r), n);
  return sel(x != x, x, y);
}

template <class F>
inline F exp2(F x) {
  const F xc = clamp(x, -151.0f, 129.0f);
  const F n = round_int(xc);
  const F y = scale2(exp_core((xc - n) * 0.693147180559945309f), n);
  return sel(x != x, x, y);
}

template <class F>
inline F log(F x) {
  // Subnormals are scaled into the normal range first.
  const auto sub = x < 1.17549435e-38f;
  const F xs = sel(sub, x * 8388608.0f, x);
  const auto u = float_to_bits(xs);
  F e = to_f32(as_i32(u >> 23) - 127) - sel(sub, 23.0f, 0.0f);
  F m = bits_to_float((u & 0x007fffffu) | 0x3f800000u);
  const auto big = m > 1.41421356f;
  m = sel(big, m * 0.5f, m);
  e = sel(big, e + 1.0f, e);
  const F s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const F lm = 2.0f * s + s * s2 * horner(s2, 6.666666865e-01f, 4.000031948e-01f, 2.853813767e-01f, 2.356793135e-01f);
  F y = e * 0.693145751953125f + (lm + e * 1.428606765330187e-06f);
  y = sel(x == 0.0f, -INFINITY, y);
  y = sel(x < 0.0f, NAN, y);
  y = sel(x == INFINITY, INFINITY, y);
  return sel(x != x, x, y);
}

template <class F>
inline F log1p(F x) {
  const F u = 1.0f + x;
  const F d = u - 1.0f;
  // log(u) * x / (u - 1) corrects for the rounding of 1 + x.
  F y = sel(d == 0.0f, x, log(u) * (x / sel(d == 0.0f, 1.0f, d)));
  // Below -1 the product is NaN times NaN, whose sign depends on the
  // operand order the compiler picks (registers and scalars differed):
  // one NaN, as log gives it, and x's own NaN passed through.
  y = sel(u < 0.0f, NAN, y);
  y = sel(u == INFINITY, INFINITY, y);
  return sel(x != x, x, y);
}

// One rational x * P(x^2) / Q(x^2) with x^2 clamped to 3.92^2, beyond which
// erf rounds to +-1 (7 ulp at most): every lane computes the same
// expression, with no exp and no second branch. Past 3.92 the rational
// grows with x and the final clamp makes it +-1; a NaN x^2 becomes the
// bound, so x's own NaN is the only one left to propagate.
template <class F>
inline F erf_rational(F x) {
  const F s = below(x * x, 3.92f * 3.92f);
  const F p = horner(s, 1.128379107e+00f, 1.957369447e-01f, 5.001095682e-02f, 3.526763525e-03f, 1.379896712e-04f,
                     -1.951950480e-06f, 2.017874046e-08f);
  const F q = horner(s, 1.0f, 5.067995787e-01f, 1.132609472e-01f, 1.399390586e-02f, 9.147938690e-04f);
  return clamp(x * (p / q), -1.0f, 1.0f);  // NaN stays NaN through both clamps
}

// erf by table, where one instruction looks a coefficient up in two
// registers (AVX-512's two-source permute): |x| clamped to 3.92 falls in
// one of 32 intervals of width 1/8 centred on k/8, k = round(8|x|), and a
// degree-4 polynomial in t = |x| - k/8 (exact, |t| <= 1/16) gives erf there
// (2.26 ulp over all floats; interval 0 has c0 = 0, relative down to the
// subnormals; at the clamp it is 1, never above). Fourteen instructions against the
// rational's eighteen and its division. The sign goes back on last, so -0
// stays -0 and NaN stays NaN (abs and the clamp keep it, then every step).
// Coefficients: tools/fit_math.py, c_j[k] for interval k.
inline constexpr float erf_coef[5][32] = {
  {0.000000000e+00f, 1.403162032e-01f, 2.763263881e-01f, 4.041168988e-01f,
   5.204998851e-01f, 6.232408881e-01f, 7.111556530e-01f, 7.840750813e-01f,
   8.427007794e-01f, 8.883882165e-01f, 9.229001403e-01f, 9.481700659e-01f,
   9.661051631e-01f, 9.784437418e-01f, 9.866716862e-01f, 9.919900298e-01f,
   9.953222871e-01f, 9.973459840e-01f, 9.985373020e-01f, 9.992170334e-01f,
   9.995930195e-01f, 9.997946024e-01f, 9.998993874e-01f, 9.999521375e-01f,
   9.999778867e-01f, 9.999901056e-01f, 9.999957085e-01f, 9.999982119e-01f,
   9.999992847e-01f, 9.999997020e-01f, 9.999998808e-01f, 1.000000000e+00f},
  {1.128379107e+00f, 1.110884786e+00f, 1.060013771e+00f, 9.803525805e-01f,
   8.787825704e-01f, 7.634996772e-01f, 6.429313421e-01f, 5.247453451e-01f,
   4.151078165e-01f, 3.182742596e-01f, 2.365213484e-01f, 1.703599244e-01f,
   1.189303622e-01f, 8.047226816e-02f, 5.277496576e-02f, 3.354577348e-02f,
   2.066692337e-02f, 1.234076079e-02f, 7.142268121e-03f, 4.006437957e-03f,
   2.178255003e-03f, 1.147854957e-03f, 5.862640683e-04f, 2.902201086e-04f,
   1.392481936e-04f, 6.475592818e-05f, 2.918752580e-05f, 1.275095747e-05f,
   5.399033853e-06f, 2.215730774e-06f, 8.813441923e-07f, 3.398075989e-07f},
  {6.875869531e-06f, -1.388536245e-01f, -2.650006413e-01f, -3.676308393e-01f,
   -4.393905699e-01f, -4.771869481e-01f, -4.821983278e-01f, -4.591521323e-01f,
   -4.151078165e-01f, -3.580585718e-01f, -2.956517637e-01f, -2.342450023e-01f,
   -1.783956885e-01f, -1.307675987e-01f, -9.235635400e-02f, -6.289847940e-02f,
   -4.133397341e-02f, -2.622422017e-02f, -1.607018150e-02f, -9.515346028e-03f,
   -5.445675924e-03f, -3.013144247e-03f, -1.612241846e-03f, -8.343921509e-04f,
   -4.177500086e-04f, -2.023652778e-04f, -9.486106137e-05f, -4.303530659e-05f,
   -1.889702799e-05f, -8.032219739e-06f, -3.305131031e-06f, -1.315999953e-06f},
  {-3.766762912e-01f, -3.582225144e-01f, -3.087815940e-01f, -2.346547246e-01f,
   -1.464283466e-01f, -5.580544099e-02f, 2.652914822e-02f, 9.259573370e-02f,
   1.380316317e-01f, 1.621530801e-01f, 1.673054844e-01f, 1.577882469e-01f,
   1.386793405e-01f, 1.148301512e-01f, 9.018949419e-02f, 6.749695539e-02f,
   4.828680679e-02f, 3.309837729e-02f, 2.177657746e-02f, 1.377134211e-02f,
   8.379969746e-03f, 4.911034368e-03f, 2.773857443e-03f, 1.510911854e-03f,
   7.940718788e-04f, 4.028422118e-04f, 1.973452745e-04f, 9.338464588e-05f,
   4.269762212e-05f, 1.886768950e-05f, 8.059639185e-06f, 3.311763294e-06f},
  {1.408460550e-02f, 6.682274491e-02f, 1.260933429e-01f, 1.660234928e-01f,
   1.827150285e-01f, 1.762430072e-01f, 1.505973786e-01f, 1.124135479e-01f,
   6.928258389e-02f, 2.812226303e-02f, -5.990342703e-03f, -3.033852577e-02f,
   -4.446328059e-02f, -4.962049797e-02f, -4.804165289e-02f, -4.223253950e-02f,
   -3.444231674e-02f, -2.637353167e-02f, -1.910334639e-02f, -1.315454021e-02f,
   -8.641516790e-03f, -5.429656710e-03f, -3.269445850e-03f, -1.889556879e-03f,
   -1.049446408e-03f, -5.606689374e-04f, -2.883731795e-04f, -1.428904943e-04f,
   -6.825040327e-05f, -3.143938011e-05f, -1.397331380e-05f, -6.350433978e-06f},
};
// Tables of 32 intervals of width 2^-B centred on k 2^-B, k = round(2^B a):
// k sits in the low bits of 2^B a + 1.5 * 2^23 (2^B a is exact, so with or
// without contraction into one FMA), and the permute reads bits 0-4 only.
inline std::uint32_t table_interval(float m) { return float_to_bits(m) & 31u; }
inline float table_lookup(const float (&c)[32], float m) { return c[table_interval(m)]; }
// t = a - k 2^-B, exact
template <int B>
inline float table_offset(float a) { return a - round_int(a * float(1 << B)) * (1.0f / float(1 << B)); }
#if FUSEX_HOST_SIMD && defined(__AVX512F__)
inline f32v table_lookup(const float (&c)[32], f32v m) {
  return _mm512_permutex2var_ps(simd::load(c), _mm512_castps_si512(m), simd::load(c + 16));
}
// one instruction (reduce, AVX-512 DQ), or two
template <int B>
inline f32v table_offset(f32v a) {
#if defined(__AVX512DQ__)
  return _mm512_reduce_ps(a, (B << 4) | _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  return a - _mm512_roundscale_ps(a, (B << 4) | _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
}
#endif
template <class F>
inline F erf_by_table(F x) {
  const F ax = bits_to_float(float_to_bits(x) & 0x7fffffffu);
  const F a = cap(ax, 3.92f);
  const F m = a * 8.0f + 12582912.0f;
  const F t = table_offset<3>(a);
  F r = table_lookup(erf_coef[4], m);
  for (int j = 3; j >= 0; --j) r = table_lookup(erf_coef[j], m) + t * r;
  return bits_to_float(float_to_bits(r) | (float_to_bits(x) & 0x80000000u));
}

// The table where the permute exists; elsewhere (AVX2 would need four
// permutes and three blends per coefficient) the rational. Lanes and the
// scalar form of one build use the same one, so they agree bit for bit.
template <class F>
inline F erf(F x) {
#if FUSEX_HOST_SIMD && defined(__AVX512F__)
  return erf_by_table(x);
#else
  return erf_rational(x);
#endif
}

// d gelu / dx = Phi(x) + x phi(x), the GeLU backward's one transcendental,
// by table as erf is: its odd part o(a) = dgelu(a) - 1/2 for a = |x| clamped
// to 7.8, in 32 intervals of width 1/4 centred on k/4, a degree-5
// polynomial in t = a - k/4 per interval, and dgelu(x) = 1/2 + sign(x) o(a)
// (dgelu(-x) = 1 - dgelu(x)). Within 1.05 ulp, or 1.05 x 2^-24 where dgelu is below
// 1/2 (it crosses 0 at x = -0.75: the absolute error of 1/2 - o, as of
// Phi + x phi computed apart); +-inf give 1 and 0. Twenty instructions,
// where erf and exp apart took about forty. Coefficients: tools/fit_math.py.
inline constexpr float dgelu_coef[6][32] = {
  {0.000000000e+00f, 1.953733563e-01f, 3.674951196e-01f, 4.992257059e-01f,
   5.833154917e-01f, 6.226615906e-01f, 6.274691820e-01f, 6.109261513e-01f,
   5.852317810e-01f, 5.591897368e-01f, 5.376110673e-01f, 5.220275521e-01f,
   5.119456649e-01f, 5.060173869e-01f, 5.028217435e-01f, 5.012338161e-01f,
   5.005036592e-01f, 5.001921058e-01f, 5.000685453e-01f, 5.000228882e-01f,
   5.000071526e-01f, 5.000020862e-01f, 5.000005960e-01f, 5.000001192e-01f,
   5.000000596e-01f, 5.000000000e-01f, 5.000000000e-01f, 5.000000000e-01f,
   5.000000000e-01f, 5.000000000e-01f, 5.000000000e-01f, 5.000000000e-01f},
  {7.978845835e-01f, 7.491695285e-01f, 6.161143184e-01f, 4.328850806e-01f,
   2.419707328e-01f, 7.990898192e-02f, -3.237939626e-02f, -9.166964889e-02f,
   -1.079819351e-01f, -9.720268846e-02f, -7.449527830e-02f, -5.058294162e-02f,
   -3.102293797e-02f, -1.737372391e-02f, -8.944997564e-03f, -4.253185354e-03f,
   -1.873623114e-03f, -7.664806326e-04f, -2.917032980e-04f, -1.034192683e-04f,
   -3.419456334e-05f, -1.055341181e-05f, -3.042460776e-06f, -8.198163641e-07f,
   -2.065805376e-07f, -4.870036463e-08f, -1.074501643e-08f, -2.219496809e-09f,
   -4.293339573e-10f, -7.779459715e-11f, -1.320593288e-11f, 0.000000000e+00f},
  {7.921494216e-08f, -1.903111786e-01f, -3.300581574e-01f, -3.881823123e-01f,
   -3.629548848e-01f, -2.782548964e-01f, -1.699932814e-01f, -7.077593356e-02f,
   -1.069602604e-06f, 3.793841973e-02f, 4.929848015e-02f, 4.454460740e-02f,
   3.323921189e-02f, 2.163812332e-02f, 1.259945799e-02f, 6.652507465e-03f,
   3.211906878e-03f, 1.425941125e-03f, 5.843850668e-04f, 2.217179426e-04f,
   7.804619236e-05f, 2.553221748e-05f, 7.773181096e-06f, 2.204751809e-06f,
   5.831294061e-07f, 1.439275081e-07f, 3.317227026e-08f, 7.143270420e-09f,
   1.437877595e-09f, 2.707299385e-10f, 4.766553471e-11f, 0.000000000e+00f},
  {-2.659661770e-01f, -2.298432887e-01f, -1.356973648e-01f, -1.902104542e-02f,
   8.065429330e-02f, 1.368662715e-01f, 1.443573982e-01f, 1.158790216e-01f,
   7.198853791e-02f, 3.072782606e-02f, 2.008921467e-03f, -1.250942424e-02f,
   -1.625019312e-02f, -1.407799777e-02f, -9.935984388e-03f, -6.071556360e-03f,
   -3.301168559e-03f, -1.620971831e-03f, -7.254193188e-04f, -2.976785181e-04f,
   -1.124894115e-04f, -3.926930003e-05f, -1.269456880e-05f, -3.807374242e-06f,
   -1.061043349e-06f, -2.750908550e-07f, -6.642049755e-08f, -1.494780122e-08f,
   -3.138320048e-09f, -6.146285703e-10f, -1.123407756e-10f, 0.000000000e+00f},
  {9.131013940e-05f, 6.939520687e-02f, 1.117835566e-01f, 1.136839762e-01f,
   8.045227081e-02f, 3.102638200e-02f, -1.341566909e-02f, -3.942003846e-02f,
   -4.480985552e-02f, -3.581599891e-02f, -2.136297524e-02f, -8.393341675e-03f,
   -5.962344221e-05f, 3.637155052e-03f, 4.222181160e-03f, 3.361178795e-03f,
   2.189071849e-03f, 1.234490541e-03f, 6.188012194e-04f, 2.797516063e-04f,
   1.151044344e-04f, 4.336748316e-05f, 1.502731993e-05f, 4.804540822e-06f,
   1.420877197e-06f, 3.894507188e-07f, 9.908708876e-08f, 2.343289829e-08f,
   5.154640270e-09f, 1.052646748e-09f, 2.011121825e-10f, 0.000000000e+00f},
  {5.922171101e-02f, 4.819031805e-02f, 1.855365373e-02f, -1.428894885e-02f,
   -3.604550287e-02f, -4.006371647e-02f, -2.921545319e-02f, -1.213253289e-02f,
   2.623969922e-03f, 1.053395029e-02f, 1.165180467e-02f, 8.691119961e-03f,
   4.663683940e-03f, 1.470699557e-03f, -3.061337047e-04f, -9.210531134e-04f,
   -8.874937776e-04f, -6.269268924e-04f, -3.683116229e-04f, -1.884343365e-04f,
   -8.587758202e-05f, -3.532285700e-05f, -1.322291337e-05f, -4.531074865e-06f,
   -1.427170901e-06f, -4.145218782e-07f, -1.112620964e-07f, -2.767095175e-08f,
   -6.353318760e-09f, -1.374079850e-09f, -2.826802126e-10f, 0.000000000e+00f},
};
template <class F>
inline F dgelu_by_table(F x) {
  const F a = cap(bits_to_float(float_to_bits(x) & 0x7fffffffu), 7.8f);
  const F m = a * 4.0f + 12582912.0f;
  const F t = table_offset<2>(a);
  F r = table_lookup(dgelu_coef[5], m);
  for (int j = 4; j >= 0; --j) r = table_lookup(dgelu_coef[j], m) + t * r;
  return 0.5f + bits_to_float(float_to_bits(r) | (float_to_bits(x) & 0x80000000u));
}
// From erf and exp, where the table's permute is missing; x clamped in the
// pdf term so that +-inf give 1 and 0, not inf * 0 (1.8 ulp with erf by
// table, 3.1 with the rational).
template <class F>
inline F dgelu_formula(F x) {
  const F c = clamp(x, -10.0f, 10.0f);
  const F y = (0.5f + 0.5f * erf(x * 0.707106781f)) + c * (exp(c * c * -0.5f) * 0.398942280f);
  return sel(x != x, x, y);
}
template <class F>
inline F dgelu(F x) {
#if FUSEX_HOST_SIMD && defined(__AVX512F__)
  return dgelu_by_table(x);
#else
  return dgelu_formula(x);
#endif
}

template <class F>
inline F tanh(F x) {
  const F a = sel(x < 0.0f, -x, x);
  const F small = x * horner(x * x, 1.000000000e+00f, -3.333327472e-01f, 1.333136559e-01f, -5.373586342e-02f,
                             2.063030750e-02f, -5.697522312e-03f);
  const F e = exp(2.0f * sel(a > 9.0f, 9.0f, a));
  F big = 1.0f - 2.0f / (e + 1.0f);
  big = sel(a > 9.0f, 1.0f, big);
  big = sel(x < 0.0f, -big, big);
  const F y = sel(a <= 0.625f, small, big);
  return sel(x != x, x, y);
}

// x = n * pi/2 + r with |r| <= pi/4, in double, with pi/2 in three parts:
// the first two have 22 significant bits, so n * c1 and n * c2 are exact
// for |n| < 2^31 (|x| < 2^31), and r keeps double accuracy there.
inline float reduce_half_pi(float x, std::int32_t& quadrant) {
  const double xd = x;
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  const double n = (xd * 0.63661977236758134 + magic) - magic;
  quadrant = static_cast<std::int32_t>(n);
  return static_cast<float>(((xd - n * 1.5707964897155762) - n * -1.6292068494294654e-07) - n * 5.390302858158119e-15);
}
inline float sin_poly(float r) {
  const float r2 = r * r;
  return r + r * r2 * horner(r2, -1.666666716e-01f, 8.333329111e-03f, -1.983935363e-04f, 2.718451924e-06f);
}
inline float cos_poly(float r) {
  const float r2 = r * r;
  return 1.0f - 0.5f * r2 + r2 * r2 * horner(r2, 4.166666791e-02f, -1.388888340e-03f, 2.479946306e-05f, -2.720596513e-07f);
}
// sin (phase 0) or cos (phase 1) of x. Beyond |x| = 2^31, where consecutive
// floats lie hundreds of periods apart, the double-precision library
// reduces (a rare, slow branch, not an approximation).
inline float sin_cos(float x, std::int32_t phase) {
  std::int32_t q = 0;
  const float ax = sel(x < 0, -x, x);
  if (ax >= 2147483648.0f && ax <= 3.40282347e38f)
    return static_cast<float>(phase == 0 ? std::sin(static_cast<double>(x)) : std::cos(static_cast<double>(x)));
  const float r = reduce_half_pi(sel(ax >= 2147483648.0f, 0.0f, x), q);
  const float s = sin_poly(r), c = cos_poly(r);
  const std::int32_t k = (q + phase) & 3;
  const float y = sel(k == 0, s, sel(k == 1, c, sel(k == 2, -s, -c)));
  const float inf_or_nan = x - x;  // NaN for NaN and infinities, else 0
  return sel(inf_or_nan != 0.0f || inf_or_nan != inf_or_nan, inf_or_nan, y);
}

// 1/sqrt(x) by a bit-level estimate and three Newton steps (about 2 ulp);
// std::sqrt would not vectorise without -fno-math-errno.
template <class F>
inline F rsqrt(F x) {
  const auto sub = x < 1.17549435e-38f;
  const F xs = sel(sub, x * 16777216.0f, x);  // 2^24
  F y = bits_to_float(0x5f375a86u - (float_to_bits(xs) >> 1));
  for (int i = 0; i < 3; ++i) y = y * (1.5f - 0.5f * xs * y * y);
  y = sel(sub, y * 4096.0f, y);                                                         // 2^12
  y = sel(x == 0.0f, bits_to_float((float_to_bits(x) & 0x80000000u) | 0x7f800000u), y);  // +-inf
  y = sel(x == INFINITY, 0.0f, y);
  y = sel(x < 0.0f, NAN, y);
  return sel(x != x, x, y);
}

template <class F>
inline F sqrt(F x) {
  const F y = x * rsqrt(x);
  return sel((x == 0.0f) | (x == INFINITY), x, y);
}

template <class F>
inline F abs(F x) { return bits_to_float(float_to_bits(x) & 0x7fffffffu); }
// NaN-propagating maximum and minimum (a + b is NaN when either is).
template <class F>
inline F maximum(F a, F b) { return sel((a != a) | (b != b), a + b, sel(a > b, a, b)); }
template <class F>
inline F minimum(F a, F b) { return sel((a != a) | (b != b), a + b, sel(a < b, a, b)); }
#if FUSEX_HOST_SIMD
// x86 max(b, a) is a NaN when a is; a NaN b is kept by the select.
inline f32v maximum(f32v a, f32v b) { return sel(b != b, b, simd::max_else_second(b, a)); }
inline f32v minimum(f32v a, f32v b) { return sel(b != b, b, simd::min_else_second(b, a)); }
#endif
template <class F>
inline F sigmoid(F x) {
  // e^-|x| cannot overflow, and for x < 0, e / (1 + e) keeps results down to
  // the subnormals accurate (1 / (1 + e^-x) would round them to 0 below -88)
  const F e = exp(-abs(x));
  const F r = 1.0f / (1.0f + e);
  return sel(x < 0.0f, e * r, r);
}
}  // namespace detail

using detail::sel;

inline float exp(float x) { return detail::exp(x); }
inline float exp2(float x) { return detail::exp2(x); }
inline float log(float x) { return detail::log(x); }
inline float log1p(float x) { return detail::log1p(x); }
inline float erf(float x) { return detail::erf(x); }
inline float tanh(float x) { return detail::tanh(x); }
inline float sin(float x) { return detail::sin_cos(x, 0); }
inline float cos(float x) { return detail::sin_cos(x, 1); }
inline float rsqrt(float x) { return detail::rsqrt(x); }
inline float sqrt(float x) { return detail::sqrt(x); }
inline float pow(float x, float y) { return std::pow(x, y); }
inline float abs(float x) { return detail::abs(x); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline float maximum(float a, float b) { return detail::maximum(a, b); }
inline float minimum(float a, float b) { return detail::minimum(a, b); }
inline float sigmoid(float x) { return detail::sigmoid(x); }
inline float dgelu(float x) { return detail::dgelu(x); }

#if FUSEX_HOST_SIMD
// The same functions on a register of lanes.
using simd::f32v;
inline f32v exp(f32v x) { return detail::exp(x); }
inline f32v exp2(f32v x) { return detail::exp2(x); }
inline f32v log(f32v x) { return detail::log(x); }
inline f32v log1p(f32v x) { return detail::log1p(x); }
inline f32v erf(f32v x) { return detail::erf(x); }
inline f32v tanh(f32v x) { return detail::tanh(x); }
inline f32v rsqrt(f32v x) { return detail::rsqrt(x); }
inline f32v sqrt(f32v x) { return detail::sqrt(x); }
inline f32v abs(f32v x) { return detail::abs(x); }
inline f32v maximum(f32v a, f32v b) { return detail::maximum(a, b); }
inline f32v minimum(f32v a, f32v b) { return detail::minimum(a, b); }
inline f32v sigmoid(f32v x) { return detail::sigmoid(x); }
inline f32v dgelu(f32v x) { return detail::dgelu(x); }
// Lane by lane: sin and cos reduce in double, pow is the library's.
inline f32v sin(f32v x) {
  for (int l = 0; l < simd::width; ++l) x[l] = sin(x[l]);
  return x;
}
inline f32v cos(f32v x) {
  for (int l = 0; l < simd::width; ++l) x[l] = cos(x[l]);
  return x;
}
inline f32v pow(f32v x, f32v y) {
  for (int l = 0; l < simd::width; ++l) x[l] = pow(x[l], y[l]);
  return x;
}
inline f32v fma(f32v a, f32v b, f32v c) {
  for (int l = 0; l < simd::width; ++l) a[l] = fma(a[l], b[l], c[l]);
  return a;
}
#endif

inline double abs(double x) { return std::fabs(x); }
inline double maximum(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
inline double minimum(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
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
inline double sigmoid(double x) {
  const double e = std::exp(-std::fabs(x)), r = 1.0 / (1.0 + e);
  return x < 0.0 ? e * r : r;
}
// Phi(x) as erfc(-x / sqrt 2) / 2, accurate in the left tail
inline double dgelu(double x) {
  const double c = x < -40.0 ? -40.0 : x > 40.0 ? 40.0 : x;
  return 0.5 * std::erfc(-x * 0.70710678118654752440) + c * (std::exp(-0.5 * c * c) * 0.39894228040143267794);
}

#endif

}  // namespace fusex::math
