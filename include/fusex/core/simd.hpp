#pragma once
// Float lanes as one value, for the host executor's inner loops.
//
// The host evaluates a group 16 lanes at a time. Left to the compiler's
// straight-line (SLP) vectoriser, those arrays of 16 vectorise only in
// part: 16-bit loads, roundings and stores, and any op next to them, come
// out as scalar code with shuffles through the stack. GCC and Clang vector
// types state the lanes directly, one machine register each (16 floats with
// AVX-512, 8 with AVX, 4 otherwise), so every op of the group is whole-
// register code; map() runs a function over an array of lanes register by
// register. The math in math.hpp is written once over float and f32v.
//
// Only for GCC and Clang host compiles: nvcc's host pass keeps the scalar
// lanes (its front end is not asked to parse vector conditionals).

#include <cstdint>
#include <cstring>

#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FUSEX_NO_HOST_SIMD)
#define FUSEX_HOST_SIMD 1
#else
#define FUSEX_HOST_SIMD 0
#endif

#if FUSEX_HOST_SIMD

namespace fusex::simd {

// Floats per register: the vectors never exceed the target's registers, so
// no function passes them in memory (and GCC has no ABI change to warn of).
#if defined(__AVX512F__)
inline constexpr int width = 16;
#elif defined(__AVX__)
inline constexpr int width = 8;
#else
inline constexpr int width = 4;
#endif
using f32v = float __attribute__((vector_size(4 * width)));
using i32v = std::int32_t __attribute__((vector_size(4 * width)));
using u32v = std::uint32_t __attribute__((vector_size(4 * width)));
using u16v = std::uint16_t __attribute__((vector_size(2 * width)));
// half a register of floats, widened to a register of doubles
using f32h = float __attribute__((vector_size(2 * width)));
using f64v = double __attribute__((vector_size(4 * width)));

template <class T>
inline constexpr bool is_f32v = false;
template <>
inline constexpr bool is_f32v<f32v> = true;

// Arrays to vectors and back: memcpy lets the compiler keep both in
// registers.
inline f32v load(const float* p) {
  f32v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f32v v) { std::memcpy(p, &v, sizeof v); }

inline f32v splat(float a) {
  f32v v;
  for (int l = 0; l < width; ++l) v[l] = a;
  return v;
}
inline f32v as_vector(f32v v) { return v; }
inline f32v as_vector(float a) { return splat(a); }

// out[l] = f(x[l]) (or f(x[l], y[l])) for W lanes, a register at a time.
template <int W, class F>
inline void map(float* out, const float* x, F f) {
  static_assert(W % width == 0, "fusex internal: lanes fill whole registers");
  for (int k = 0; k < W; k += width) store(out + k, f(load(x + k)));
}
template <int W, class F>
inline void map(float* out, const float* x, const float* y, F f) {
  static_assert(W % width == 0, "fusex internal: lanes fill whole registers");
  for (int k = 0; k < W; k += width) store(out + k, f(load(x + k), load(y + k)));
}

// bf16 <-> f32: the upper half of an IEEE binary32, rounded to nearest
// even, NaN kept quiet with its sign (bf16::from_float, lane by lane).
inline f32v bf16_bits_to_f32(u16v h) { return reinterpret_cast<f32v>(__builtin_convertvector(h, u32v) << 16); }
inline u16v f32_to_bf16_bits(f32v f) {
  const u32v u = reinterpret_cast<u32v>(f);
  const u32v rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const u32v nan = (u >> 16) | 0x0040u;
  const u32v r = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
  return __builtin_convertvector(r, u16v);
}
template <int W>
inline void load_bf16(const void* p, float* out) {
  for (int k = 0; k < W; k += width) {
    u16v h;
    std::memcpy(&h, static_cast<const std::uint16_t*>(p) + k, sizeof h);
    store(out + k, bf16_bits_to_f32(h));
  }
}
template <int W>
inline void store_bf16(void* p, const float* v) {
  for (int k = 0; k < W; k += width) {
    const u16v h = f32_to_bf16_bits(load(v + k));
    std::memcpy(static_cast<std::uint16_t*>(p) + k, &h, sizeof h);
  }
}
// f32 values rounded to bf16 and held as f32 again, in place.
template <int W>
inline void round_bf16(float* v) {
  map<W>(v, v, [](f32v f) { return bf16_bits_to_f32(f32_to_bf16_bits(f)); });
}

// Floats p[0, width) widened to doubles, in two half registers' worth.
inline void widen(const float* p, f64v& lo, f64v& hi) {
  f32h a, b;
  std::memcpy(&a, p, sizeof a);
  std::memcpy(&b, p + width / 2, sizeof b);
  lo = __builtin_convertvector(a, f64v);
  hi = __builtin_convertvector(b, f64v);
}

}  // namespace fusex::simd

#endif
