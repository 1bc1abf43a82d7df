#pragma once
// Element types. A dtype is named by its storage type: float, double,
// std::int32_t, std::int64_t, bool, fusex::bf16 and fusex::f16. The 16-bit
// types are storage only: arithmetic on them happens in float.

#include <cstdint>
#include <type_traits>

#include "config.hpp"

namespace fusex {

enum class dtype : std::uint8_t { b8, i32, i64, f16, bf16, f32, f64 };

namespace detail {
template <class To, class From>
FUSEX_HD constexpr To bit_cast(const From& v) noexcept {
  return __builtin_bit_cast(To, v);
}
}  // namespace detail

// bfloat16 storage: the upper half of an IEEE binary32. Layout-compatible
// with __nv_bfloat16.
struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  FUSEX_HD constexpr explicit bf16(float f) noexcept : bits(from_float(f)) {}
  FUSEX_HD constexpr explicit operator float() const noexcept { return to_float(bits); }

  FUSEX_HD static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    bf16 r;
    r.bits = b;
    return r;
  }
  FUSEX_HD static constexpr float to_float(std::uint16_t b) noexcept {
    return detail::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
  }
  // Round to nearest even; NaN stays a quiet NaN with its sign.
  FUSEX_HD static constexpr std::uint16_t from_float(float f) noexcept {
    std::uint32_t u = detail::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
  }
};

// IEEE binary16 storage. Layout-compatible with __half.
struct f16 {
  std::uint16_t bits = 0;

  f16() = default;
  FUSEX_HD constexpr explicit f16(float f) noexcept : bits(from_float(f)) {}
  FUSEX_HD constexpr explicit operator float() const noexcept { return to_float(bits); }

  FUSEX_HD static constexpr f16 from_bits(std::uint16_t b) noexcept {
    f16 r;
    r.bits = b;
    return r;
  }
  FUSEX_HD static constexpr float to_float(std::uint16_t h) noexcept {
    constexpr std::uint32_t shifted_exp = 0x7c00u << 13;
    std::uint32_t o = (static_cast<std::uint32_t>(h) & 0x7fffu) << 13;
    const std::uint32_t exp = shifted_exp & o;
    o += (127u - 15u) << 23;
    if (exp == shifted_exp) {
      o += (128u - 16u) << 23;  // Inf / NaN
    } else if (exp == 0) {      // zero / subnormal: renormalise through a float subtraction
      o += 1u << 23;
      o = detail::bit_cast<std::uint32_t>(detail::bit_cast<float>(o) -
                                          detail::bit_cast<float>(113u << 23));
    }
    o |= (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
    return detail::bit_cast<float>(o);
  }
  // Round to nearest even, overflow to Inf, subnormals kept.
  FUSEX_HD static constexpr std::uint16_t from_float(float fl) noexcept {
    std::uint32_t f = detail::bit_cast<std::uint32_t>(fl);
    const std::uint32_t sign = (f >> 16) & 0x8000u;
    f &= 0x7fffffffu;
    std::uint32_t o;
    if (f >= ((127u + 16u) << 23)) {
      o = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (f < (113u << 23)) {
      // The float addition rounds the 10 kept mantissa bits to nearest even.
      constexpr std::uint32_t magic = 126u << 23;
      f = detail::bit_cast<std::uint32_t>(detail::bit_cast<float>(f) + detail::bit_cast<float>(magic));
      o = f - magic;
    } else {
      const std::uint32_t mant_odd = (f >> 13) & 1u;
      f += ((15u - 127u) << 23) + 0xfffu;
      f += mant_odd;
      o = f >> 13;
    }
    return static_cast<std::uint16_t>(o | sign);
  }
};

using f32 = float;
using f64 = double;
using i32 = std::int32_t;
using i64 = std::int64_t;
using b8 = bool;

template <class T>
inline constexpr bool is_element_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, bf16> ||
    std::is_same_v<T, f16>;

template <class T>
constexpr dtype dtype_of() {
  static_assert(is_element_type_v<T>,
                "fusex: unsupported element type (use float, double, int32_t, int64_t, bool, "
                "fusex::bf16 or fusex::f16)");
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return dtype::i64;
  else if constexpr (std::is_same_v<T, bool>) return dtype::b8;
  else if constexpr (std::is_same_v<T, bf16>) return dtype::bf16;
  else return dtype::f16;
}

template <class T>
inline constexpr dtype dtype_v = dtype_of<T>();

// Storage type of a dtype, for code generated from a dtype value.
template <dtype D> struct storage;
template <> struct storage<dtype::b8> { using type = bool; };
template <> struct storage<dtype::i32> { using type = std::int32_t; };
template <> struct storage<dtype::i64> { using type = std::int64_t; };
template <> struct storage<dtype::f16> { using type = f16; };
template <> struct storage<dtype::bf16> { using type = bf16; };
template <> struct storage<dtype::f32> { using type = float; };
template <> struct storage<dtype::f64> { using type = double; };
template <dtype D> using storage_t = typename storage<D>::type;

// Arithmetic type a value of dtype D is computed in.
template <dtype D> struct compute { using type = storage_t<D>; };
template <> struct compute<dtype::f16> { using type = float; };
template <> struct compute<dtype::bf16> { using type = float; };
template <dtype D> using compute_t = typename compute<D>::type;

FUSEX_HD constexpr bool is_floating(dtype d) {
  return d == dtype::f16 || d == dtype::bf16 || d == dtype::f32 || d == dtype::f64;
}
FUSEX_HD constexpr bool is_integral(dtype d) { return d == dtype::i32 || d == dtype::i64; }
FUSEX_HD constexpr bool is_16bit(dtype d) { return d == dtype::f16 || d == dtype::bf16; }

FUSEX_HD constexpr int size_of(dtype d) {
  switch (d) {
    case dtype::b8: return 1;
    case dtype::i32: return 4;
    case dtype::i64: return 8;
    case dtype::f16: return 2;
    case dtype::bf16: return 2;
    case dtype::f32: return 4;
    case dtype::f64: return 8;
  }
  return 0;
}

constexpr const char* name(dtype d) {
  switch (d) {
    case dtype::b8: return "bool";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
  }
  return "?";
}

// Type promotion for two tensor operands, as in PyTorch: bool < ints < floats,
// wider wins, and f16 with bf16 meet in f32 (neither holds the other).
FUSEX_HD constexpr dtype promote(dtype a, dtype b) {
  if (a == b) return a;
  auto rank = [](dtype d) {
    switch (d) {
      case dtype::b8: return 0;
      case dtype::i32: return 1;
      case dtype::i64: return 2;
      case dtype::f16: return 3;
      case dtype::bf16: return 3;
      case dtype::f32: return 4;
      case dtype::f64: return 5;
    }
    return 0;
  };
  if (is_16bit(a) && is_16bit(b)) return dtype::f32;
  return rank(a) >= rank(b) ? a : b;
}

// dtype whose compute type a value of `d` is carried in (f16/bf16 -> f32).
FUSEX_HD constexpr dtype compute_dtype(dtype d) { return is_16bit(d) ? dtype::f32 : d; }

}  // namespace fusex
