#pragma once
// Values in registers and in memory for the fused executors: the register
// type of each dtype, rounding to a dtype, and loads and stores of one
// element or of a run of W lanes. On the device, 16-bit conversions go
// through the hardware (cuda_bf16.h, cuda_fp16.h: F2FP packs two values per
// instruction) and contiguous aligned lanes move as 16-byte vectors.

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/simd.hpp"
#include "../capture/op.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Marks the start of a cold path (a gather, a lane-by-lane fallback). On the
// device it is a PMTRIG instruction, which does nothing outside a profiler
// session; the machine-code gate (tools/sass_gate.py) finds it and leaves
// the blocks it dominates out of the fast path it measures.
#if FUSEX_DEVICE_PASS
#define FUSEX_COLD() __prof_trigger(15)
#else
#define FUSEX_COLD() ((void)0)
#endif

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

// Rounds a computed value to what dtype D holds: 16-bit floats round to
// nearest even, integers wrap, float-to-int truncates and saturates with
// NaN to 0, bool is x != 0.
template <dtype D, class T>
FUSEX_HD inline vt<D> to_dtype(T x) {
  if constexpr (D == dtype::f32) {
    return static_cast<float>(x);
  } else if constexpr (D == dtype::f64) {
    return static_cast<double>(x);
  } else if constexpr (D == dtype::bf16) {
#if FUSEX_DEVICE_PASS
    return __bfloat162float(__float2bfloat16_rn(static_cast<float>(x)));
#else
    return bf16::to_float(bf16::from_float(static_cast<float>(x)));
#endif
  } else if constexpr (D == dtype::f16) {
#if FUSEX_DEVICE_PASS
    return __half2float(__float2half_rn(static_cast<float>(x)));
#else
    return f16::to_float(f16::from_float(static_cast<float>(x)));
#endif
  } else if constexpr (D == dtype::b8) {
    return x != T(0) ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<T>) {
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

// W computed values rounded to dtype D in place; on the device 16-bit
// values round in pairs (one F2FP per two lanes).
template <dtype D, int W>
FUSEX_HD inline void round_lanes(vt<D>* v) {
#if FUSEX_DEVICE_PASS
  if constexpr (D == dtype::bf16 && W % 2 == 0) {
FUSEX_UNROLL
    for (int l = 0; l < W; l += 2) {
      const float2 f = __bfloat1622float2(__floats2bfloat162_rn(v[l], v[l + 1]));
      v[l] = f.x;
      v[l + 1] = f.y;
    }
    return;
  } else if constexpr (D == dtype::f16 && W % 2 == 0) {
FUSEX_UNROLL
    for (int l = 0; l < W; l += 2) {
      const float2 f = __half22float2(__floats2half2_rn(v[l], v[l + 1]));
      v[l] = f.x;
      v[l + 1] = f.y;
    }
    return;
  }
#endif
  if constexpr (D != dtype::f32 && D != dtype::f64) {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) v[l] = to_dtype<D>(v[l]);
  }
}

// One element.
template <dtype D>
FUSEX_HD inline vt<D> load_value(const void* p, long long off) {
  const storage_t<D> s = static_cast<const storage_t<D>*>(p)[off];
  if constexpr (D == dtype::bf16) return bf16::to_float(s.bits);
  else if constexpr (D == dtype::f16) {
#if FUSEX_DEVICE_PASS
    return __half2float(__ushort_as_half(s.bits));
#else
    return f16::to_float(s.bits);
#endif
  } else if constexpr (D == dtype::b8) return s ? 1 : 0;
  else return static_cast<vt<D>>(s);
}

// `v` must hold a value of dtype D (to_dtype), except for 16-bit floats,
// which are rounded here.
template <dtype D>
FUSEX_HD inline void store_value(void* p, long long off, vt<D> v) {
  storage_t<D>* q = static_cast<storage_t<D>*>(p) + off;
#if FUSEX_DEVICE_PASS
  if constexpr (D == dtype::bf16) *reinterpret_cast<__nv_bfloat16*>(q) = __float2bfloat16_rn(v);
  else if constexpr (D == dtype::f16) *reinterpret_cast<__half*>(q) = __float2half_rn(v);
#else
  if constexpr (D == dtype::bf16) *q = bf16::from_bits(bf16::from_float(v));
  else if constexpr (D == dtype::f16) *q = f16::from_bits(f16::from_float(v));
#endif
  else if constexpr (D == dtype::b8) *q = v != 0;
  else *q = static_cast<storage_t<D>>(v);
}

// ---- lanes as 32-bit words ------------------------------------------------
// W lanes of dtype D occupy W * size words / 4 (bool: 4 lanes per word).
template <dtype D, int W>
inline constexpr int lane_words = (W * static_cast<int>(sizeof(storage_t<D>)) + 3) / 4;

template <dtype D, int W>
FUSEX_HD inline void unpack_words(const std::uint32_t* w, vt<D>* out) {
FUSEX_UNROLL
  for (int l = 0; l < W; ++l) {
    if constexpr (D == dtype::bf16) {
      const std::uint32_t x = w[l / 2];
      out[l] = bit_cast<float>(l % 2 == 0 ? x << 16 : x & 0xffff0000u);
    } else if constexpr (D == dtype::f16) {
      const std::uint16_t h = static_cast<std::uint16_t>(l % 2 == 0 ? w[l / 2] & 0xffffu : w[l / 2] >> 16);
#if FUSEX_DEVICE_PASS
      out[l] = __half2float(__ushort_as_half(h));
#else
      out[l] = f16::to_float(h);
#endif
    } else if constexpr (D == dtype::f32) {
      out[l] = bit_cast<float>(w[l]);
    } else if constexpr (D == dtype::i32) {
      out[l] = static_cast<std::int32_t>(w[l]);
    } else if constexpr (D == dtype::f64 || D == dtype::i64) {
      const std::uint64_t x = static_cast<std::uint64_t>(w[2 * l]) | static_cast<std::uint64_t>(w[2 * l + 1]) << 32;
      if constexpr (D == dtype::f64) out[l] = bit_cast<double>(x);
      else out[l] = static_cast<long long>(x);
    } else {  // b8
      out[l] = ((w[l / 4] >> (8 * (l % 4))) & 0xffu) != 0 ? 1 : 0;
    }
  }
}

template <dtype D, int W>
FUSEX_HD inline void pack_words(const vt<D>* v, std::uint32_t* w) {
  if constexpr (D == dtype::bf16 || D == dtype::f16) {
FUSEX_UNROLL
    for (int l = 0; l < W; l += 2) {
#if FUSEX_DEVICE_PASS
      if constexpr (D == dtype::bf16) {
        const __nv_bfloat162_raw h = __floats2bfloat162_rn(v[l], v[l + 1]);
        w[l / 2] = static_cast<std::uint32_t>(h.x) | static_cast<std::uint32_t>(h.y) << 16;
      } else {
        const __half2_raw h = __floats2half2_rn(v[l], v[l + 1]);
        w[l / 2] = static_cast<std::uint32_t>(h.x) | static_cast<std::uint32_t>(h.y) << 16;
      }
#else
      const auto round = [](float x) -> std::uint32_t {
        if constexpr (D == dtype::bf16) return bf16::from_float(x);
        else return f16::from_float(x);
      };
      w[l / 2] = round(v[l]) | (l + 1 < W ? round(v[l + 1]) << 16 : 0u);
#endif
    }
  } else if constexpr (D == dtype::f32) {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) w[l] = bit_cast<std::uint32_t>(v[l]);
  } else if constexpr (D == dtype::i32) {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) w[l] = static_cast<std::uint32_t>(v[l]);
  } else if constexpr (D == dtype::f64 || D == dtype::i64) {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) {
      std::uint64_t x;
      if constexpr (D == dtype::f64) x = bit_cast<std::uint64_t>(v[l]);
      else x = static_cast<std::uint64_t>(v[l]);
      w[2 * l] = static_cast<std::uint32_t>(x);
      w[2 * l + 1] = static_cast<std::uint32_t>(x >> 32);
    }
  } else {  // b8
FUSEX_UNROLL
    for (int k = 0; k < lane_words<D, W>; ++k) w[k] = 0;
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) w[l / 4] |= (v[l] != 0 ? 1u : 0u) << (8 * (l % 4));
  }
}

