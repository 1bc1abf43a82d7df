#pragma once
// Reading and writing one element of a type-erased host buffer, for code that
// walks graphs by value (the reference executor, tests).

#include <cmath>
#include <cstdint>
#include <limits>

#include "../core/dtype.hpp"

namespace fusex::detail {

inline double load_double(const void* p, dtype dt, index_t off) {
  switch (dt) {
    case dtype::b8: return static_cast<const bool*>(p)[off] ? 1.0 : 0.0;
    case dtype::i32: return static_cast<const std::int32_t*>(p)[off];
    case dtype::i64: return static_cast<double>(static_cast<const std::int64_t*>(p)[off]);
    case dtype::f16: return static_cast<float>(static_cast<const f16*>(p)[off]);
    case dtype::bf16: return static_cast<float>(static_cast<const bf16*>(p)[off]);
    case dtype::f32: return static_cast<const float*>(p)[off];
    case dtype::f64: return static_cast<const double*>(p)[off];
  }
  return 0;
}

inline std::int64_t load_int(const void* p, dtype dt, index_t off) {
  switch (dt) {
    case dtype::b8: return static_cast<const bool*>(p)[off] ? 1 : 0;
    case dtype::i32: return static_cast<const std::int32_t*>(p)[off];
    case dtype::i64: return static_cast<const std::int64_t*>(p)[off];
    default: return static_cast<std::int64_t>(load_double(p, dt, off));
  }
}

// `v` must already be representable in dt (see round_to).
inline void store_double(void* p, dtype dt, index_t off, double v) {
  switch (dt) {
    case dtype::b8: static_cast<bool*>(p)[off] = v != 0; break;
    case dtype::i32: static_cast<std::int32_t*>(p)[off] = static_cast<std::int32_t>(v); break;
    case dtype::i64: static_cast<std::int64_t*>(p)[off] = static_cast<std::int64_t>(v); break;
    case dtype::f16: static_cast<f16*>(p)[off] = f16(static_cast<float>(v)); break;
    case dtype::bf16: static_cast<bf16*>(p)[off] = bf16(static_cast<float>(v)); break;
    case dtype::f32: static_cast<float*>(p)[off] = static_cast<float>(v); break;
    case dtype::f64: static_cast<double*>(p)[off] = v; break;
  }
}

inline void store_int(void* p, dtype dt, index_t off, std::int64_t v) {
  switch (dt) {
    case dtype::b8: static_cast<bool*>(p)[off] = v != 0; break;
    case dtype::i32: static_cast<std::int32_t*>(p)[off] = static_cast<std::int32_t>(v); break;
    case dtype::i64: static_cast<std::int64_t*>(p)[off] = v; break;
    default: store_double(p, dt, off, static_cast<double>(v)); break;
  }
}

// Correct rounding of a double to a narrower float format: round to odd into
// float (24 bits >= 2 + the target's precision), then round to nearest even.
inline float round_to_odd_float(double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(x) || static_cast<double>(f) == x) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(x))
    f = std::nextafter(f, 0.0f);  // the truncated value
  std::uint32_t u = bit_cast<std::uint32_t>(f);
  u |= 1u;
  return bit_cast<float>(u);
}

// The value of x rounded to dtype dt (the precision a materialised
// intermediate of that dtype has), kept as a double.
inline double round_to(dtype dt, double x) {
  switch (dt) {
    case dtype::f64: return x;
    case dtype::f32: return static_cast<double>(static_cast<float>(x));
    case dtype::bf16: return static_cast<float>(bf16(round_to_odd_float(x)));
    case dtype::f16: return static_cast<float>(f16(round_to_odd_float(x)));
    case dtype::b8: return x != 0 ? 1.0 : 0.0;
    default: return x;
  }
}

// Integer results wrap like two's-complement hardware.
inline std::int64_t wrap_to(dtype dt, std::int64_t v) {
  switch (dt) {
    case dtype::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
    case dtype::b8: return v != 0;
    default: return v;
  }
}

// Float to integer: truncation, saturating at the type's range, NaN to 0
// (what CUDA's cvt.rzi does; plain C++ would be undefined).
inline std::int64_t float_to_int(dtype dt, double x) {
  if (dt == dtype::b8) return x != 0;
  if (std::isnan(x)) return 0;
  const double lo = dt == dtype::i32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = dt == dtype::i32 ? 2147483647.0 : 9223372036854775807.0;
  if (x <= lo) return dt == dtype::i32 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min();
  if (x >= hi) return dt == dtype::i32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(x);
}

}  // namespace fusex::detail
