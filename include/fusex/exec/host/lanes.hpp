#pragma once
// One register of lanes per value, for the host executor's row engine.
//
// A value of the float class (f32, and bf16/f16, which compute in f32) is a
// GCC/Clang vector of `V` floats, exactly one machine register: every op on
// it is whole-register code and nothing passes through memory. Doubles and
// integers (the cold classes: f64 groups, comparisons, indices) are plain
// arrays of V values, computed lane by lane; the compiler's SLP vectoriser
// takes what it can. Without vector extensions (nvcc's host pass) every
// class is an array.
//
// A register is evaluated in one way only: from V consecutive elements of
// every load (fast). Lanes at other strides, a segment's last partial
// register, and one-value instances first copy their loads' lanes into
// buffers (engine.hpp); stores of a partial or strided register (gather)
// write n lanes at their stride.

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../../codegen/ops.hpp"
#include "../../codegen/storage.hpp"
#include "../../core/simd.hpp"

namespace fusex::detail::host_engine {

using codegen::vt;
using idx_t = long long;

#if FUSEX_HOST_SIMD
inline constexpr int V = simd::width;
#else
inline constexpr int V = 4;
#endif

// Forced inlining where the build optimises: an unoptimised build (the
// property tests compile at -O0) would only pay compile time for it.
#if defined(__GNUC__) && !defined(__CUDACC__) && defined(__OPTIMIZE__)
#define FUSEX_HOST_INLINE inline __attribute__((always_inline))
#else
#define FUSEX_HOST_INLINE inline
#endif

// static_for whose body always inlines: the engine's binding and evaluation
// must become one straight-line body per row loop (flatten alone leaves some
// of these lambdas out of line in large groups).
#if defined(__GNUC__) && !defined(__CUDACC__) && defined(__OPTIMIZE__)
#define FUSEX_HOST_LAMBDA __attribute__((always_inline))
#else
#define FUSEX_HOST_LAMBDA
#endif
template <class F, int... K>
FUSEX_HOST_INLINE void unrolled_impl(F& f, std::integer_sequence<int, K...>) {
  (f(std::integral_constant<int, K>{}), ...);
}
template <int N, class F>
FUSEX_HOST_INLINE void unrolled(F&& f) {
  unrolled_impl(f, std::make_integer_sequence<int, N>{});
}

template <class T>
struct arr {
  T v[V];
  FUSEX_HOST_INLINE T& operator[](int l) { return v[l]; }
  FUSEX_HOST_INLINE const T& operator[](int l) const { return v[l]; }
};

template <class T>
struct lane_type {
  using type = arr<T>;
};
#if FUSEX_HOST_SIMD
template <>
struct lane_type<float> {
  using type = simd::f32v;
};
inline constexpr bool float_vectors = true;
#else
inline constexpr bool float_vectors = false;
#endif

// The lanes of a value held as T (float, double or long long) ...
template <class T>
using lanes = typename lane_type<T>::type;
// ... and of a value of dtype D.
template <dtype D>
using dlanes = lanes<vt<D>>;

template <class L>
inline constexpr bool is_float_vector = false;
#if FUSEX_HOST_SIMD
template <>
inline constexpr bool is_float_vector<simd::f32v> = true;
#endif

enum class mode { fast, gather };

template <class T>
FUSEX_HOST_INLINE lanes<T> splat(T x) {
#if FUSEX_HOST_SIMD
  if constexpr (std::is_same_v<T, float>) return simd::splat(x);
#endif
  lanes<T> r;
  for (int l = 0; l < V; ++l) r[l] = x;
  return r;
}

// r[l] = f(x[l]) lane by lane, for ops without a vector form.
template <class R, class F, class... A>
FUSEX_HOST_INLINE lanes<R> lanewise(F f, const A&... x) {
  lanes<R> r;
  for (int l = 0; l < V; ++l) r[l] = f(x[l]...);
  return r;
}

// ---- 16-bit rounding --------------------------------------------------------
// Float lanes rounded to what dtype D holds (16-bit floats: to nearest even),
// or converted to D's value (other dtypes), lane by lane.
template <dtype D>
FUSEX_HOST_INLINE dlanes<D> round_to(const dlanes<D>& v) {
  if constexpr (D == dtype::f32 || D == dtype::f64) {
    return v;
  } else if constexpr (D == dtype::bf16 && is_float_vector<dlanes<D>>) {
#if FUSEX_HOST_SIMD
    return simd::round_bf16(v);
#endif
  } else {
    return lanewise<vt<D>>([](vt<D> x) FUSEX_HOST_LAMBDA { return codegen::to_dtype<D>(x); }, v);
  }
}

// ---- loads ------------------------------------------------------------------
// V consecutive elements of dtype D from p (a gathered register's lanes were
// copied to a buffer first, so every load is a plain one).
template <dtype D, mode M>
FUSEX_HOST_INLINE dlanes<D> load(const storage_t<D>* p, idx_t, int) {
  static_assert(M == mode::fast, "fusex internal: loads are contiguous");
#if FUSEX_HOST_SIMD
  if constexpr (D == dtype::bf16) {
    simd::u16v h;
    std::memcpy(&h, p, sizeof h);
    return simd::bf16_bits_to_f32(h);
  } else if constexpr (D == dtype::f32) {
    simd::f32v v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
#endif
  dlanes<D> r;
  for (int l = 0; l < V; ++l) r[l] = codegen::load_value<D>(p, l);
  return r;
}

// V consecutive values held as T (a reduction's finished values).
template <class T, mode M>
FUSEX_HOST_INLINE lanes<T> load_held(const T* p, idx_t, int) {
  static_assert(M == mode::fast, "fusex internal: loads are contiguous");
  if constexpr (is_float_vector<lanes<T>>) {
    lanes<T> v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    lanes<T> r;
    for (int l = 0; l < V; ++l) r[l] = p[l];
    return r;
  }
}

// ---- stores -----------------------------------------------------------------
// The first n lanes (all V when fast) to p + l * stride, rounding 16-bit
// floats (a root held unrounded is rounded once, here).
template <dtype D, mode M>
FUSEX_HOST_INLINE void store(storage_t<D>* p, idx_t stride, int n, const dlanes<D>& v) {
  if constexpr (M == mode::fast) {
#if FUSEX_HOST_SIMD
    if constexpr (D == dtype::bf16) {
      const simd::u16v h = simd::f32_to_bf16_bits(v);
      std::memcpy(static_cast<void*>(p), &h, sizeof h);
      return;
    } else if constexpr (D == dtype::f32) {
      std::memcpy(p, &v, sizeof v);
      return;
    }
#endif
    for (int l = 0; l < V; ++l) codegen::store_value<D>(p, l, v[l]);
  } else {
    for (int l = 0; l < n; ++l) codegen::store_value<D>(p, static_cast<idx_t>(l) * stride, v[l]);
  }
}

// K whole registers to p, p + V, ...: rounded together (one subnormal
// test). Stream: past the caches, p on a 64-byte line (bf16 and f32; other
// dtypes store as usual).
template <dtype D, int K, bool Stream = false>
FUSEX_HOST_INLINE void store_block(storage_t<D>* p, const dlanes<D>* v) {
#if FUSEX_HOST_SIMD
  if constexpr (D == dtype::bf16) {
    simd::store_bf16_bits_n<K, Stream>(v, static_cast<void*>(p));
    return;
  } else if constexpr (D == dtype::f32 && Stream) {
    for (int j = 0; j < K; ++j) simd::stream_store(p + j * V, v[j]);
    return;
  }
#endif
  for (int j = 0; j < K; ++j) store<D, mode::fast>(p + j * V, 1, V, v[j]);
}
// What a streamed block starts on: a whole cache line, written whole.
inline constexpr std::uintptr_t stream_line = 64;

// ---- conversions ------------------------------------------------------------
// Lanes of dtype DU as values of dtype D (rounded to D), as the prims define
// a conversion: 16-bit results round to nearest even, integers wrap,
// float-to-int truncates and saturates.
template <dtype D, dtype DU>
FUSEX_HOST_INLINE dlanes<D> convert(const dlanes<DU>& x) {
  if constexpr (D == DU) {
    return x;
  } else if constexpr (std::is_same_v<vt<D>, float> && std::is_same_v<vt<DU>, float>) {
    return round_to<D>(x);  // f32 <-> 16-bit: the same float lanes, rounded
  } else {
    return lanewise<vt<D>>([](vt<DU> a) FUSEX_HOST_LAMBDA { return codegen::to_dtype<D>(a); }, x);
  }
}

}  // namespace fusex::detail::host_engine
