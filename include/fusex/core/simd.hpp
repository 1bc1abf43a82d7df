#pragma once
// Float lanes as one value, for the host executor's row engine.
//
// GCC and Clang vector types state a register of lanes directly (16 floats
// with AVX-512, 8 with AVX, 4 otherwise), so every op of a group is
// whole-register code. The float math in math.hpp is written once over
// float and f32v; the bf16 conversions and the clamps below are the
// few places where a specific instruction beats what the compiler makes
// of the generic expression (one x86 max or min per clamp instead of a
// compare and a blend; a pack instead of masks and shuffles).
//
// Only for GCC and Clang host compiles: nvcc's host pass keeps scalar lanes
// (its front end is not asked to parse vector conditionals).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FUSEX_NO_HOST_SIMD)
#define FUSEX_HOST_SIMD 1
#if defined(__SSE2__)
// GCC 12 warns of the undefined source operand inside its own AVX-512 and
// AVX2 intrinsics once they are inlined (its bug 105593, fixed in 13); the
// warnings point into the header, so they are silenced for its lines only.
#if defined(__clang__)
#include <immintrin.h>
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#endif
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

// A brace list of copies is one broadcast; a loop of lane stores into an
// uninitialised vector became a chain of inserts in the row loops.
template <std::size_t... I>
inline f32v splat_impl(float a, std::index_sequence<I...>) {
  return f32v{((void)I, a)...};
}
inline f32v splat(float a) { return splat_impl(a, std::make_index_sequence<width>{}); }
inline f32v as_vector(f32v v) { return v; }
inline f32v as_vector(float a) { return splat(a); }

// a > b ? a : b and a < b ? a : b, lane by lane: when the lanes are
// unordered (a NaN) the result is b, as x86's max and min give it.
inline f32v max_else_second(f32v a, f32v b) {
#if defined(__AVX512F__)
  return _mm512_max_ps(a, b);
#elif defined(__AVX__)
  return _mm256_max_ps(a, b);
#elif defined(__SSE__)
  return _mm_max_ps(a, b);
#else
  return a > b ? a : b;
#endif
}
inline f32v min_else_second(f32v a, f32v b) {
#if defined(__AVX512F__)
  return _mm512_min_ps(a, b);
#elif defined(__AVX__)
  return _mm256_min_ps(a, b);
#elif defined(__SSE__)
  return _mm_min_ps(a, b);
#else
  return a < b ? a : b;
#endif
}

// Each lane rounded to the nearest integer, ties to even (one instruction
// where there is one; otherwise an add and a subtract of 1.5 * 2^23, exact
// for |v| < 2^22, which is all math.hpp asks of it).
inline f32v round_even(f32v v) {
#if defined(__AVX512F__)
  return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif defined(__AVX__)
  return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif defined(__SSE4_1__)
  return _mm_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  // no FMA on such targets, so the add cannot absorb a product of v's
  const f32v magic = splat(12582912.0f);
  return (v + magic) - magic;
#endif
}

// The upper 16 bits of each lane (values below 2^32 >> 16, so a saturating
// pack is exact).
inline u16v upper_halves(u32v r) {
  const u32v h = r >> 16;
#if defined(__AVX512F__)
  return reinterpret_cast<u16v>(_mm512_cvtepi32_epi16(reinterpret_cast<__m512i>(h)));
#elif defined(__AVX2__)
  const __m256i p = _mm256_packus_epi32(reinterpret_cast<__m256i>(h), reinterpret_cast<__m256i>(h));
  return reinterpret_cast<u16v>(_mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08)));
#elif defined(__SSE4_1__) && !defined(__AVX__)
  const __m128i p = _mm_packus_epi32(reinterpret_cast<__m128i>(h), reinterpret_cast<__m128i>(h));
  u16v out;
  std::memcpy(&out, &p, sizeof out);
  return out;
#else
  return __builtin_convertvector(h, u16v);
#endif
}

