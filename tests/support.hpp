#pragma once
// Test helpers: random data, per-dtype tolerances (torch.testing defaults),
// and element access by double value. Expected values in tests come from
// double-precision formulas written in the tests themselves.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fusex/fusex.hpp>

namespace fxt {

namespace fx = fusex;

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>) return static_cast<float>(v);
  else return static_cast<double>(v);
}
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

struct tolerance {
  double rtol, atol;
};
template <class T>
constexpr tolerance tol() {
  if constexpr (std::is_same_v<T, fx::bf16>) return {1.6e-2, 1e-5};
  else if constexpr (std::is_same_v<T, fx::f16>) return {1e-3, 1e-5};
  else if constexpr (std::is_same_v<T, float>) return {1.3e-6, 1e-5};
  else return {1e-7, 1e-7};
}

template <class T>
double max_finite() {
  if constexpr (std::is_same_v<T, fx::bf16>) return 3.3895313892515355e38;
  else if constexpr (std::is_same_v<T, fx::f16>) return 65504.0;
  else if constexpr (std::is_same_v<T, float>) return std::numeric_limits<float>::max();
  else return std::numeric_limits<double>::max();
}

// The expected value as the dtype can hold it: beyond the largest finite
// value (plus half an ulp) it is an infinity.
template <class T>
double saturate(double v) {
  if (!std::isfinite(v) || std::is_same_v<T, double>) return v;  // formulas are in double already
  const double m = max_finite<T>();
  double half_ulp = 0;
  if constexpr (std::is_same_v<T, fx::bf16>) half_ulp = std::ldexp(1.0, 127 - 8);
  else if constexpr (std::is_same_v<T, fx::f16>) half_ulp = 16.0;
  else if constexpr (std::is_same_v<T, float>) half_ulp = std::ldexp(1.0, 127 - 24);
  if (std::fabs(v) >= m + half_ulp) return v > 0 ? INFINITY : -INFINITY;
  return v;
}

inline bool close(double actual, double expected, tolerance t) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= t.atol + t.rtol * std::fabs(expected);
}

template <class T>
bool close_as(double actual, double expected) {
  return close(actual, saturate<T>(expected), tol<T>());
}

inline std::mt19937& rng() {
  static std::mt19937 g(20261129);
  return g;
}

template <class T>
std::vector<T> random_values(std::size_t n, double lo = -3, double hi = 3) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = from_double<T>(d(rng()));
  return v;
}

// A host tensor of uniform values in [lo, hi), rounded to T.
template <class T, int R>
fx::host_tensor<T, R> random_tensor(const fx::extents_array<R>& e, double lo = -2, double hi = 2) {
  fx::host_tensor<T, R> t(e);
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& v : t.values()) v = from_double<T>(d(rng()));
  return t;
}

// Values every elementwise test sees: signed zeros, ones, NaN, infinities,
// and moderately large magnitudes.
inline std::vector<double> special_values() {
  return {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 10.0, -10.0, NAN, INFINITY, -INFINITY};
}

template <class T, int R>
std::string describe(const fx::host_tensor<T, R>& t) {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < R; ++i) os << (i ? ", " : "") << t.extent(i);
  os << "]";
  return os.str();
}

}  // namespace fxt
