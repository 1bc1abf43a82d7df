#pragma once
// Portability macros shared by every fusex header.

#include <cstdint>

#if defined(__CUDACC__)
#define FUSEX_HD __host__ __device__
#define FUSEX_DEVICE __device__
#else
#define FUSEX_HD
#define FUSEX_DEVICE
#endif

// Keeps a function out of line, for code that runs rarely but would be
// copied many times if inlined.
#if defined(__CUDACC__)
#define FUSEX_NOINLINE __noinline__
#else
#define FUSEX_NOINLINE __attribute__((noinline))
#endif

// Full unrolling of the short loops over lanes, for the device compiler.
// GCC unrolls such constant loops by itself, and warns of the pragma.
#if defined(__CUDACC__) || defined(__clang__)
#define FUSEX_UNROLL _Pragma("unroll")
#else
#define FUSEX_UNROLL
#endif

#if defined(__CUDA_ARCH__)
#define FUSEX_DEVICE_PASS 1
#else
#define FUSEX_DEVICE_PASS 0
#endif

namespace fusex {

// Ranks are compile-time; 8 covers every transformer layout we trace (the
// LitGPT qkv split peaks at 5) while keeping node records small.
inline constexpr int max_rank = 8;

using index_t = std::int64_t;

}  // namespace fusex