// The lanes of a register of floats as two registers of doubles (GCC 12
// splits __builtin_convertvector of four floats into two-lane converts).
inline void widen(f32v v, f64v& lo, f64v& hi) {
#if defined(__AVX512F__)
  lo = reinterpret_cast<f64v>(_mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  hi = reinterpret_cast<f64v>(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
#elif defined(__AVX__)
  lo = reinterpret_cast<f64v>(_mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = reinterpret_cast<f64v>(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
#elif defined(__SSE2__)
  lo = reinterpret_cast<f64v>(_mm_cvtps_pd(v));
  hi = reinterpret_cast<f64v>(_mm_cvtps_pd(_mm_movehl_ps(v, v)));
#else
  for (int l = 0; l < width / 2; ++l) lo[l] = v[l], hi[l] = v[l + width / 2];
#endif
}

// Two registers of doubles as one of floats, each lane rounded to nearest
// (lo's lanes first): widen's inverse.
inline f32v narrow(f64v lo, f64v hi) {
#if defined(__AVX512F__)
  const __m256 a = _mm512_cvtpd_ps(reinterpret_cast<__m512d>(lo)), b = _mm512_cvtpd_ps(reinterpret_cast<__m512d>(hi));
  return reinterpret_cast<f32v>(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(a)), _mm256_castps_pd(b), 1));
#elif defined(__AVX__)
  const __m128 a = _mm256_cvtpd_ps(reinterpret_cast<__m256d>(lo)), b = _mm256_cvtpd_ps(reinterpret_cast<__m256d>(hi));
  return reinterpret_cast<f32v>(_mm256_insertf128_ps(_mm256_castps128_ps256(a), b, 1));
#elif defined(__SSE2__)
  return reinterpret_cast<f32v>(_mm_movelh_ps(_mm_cvtpd_ps(reinterpret_cast<__m128d>(lo)), _mm_cvtpd_ps(reinterpret_cast<__m128d>(hi))));
#else
  f32v v;
  for (int l = 0; l < width / 2; ++l) v[l] = static_cast<float>(lo[l]), v[l + width / 2] = static_cast<float>(hi[l]);
  return v;
#endif
}

// bf16 <-> f32: the upper half of an IEEE binary32, rounded to nearest
// even, NaN kept quiet with its sign (bf16::from_float, lane by lane).
#if defined(__AVX512BW__)
// word i of a register's lower half to the upper half of lane i (vpermw's
// index; the lower halves are zeroed by its mask)
alignas(64) inline constexpr std::uint16_t bf16_spread_index[32] = {
    0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15};
#endif
inline f32v bf16_bits_to_f32(u16v h) {
#if defined(__AVX512BW__)
  // one permute of words with zeroing, where a zero-extending move and a
  // shift took two vector operations (LayerNorm's forward converts three
  // bf16 operands a register)
  const __m512i idx = _mm512_load_si512(static_cast<const void*>(bf16_spread_index));
  return reinterpret_cast<f32v>(
      _mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, idx, _mm512_zextsi256_si512(reinterpret_cast<__m256i>(h))));
#else
  // one zero-extending move (GCC 12 splits the generic conversion in halves)
#if defined(__AVX512F__)
  const u32v u = reinterpret_cast<u32v>(_mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(h)));
#elif defined(__AVX2__)
  const u32v u = reinterpret_cast<u32v>(_mm256_cvtepu16_epi32(reinterpret_cast<__m128i>(h)));
#elif defined(__SSE4_1__) && !defined(__AVX__)
  __m128i w = _mm_setzero_si128();
  std::memcpy(&w, &h, sizeof h);
  const u32v u = reinterpret_cast<u32v>(_mm_cvtepu16_epi32(w));
#else
  const u32v u = __builtin_convertvector(h, u32v);
#endif
  return reinterpret_cast<f32v>(u << 16);
#endif
}
inline u16v f32_to_bf16_bits_generic(f32v f) {
  const u32v u = reinterpret_cast<u32v>(f);
  const u32v rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return upper_halves(f != f ? (u | 0x00400000u) : rounded);
}
// A register's bytes to dst past the caches (a non-temporal store; dst
// aligned to the register). Written where a launch's outputs would not stay
// in the last-level cache anyway: the line is not read before it is
// written (a third of a copy's memory traffic) and evicts nothing the
// launch still reads. Ordered before other threads read it by an sfence
// (stream_fence) at the end of the writing thread's share.
template <class T>
inline void stream_store(void* dst, const T& v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 64) {
    __m512i r;
    std::memcpy(&r, &v, sizeof r);
    _mm512_stream_si512(static_cast<__m512i*>(dst), r);
    return;
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(T) == 32) {
    __m256i r;
    std::memcpy(&r, &v, sizeof r);
    _mm256_stream_si256(static_cast<__m256i*>(dst), r);
    return;
  }
#endif
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 16) {
    __m128i r;
    std::memcpy(&r, &v, sizeof r);
    _mm_stream_si128(static_cast<__m128i*>(dst), r);
    return;
  }