// Bytes of one vector access for W lanes of D: 16 at most, and a power of
// two the lanes fill exactly (0: no vector access, e.g. 3 lanes).
template <dtype D, int W>
FUSEX_HD constexpr int vector_bytes() {
  const int b = W * static_cast<int>(sizeof(storage_t<D>));
  if (b >= 16 && b % 16 == 0) return 16;
  if (b == 8 || b == 4) return b;
  return 0;
}

#if FUSEX_DEVICE_PASS
template <int VB>
__device__ inline void load_vector(const void* p, std::uint32_t* w) {
  if constexpr (VB == 16) {
    const uint4 v = __ldg(static_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (VB == 8) {
    const uint2 v = __ldg(static_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = __ldg(static_cast<const unsigned*>(p));
  }
}
template <int VB>
__device__ inline void store_vector(void* p, const std::uint32_t* w) {
  if constexpr (VB == 16) *static_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  else if constexpr (VB == 8) *static_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  else *static_cast<unsigned*>(p) = w[0];
}
// Shared memory: the same vectors, without the read-only path.
template <int VB>
__device__ inline void load_shared_vector(const void* p, std::uint32_t* w) {
  if constexpr (VB == 16) {
    const uint4 v = *static_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (VB == 8) {
    const uint2 v = *static_cast<const uint2*>(p);
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = *static_cast<const unsigned*>(p);
  }
}
#endif

// W lanes at p + off + l * step. On the device, unit-stride lanes at an
// aligned address load as vectors; any other layout is a (cold) gather.
template <dtype D, int W, class I, bool Shared = false>
FUSEX_HD inline void load_lanes(const void* p, I off, I step, vt<D>* out) {
#if FUSEX_DEVICE_PASS
  constexpr int VB = vector_bytes<D, W>();
  if constexpr (VB > 0) {
    using S = storage_t<D>;
    const S* q = static_cast<const S*>(p) + off;
    if (step == 1 && (reinterpret_cast<std::uintptr_t>(q) & (VB - 1)) == 0) {
      std::uint32_t w[lane_words<D, W>];
FUSEX_UNROLL
      for (int k = 0; k < lane_words<D, W> * 4 / VB; ++k) {
        if constexpr (Shared) load_shared_vector<VB>(reinterpret_cast<const unsigned char*>(q) + k * VB, w + k * VB / 4);
        else load_vector<VB>(reinterpret_cast<const unsigned char*>(q) + k * VB, w + k * VB / 4);
      }
      unpack_words<D, W>(w, out);
      return;
    }
  }
  FUSEX_COLD();
#endif
FUSEX_UNROLL
  for (int l = 0; l < W; ++l) out[l] = load_value<D>(p, static_cast<long long>(off) + static_cast<long long>(l) * step);
}

// W lanes to p + off + l * step, rounding 16-bit values; vectors as above.
template <dtype D, int W, class I>
FUSEX_HD inline void store_lanes(void* p, I off, I step, const vt<D>* v) {
#if FUSEX_DEVICE_PASS
  constexpr int VB = vector_bytes<D, W>();
  if constexpr (VB > 0) {
    using S = storage_t<D>;
    S* q = static_cast<S*>(p) + off;
    if (step == 1 && (reinterpret_cast<std::uintptr_t>(q) & (VB - 1)) == 0) {
      std::uint32_t w[lane_words<D, W>];
      pack_words<D, W>(v, w);
FUSEX_UNROLL
      for (int k = 0; k < lane_words<D, W> * 4 / VB; ++k)
        store_vector<VB>(reinterpret_cast<unsigned char*>(q) + k * VB, w + k * VB / 4);
      return;
    }
  }
  FUSEX_COLD();
#endif
FUSEX_UNROLL
  for (int l = 0; l < W; ++l) store_value<D>(p, static_cast<long long>(off) + static_cast<long long>(l) * step, v[l]);
}

// ---- representations ------------------------------------------------------
// An evaluation keeps W lanes of a dtype D in registers as rep_n<D, W>
// values of rep_t<D>. On the device, 16-bit floats stay packed, two per
// 32-bit word: loads and stores move the words as they are, and add, sub,
// mul, neg, abs, max, min and where compute on them as bf16x2 / half2 (one
// correctly rounded instruction per two lanes, no unpacking); other ops
// unpack, compute in f32 and pack again (F2FP). Elsewhere a lane is vt<D>.
template <dtype D>
inline constexpr bool packed16 = FUSEX_DEVICE_PASS && is_16bit(D);
template <dtype D>
using rep_t = std::conditional_t<packed16<D>, std::uint32_t, vt<D>>;
template <dtype D, int W>
inline constexpr int rep_n = packed16<D> ? (W + 1) / 2 : W;

// The 16 bits of v in dtype D (16-bit floats), at compile time for constants.
template <dtype D>
FUSEX_HD constexpr std::uint32_t bits16(float v) {
  if constexpr (D == dtype::bf16) return bf16::from_float(v);
  else return f16::from_float(v);
}

// Lanes as values (vt<D>) from their representation, and back (packing
// rounds 16-bit values; other dtypes must already hold values of D).
template <dtype D, int W>
FUSEX_HD inline void unpack_rep(const rep_t<D>* r, vt<D>* v) {
  if constexpr (packed16<D>) {
    if constexpr (W % 2 == 0) {
      unpack_words<D, W>(r, v);
    } else {
      vt<D> t[W + 1];
      unpack_words<D, W + 1>(r, t);
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) v[l] = t[l];
    }
  } else {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) v[l] = r[l];
  }
}
template <dtype D, int W>
FUSEX_HD inline void pack_rep(const vt<D>* v, rep_t<D>* r) {
  if constexpr (packed16<D>) {
    if constexpr (W % 2 == 0) {
      pack_words<D, W>(v, r);
    } else {
      vt<D> t[W + 1];
FUSEX_UNROLL
      for (int l = 0; l < W; ++l) t[l] = v[l];
      t[W] = 0;
      pack_words<D, W + 1>(t, r);
    }
  } else {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) r[l] = v[l];
  }
}
// All W lanes equal to v (a value of D, or a 16-bit value to round).
template <dtype D, int W>
FUSEX_HD inline void splat_rep(vt<D> v, rep_t<D>* r) {
  if constexpr (packed16<D>) {
    vt<D> t[2] = {v, v};
    std::uint32_t w[1];
    pack_words<D, 2>(t, w);
FUSEX_UNROLL
    for (int k = 0; k < rep_n<D, W>; ++k) r[k] = w[0];
  } else {
FUSEX_UNROLL
    for (int l = 0; l < W; ++l) r[l] = v;
  }
}
// A compile-time constant, folded (no rounding instruction).
template <dtype D, int W>
FUSEX_HD inline void splat_constant(double v, rep_t<D>* r) {
  if constexpr (packed16<D>) {
    constexpr int n = rep_n<D, W>;
    const std::uint32_t h = bits16<D>(static_cast<float>(v));
    const std::uint32_t w = h | h << 16;
FUSEX_UNROLL
    for (int k = 0; k < n; ++k) r[k] = w;
  } else {
    splat_rep<D, W>(to_dtype<D>(v), r);
  }
}
// Lane l (a compile-time index) as a value.
template <dtype D>
FUSEX_HD inline vt<D> rep_value(const rep_t<D>* r, int l) {
  if constexpr (packed16<D>) {
    vt<D> t[2];
    unpack_words<D, 2>(r + l / 2, t);
    return t[l % 2];
  } else {
    return r[l];
  }
}

#if FUSEX_DEVICE_PASS
// bf16x2 / half2 arithmetic on packed words.
template <dtype D>
struct packed_ops {
  using V = std::conditional_t<D == dtype::bf16, __nv_bfloat162, __half2>;
  using raw = std::conditional_t<D == dtype::bf16, __nv_bfloat162_raw, __half2_raw>;
  __device__ static V from(std::uint32_t w) {
    raw r;
    r.x = static_cast<unsigned short>(w & 0xffffu);
    r.y = static_cast<unsigned short>(w >> 16);
    return V(r);
  }
  __device__ static std::uint32_t to(V v) {
    const raw r = v;
    return static_cast<std::uint32_t>(r.x) | static_cast<std::uint32_t>(r.y) << 16;
  }
};
#endif

// Can op K compute on packed 16-bit lanes (operands and result of dtype D)?
FUSEX_HD constexpr bool packed_op(op_kind k) {
  return k == op_kind::add || k == op_kind::sub || k == op_kind::mul || k == op_kind::neg || k == op_kind::abs ||
         k == op_kind::maximum || k == op_kind::minimum;
}

// Packed words of lanes: a = op(a, b) for the binary ops, a = op(a) for neg, abs.
template <op_kind K, dtype D>
FUSEX_HD inline std::uint32_t packed_apply(std::uint32_t a, std::uint32_t b) {
#if FUSEX_DEVICE_PASS
  using O = packed_ops<D>;
  if constexpr (K == op_kind::neg) return a ^ 0x80008000u;
  else if constexpr (K == op_kind::abs) return a & 0x7fff7fffu;
  else if constexpr (K == op_kind::add) return O::to(__hadd2_rn(O::from(a), O::from(b)));
  else if constexpr (K == op_kind::sub) return O::to(__hsub2_rn(O::from(a), O::from(b)));
  else if constexpr (K == op_kind::mul) return O::to(__hmul2_rn(O::from(a), O::from(b)));
  else if constexpr (K == op_kind::maximum) return O::to(__hmax2_nan(O::from(a), O::from(b)));
  else return O::to(__hmin2_nan(O::from(a), O::from(b)));
#else
  (void)b;
  return a;  // host values are never packed
#endif
}

// W lanes in representation at p + off + l * step: 16-bit floats as words.
template <dtype D, int W, class I, bool Shared = false>
FUSEX_HD inline void load_rep(const void* p, I off, I step, rep_t<D>* out) {
  if constexpr (packed16<D>) {
#if FUSEX_DEVICE_PASS
    constexpr int VB = vector_bytes<D, W>();
    const unsigned short* q = static_cast<const unsigned short*>(p) + off;
    if constexpr (VB > 0) {
      if (step == 1 && (reinterpret_cast<std::uintptr_t>(q) & (VB - 1)) == 0) {
FUSEX_UNROLL
        for (int k = 0; k < lane_words<D, W> * 4 / VB; ++k) {
          if constexpr (Shared) load_shared_vector<VB>(reinterpret_cast<const unsigned char*>(q) + k * VB, out + k * VB / 4);
          else load_vector<VB>(reinterpret_cast<const unsigned char*>(q) + k * VB, out + k * VB / 4);
        }
        return;
      }
      FUSEX_COLD();
    }
FUSEX_UNROLL
    for (int k = 0; k < rep_n<D, W>; ++k) {
      const std::uint32_t lo = q[static_cast<long long>(2 * k) * step];
      const std::uint32_t hi = 2 * k + 1 < W ? q[static_cast<long long>(2 * k + 1) * step] : 0u;
      out[k] = lo | hi << 16;
    }
#endif
  } else {
    load_lanes<D, W, I, Shared>(p, off, step, out);
  }
}

// W lanes in representation to p + off + l * step.
template <dtype D, int W, class I>
FUSEX_HD inline void store_rep(void* p, I off, I step, const rep_t<D>* v) {
  if constexpr (packed16<D>) {
#if FUSEX_DEVICE_PASS
    constexpr int VB = vector_bytes<D, W>();
    unsigned short* q = static_cast<unsigned short*>(p) + off;
    if constexpr (VB > 0) {
      if (step == 1 && (reinterpret_cast<std::uintptr_t>(q) & (VB - 1)) == 0) {
FUSEX_UNROLL
        for (int k = 0; k < lane_words<D, W> * 4 / VB; ++k)
          store_vector<VB>(reinterpret_cast<unsigned char*>(q) + k * VB, v + k * VB / 4);
        return;
      }
      FUSEX_COLD();
    }
FUSEX_UNROLL
    for (int l = 0; l < W; ++l)
      q[static_cast<long long>(l) * step] = static_cast<unsigned short>(l % 2 == 0 ? v[l / 2] & 0xffffu : v[l / 2] >> 16);
#endif
  } else {
    store_lanes<D, W, I>(p, off, step, v);
  }
}

}  // namespace fusex::detail::codegen