#endif
  std::memcpy(dst, &v, sizeof v);
}
// n bytes from src to dst, the lines of dst that the range covers whole
// streamed, the partial ones at its ends copied as usual. src and dst are
// the same bytes (an output in place over its input: nothing moves) or
// apart.
inline void stream_copy(void* dst, const void* src, std::size_t n) {
  if (dst == src) return;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64;
  if (n < head + 64) {
    std::memcpy(d, s, n);
    return;
  }
  std::memcpy(d, s, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64)
    for (std::size_t k = 0; k < 64; k += sizeof(f32v)) {
      f32v v;
      std::memcpy(&v, s + i + k, sizeof v);
      stream_store(d + i + k, v);
    }
  std::memcpy(d + i, s + i, n - i);
}
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
// AVX-512 BF16 rounds the same way (nearest even, NaN quiet with its sign)
// in one instruction instead of seven, but reads subnormal inputs as zero:
// a register with a subnormal lane (rare) takes the generic expression.
#if defined(__AVX512BF16__) && defined(__AVX512F__)
inline bool any_subnormal(f32v f) { return _mm512_fpclass_ps_mask(reinterpret_cast<__m512>(f), 0x20) != 0; }
inline u16v f32_to_bf16_bits_normal(f32v f) {
  return reinterpret_cast<u16v>(_mm512_cvtneps_pbh(reinterpret_cast<__m512>(f)));
}
inline u16v f32_to_bf16_bits(f32v f) {
  if (any_subnormal(f)) [[unlikely]]
    return f32_to_bf16_bits_generic(f);
  return f32_to_bf16_bits_normal(f);
}
// K registers rounded and stored to dst, dst + width, ... (streamed past the
// caches when Stream; dst then on a 64-byte line). The pack instruction
// rounds two registers at once (one port-5 operation fewer per register
// than one by one, where the conversions bound LayerNorm's write pass) but
// flushes subnormal inputs to zero; a normal float never rounds to a zero
// bf16 (both have f32's exponent range), so only where an output lane is
// zero are the inputs tested: one 16-bit test per two registers, where a
// class test per register was a tenth of a short loop's time (GeLU's;
// vfpclassps is not cheap on Zen 4). Each pair is stored as it is rounded:
// an array of them went through the stack, and the wider loads that
// copied it out could not forward from the narrower stores.
template <int K, bool Stream = false>
inline void store_bf16_bits_n(const f32v* f, void* dst) {
  static_assert(K >= 1);
  constexpr int pairs = K / 2;
  __m512i h[pairs > 0 ? pairs : 1];
  __m256i last;
  const __m512i magnitude = _mm512_set1_epi16(0x7fff);
  __mmask32 zero = 0;
  for (int j = 0; j < pairs; ++j) {
    h[j] = reinterpret_cast<__m512i>(
        _mm512_cvtne2ps_pbh(reinterpret_cast<__m512>(f[2 * j + 1]), reinterpret_cast<__m512>(f[2 * j])));
    zero |= _mm512_testn_epi16_mask(h[j], magnitude);
  }
  if constexpr (K % 2 != 0) {
    last = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(reinterpret_cast<__m512>(f[K - 1])));
    zero |= _mm512_mask_testn_epi16_mask(0xffffu, _mm512_castsi256_si512(last), magnitude);
  }
  auto* d = static_cast<unsigned char*>(dst);
  if (zero != 0) [[unlikely]] {
    __mmask16 sub = 0;
    for (int j = 0; j < K; ++j) sub |= _mm512_fpclass_ps_mask(reinterpret_cast<__m512>(f[j]), 0x20);
    if (sub != 0) {
      for (int j = 0; j < K; ++j) {
        const u16v g = f32_to_bf16_bits_generic(f[j]);
        std::memcpy(d + j * sizeof g, &g, sizeof g);
      }
      return;
    }
  }
  for (int j = 0; j < pairs; ++j) {
    if constexpr (Stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(d + j * sizeof h[0]), h[j]);
    else std::memcpy(d + j * sizeof h[0], &h[j], sizeof h[j]);
  }
  if constexpr (K % 2 != 0) {
    if constexpr (Stream) _mm256_stream_si256(reinterpret_cast<__m256i*>(d + pairs * sizeof h[0]), last);
    else std::memcpy(d + pairs * sizeof h[0], &last, sizeof last);
  }
}
#else
inline u16v f32_to_bf16_bits(f32v f) { return f32_to_bf16_bits_generic(f); }
template <int K, bool Stream = false>
inline void store_bf16_bits_n(const f32v* f, void* dst) {
  auto* d = static_cast<unsigned char*>(dst);
  for (int j = 0; j < K; ++j) {
    const u16v h = f32_to_bf16_bits_generic(f[j]);
    if constexpr (Stream) stream_store(d + j * sizeof h, h);
    else std::memcpy(d + j * sizeof h, &h, sizeof h);
  }
}
#endif
// Dot products of bf16 pairs (AVX512_BF16's vdpbf16ps): a register of 2V
// bf16 values as V pairs, lane i of acc gaining the products of elements
// 2i and 2i + 1 of a and b. The products are exact in f32; each addition
// rounds to nearest even; subnormal inputs and sums count as zero. Where a
// row's moments only need their sums, this takes 2V bf16 values straight
// from memory in one instruction per sum, where widening them first took a
// permute per V.
#if defined(__AVX512BF16__) && defined(__AVX512F__)
inline constexpr bool has_bf16_pairs = true;
inline f32v dot_bf16_pairs(f32v acc, u32v a, u32v b) {
  return reinterpret_cast<f32v>(
      _mm512_dpbf16_ps(reinterpret_cast<__m512>(acc), reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b)));
}
#else
inline constexpr bool has_bf16_pairs = false;
#endif

// f32 values rounded to bf16 and held as f32 again: the lower half cleared.
inline f32v round_bf16(f32v f) {
#if defined(__AVX512BF16__) && defined(__AVX512F__)
  if (!any_subnormal(f)) [[likely]]
    return bf16_bits_to_f32(f32_to_bf16_bits_normal(f));
#endif
  const u32v u = reinterpret_cast<u32v>(f);
  const u32v rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return reinterpret_cast<f32v>(f != f ? ((u | 0x00400000u) & 0xffff0000u) : rounded);
}

}  // namespace fusex::simd

#endif
