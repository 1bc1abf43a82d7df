#pragma once
// The CUDA executor: one __global__ per group, instantiated at compile time
// from the group's encoded program, launched on the caller's stream with no
// hidden synchronisation. Intermediates live in stream-ordered memory
// (cudaMallocAsync) or in a caller-provided workspace. Row reductions use
// CUB block reductions; matmul goes to cuBLAS. Every CUDA error is reported
// with the failing call.
//
//   fusex::run(plan, fusex::cuda_stream{stream}, fusex::inputs(x, dy), fusex::outputs(dx));

#if !defined(__CUDACC__)
#error "fusex/exec/cuda.hpp needs nvcc (compile this translation unit as CUDA)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "runner.hpp"

namespace fusex {

// Run on a CUDA stream. A workspace, if given, holds the intermediates (it
// must be at least workspace_bytes(plan, ...) large); otherwise they come
// from cudaMallocAsync on the stream.
struct cuda_stream {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_size = 0;
};

namespace detail::cuda {

inline void check(cudaError_t e, const char* call, const char* where) {
  if (e != cudaSuccess)
    throw cuda_error(std::string("fusex: ") + call + " failed in " + where + ": " + cudaGetErrorName(e) + " (" +
                     cudaGetErrorString(e) + ")");
}
inline void check(cublasStatus_t s, const char* call, const char* where) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw cuda_error(std::string("fusex: ") + call + " failed in " + where + ": cuBLAS status " +
                     std::to_string(static_cast<int>(s)));
}
#define FUSEX_CUDA_CHECK(call, where) ::fusex::detail::cuda::check((call), #call, where)

using codegen::chunk_index;
using codegen::context;
using codegen::eval;
using codegen::group_args;
using codegen::idx_t;
using codegen::prog;
using codegen::reduction_values;
using codegen::static_for;
using codegen::vt;

inline constexpr int block_threads = 256;

// Lanes per thread: 16 bytes of the widest value the group writes.
template <class C>
FUSEX_HD constexpr int lanes_for() {
  using Q = prog<C>;
  int widest = 1;
  for (int w = 0; w < Q::nwrites(); ++w) {
    const int s = size_of(Q::dt(Q::write_local(w)));
    widest = s > widest ? s : widest;
  }
  return 16 / widest >= 1 ? 16 / widest : 1;
}

// Store n lanes at off (stride `step`); 16-byte vector stores when the
// lanes are contiguous and aligned.
template <dtype D, int W>
__device__ inline void store_lanes(void* base, idx_t off, idx_t step, int n, const vt<D>* v) {
  using S = storage_t<D>;
  S* p = static_cast<S*>(base) + off;
  if constexpr (sizeof(S) * W == 16) {
    if (step == 1 && n == W && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
      uint4 pack;
      for (int l = 0; l < W; ++l) codegen::store_value<D>(&pack, l, v[l]);
      *reinterpret_cast<uint4*>(p) = pack;
      return;
    }
  }
  for (int l = 0; l < n; ++l) codegen::store_value<D>(base, off + l * step, v[l]);
}

template <class C, int R, int W, class Ctx>
__device__ inline void write_lanes(const Ctx& cx, const group_args<C>& a, int w, const idx_t* idx, int n) {
  using Q = prog<C>;
  constexpr dtype D = Q::dt(R);
  constexpr int r = Q::rank(R);
  vt<D> v[W];
  eval<C, R, W, r - 1>(cx, idx, 1, n, v);
  idx_t off = 0;
  for (int d = 0; d < r; ++d) off += idx[d] * a.out_str[w][d];
  store_lanes<D, W>(a.out[w], off, r > 0 ? a.out_str[w][r - 1] : 0, n, v);
}

// Work of the pointwise writes: write w covers items [begin[w], begin[w+1]),
// one item being up to W lanes of one row.
template <int NW>
struct work_table {
  idx_t begin[NW + 1];
};

template <class C, int W>
__global__ void __launch_bounds__(block_threads) pointwise_kernel(const group_args<C> a,
                                                                  const work_table<prog<C>::nwrites()> work) {
  using Q = prog<C>;
  const context<C, 1> cx{&a, nullptr};
  const idx_t total = work.begin[Q::nwrites()];
  for (idx_t item = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; item < total;
       item += static_cast<idx_t>(gridDim.x) * blockDim.x) {
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      if (item < work.begin[w] || item >= work.begin[w + 1]) return;
      constexpr int R = Q::write_local(w);
      constexpr int r = Q::rank(R);
      idx_t ext[r > 0 ? r : 1];
      for (int d = 0; d < r; ++d) ext[d] = a.ext[Q::shape(R, d)];
      idx_t idx[r > 0 ? r : 1];
      const int n = chunk_index<W>(item - work.begin[w], ext, r, idx);
      write_lanes<C, R, W>(cx, a, w, idx, n);
    });
  }
}

// Partial state of one reduction for a thread: sum, NaN-propagating max, or
// Welford moments, combined across the block with CUB.
template <class T>
struct moments {
  T count, mean, m2;
};
struct combine_moments {
  template <class T>
  __device__ moments<T> operator()(const moments<T>& x, const moments<T>& y) const {
    const T n = x.count + y.count;
    if (n == T(0)) return x;
    const T d = y.mean - x.mean;
    const T fy = y.count / n;
    return {n, x.mean + d * fy, x.m2 + y.m2 + d * d * x.count * fy};
  }
};
struct nan_max_op {
  template <class T>
  __device__ T operator()(const T& x, const T& y) const {
    if constexpr (std::is_floating_point_v<T>) return math::maximum(x, y);
    else return x > y ? x : y;
  }
};
struct wrap_sum_op {
  __device__ long long operator()(long long x, long long y) const {
    return static_cast<long long>(static_cast<unsigned long long>(x) + static_cast<unsigned long long>(y));
  }
};

template <class C, int M, int W, int rd, class Ctx>
__device__ void reduce_row(const Ctx& cx, reduction_values<C, 1>& rv, idx_t* idx, idx_t L, void* smem) {
  using Q = prog<C>;
  constexpr int U = Q::operand(M, 0);
  constexpr op_kind K = Q::op(M);
  constexpr dtype DU = Q::dt(U), DM = Q::dt(M);
  constexpr int ri = Q::red_index(M);
  constexpr bool fp = is_floating(DU);
  using acc_t = std::conditional_t<fp, std::conditional_t<DU == dtype::f64, double, float>, long long>;
  using mom_t = std::conditional_t<DU == dtype::f64, double, float>;
  vt<DU> v[W];
  acc_t s = 0;
  acc_t mx = fp ? static_cast<acc_t>(-INFINITY) : static_cast<acc_t>(DU == dtype::i32 ? -2147483647LL - 1 : DU == dtype::b8 ? 0 : (-9223372036854775807LL - 1));
  moments<mom_t> mo{0, 0, 0};
  for (idx_t c0 = static_cast<idx_t>(threadIdx.x) * W; c0 < L; c0 += static_cast<idx_t>(blockDim.x) * W) {
    idx[rd - 1] = c0;
    const int n = static_cast<int>(L - c0 < W ? L - c0 : W);
    eval<C, U, W, rd - 1>(cx, idx, 1, n, v);
    for (int l = 0; l < n; ++l) {
      if constexpr (K == op_kind::sum) {
        if constexpr (fp) s += static_cast<acc_t>(v[l]);
        else s = wrap_sum_op{}(s, static_cast<long long>(v[l]));
      } else if constexpr (K == op_kind::amax) {
        mx = nan_max_op{}(mx, static_cast<acc_t>(v[l]));
      } else {
        const mom_t x = static_cast<mom_t>(v[l]);
        mo.count += 1;
        const mom_t d = x - mo.mean;
        mo.mean += d / mo.count;
        mo.m2 += d * (x - mo.mean);
      }
    }
  }
  __shared__ double result_f;
  __shared__ long long result_i;
  if constexpr (K == op_kind::sum) {
    using BR = cub::BlockReduce<acc_t, block_threads>;
    acc_t t;
    if constexpr (fp) t = BR(*static_cast<typename BR::TempStorage*>(smem)).Sum(s);
    else t = BR(*static_cast<typename BR::TempStorage*>(smem)).Reduce(s, wrap_sum_op{});
    if (threadIdx.x == 0) {
      if constexpr (fp) result_f = static_cast<double>(codegen::to_dtype<DM>(t));
      else result_i = codegen::to_dtype<DM>(t);
    }
  } else if constexpr (K == op_kind::amax) {
    using BR = cub::BlockReduce<acc_t, block_threads>;
    const acc_t t = BR(*static_cast<typename BR::TempStorage*>(smem)).Reduce(mx, nan_max_op{});
    if (threadIdx.x == 0) {
      if constexpr (fp) result_f = static_cast<double>(codegen::to_dtype<DM>(t));
      else result_i = codegen::to_dtype<DM>(t);
    }
  } else {
    using BR = cub::BlockReduce<moments<mom_t>, block_threads>;
    const moments<mom_t> t = BR(*static_cast<typename BR::TempStorage*>(smem)).Reduce(mo, combine_moments{});
    if (threadIdx.x == 0) {
      const double r = (Q::flag(M) & 2) ? (L > 0 ? static_cast<double>(t.mean) : NAN)
                                         : static_cast<double>(t.m2) / (static_cast<double>(L) - Q::value(M));
      result_f = static_cast<double>(codegen::to_dtype<DM>(r));
    }
  }
  __syncthreads();
  rv.f[ri][0] = result_f;
  rv.i[ri][0] = result_i;
  __syncthreads();  // the temp storage and results are reused by the next reduction
}

template <class C>
FUSEX_HD constexpr std::size_t reduce_temp_bytes() {
  std::size_t b = sizeof(typename cub::BlockReduce<moments<double>, block_threads>::TempStorage);
  const std::size_t d = sizeof(typename cub::BlockReduce<double, block_threads>::TempStorage);
  const std::size_t l = sizeof(typename cub::BlockReduce<long long, block_threads>::TempStorage);
  b = b > d ? b : d;
  return b > l ? b : l;
}

// Inputs a row kernel caches: tensors read with exactly the row domain's
// shape. Their row is copied to shared memory once and every pass reads it
// there (loads of other rows, through remaps, still go to global memory).
template <class C>
struct row_cache_plan {
  using Q = prog<C>;
  static constexpr int X = Q::operand(Q::reduction(), 0);
  static constexpr int rd = Q::rank(X);
  FUSEX_HD static constexpr bool cached(int slot) {
    for (int i = 0; i < Q::nlocals(); ++i) {
      if (Q::op(i) != op_kind::input || Q::slot(i) != slot || Q::rank(i) != rd) continue;
      bool same = true;
      for (int d = 0; d < rd; ++d) same = same && Q::shape(i, d) == Q::shape(X, d);
      if (same) return true;
    }
    return false;
  }
  FUSEX_HD static constexpr dtype slot_dtype(int slot) {
    for (int i = 0; i < Q::nlocals(); ++i)
      if (Q::op(i) == op_kind::input && Q::slot(i) == slot) return Q::dt(i);
    return dtype::f32;
  }
  // bytes of one cached row of slot s, 16-byte aligned
  FUSEX_HD static idx_t row_bytes(int slot, idx_t L) {
    return (L * size_of(slot_dtype(slot)) + 15) / 16 * 16;
  }
  static idx_t total_bytes(idx_t L) {
    idx_t b = 0;
    for (int s = 0; s < Q::nreads(); ++s)
      if (cached(s)) b += row_bytes(s, L);
    return b;
  }
};

// One block per row (grid-stride over rows): the row's cached inputs are
// copied to shared memory, each reduction is a pass over the row followed by
// a block reduction, then the row's outputs are written.
template <class C, int W>
__global__ void __launch_bounds__(block_threads) row_reduction_kernel(const group_args<C> a, int use_cache) {
  using Q = prog<C>;
  using RC = row_cache_plan<C>;
  constexpr int X = RC::X;
  constexpr int rd = RC::rd;
  constexpr int NR = group_args<C>::NR;
  __shared__ alignas(16) unsigned char smem[reduce_temp_bytes<C>()];
  extern __shared__ uint4 row_storage[];  // 16-byte aligned
  unsigned char* rows = reinterpret_cast<unsigned char*>(row_storage);
  idx_t ext[rd];
  for (int d = 0; d < rd; ++d) ext[d] = a.ext[Q::shape(X, d)];
  idx_t nrows = 1;
  for (int d = 0; d + 1 < rd; ++d) nrows *= ext[d];
  const idx_t L = ext[rd - 1];
  const unsigned char* cache[NR] = {};
  if (use_cache) {
    idx_t off = 0;
    static_for<Q::nreads()>([&](auto ss) {
      constexpr int sl = decltype(ss)::value;
      if constexpr (RC::cached(sl)) {
        cache[sl] = rows + off;
        off += RC::row_bytes(sl, L);
      }
    });
  }
  for (idx_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    idx_t idx[rd];
    idx_t rr = row;
    for (int d = rd - 2; d >= 0; --d) {
      idx[d] = rr % ext[d];
      rr /= ext[d];
    }
    idx_t outer[rd];
    for (int d = 0; d < rd; ++d) outer[d] = idx[d];
    if (use_cache) {
      static_for<Q::nreads()>([&](auto ss) {
        constexpr int sl = decltype(ss)::value;
        if constexpr (RC::cached(sl)) {
          using S = storage_t<RC::slot_dtype(sl)>;
          const S* src = static_cast<const S*>(a.in[sl]);
          idx_t base = 0;
          for (int d = 0; d + 1 < rd; ++d) base += idx[d] * a.in_str[sl][d];
          const idx_t step = a.in_str[sl][rd - 1];
          S* dst = reinterpret_cast<S*>(const_cast<unsigned char*>(cache[sl]));
          constexpr int V = 16 / static_cast<int>(sizeof(S));
          if (step == 1 && (reinterpret_cast<std::uintptr_t>(src + base) & 15) == 0 && L % V == 0) {
            const uint4* s4 = reinterpret_cast<const uint4*>(src + base);
            uint4* d4 = reinterpret_cast<uint4*>(dst);
            for (idx_t k = threadIdx.x; k < L / V; k += blockDim.x) d4[k] = __ldg(s4 + k);
          } else {
            for (idx_t k = threadIdx.x; k < L; k += blockDim.x) dst[k] = src[base + k * step];
          }
        }
      });
      __syncthreads();
    }
    reduction_values<C, 1> rv;
    context<C, 1> cx{&a, &rv};
    if (use_cache) {
      cx.row_cache = cache;
      cx.row_outer = outer;
    }
    static_for<Q::nlocals()>([&](auto mm) {
      constexpr int M = decltype(mm)::value;
      if constexpr (codegen::is_reduction(Q::op(M)) && Q::nops(M) > 0) reduce_row<C, M, W, rd>(cx, rv, idx, L, smem);
    });
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1)) {
        for (idx_t c0 = static_cast<idx_t>(threadIdx.x) * W; c0 < L; c0 += static_cast<idx_t>(blockDim.x) * W) {
          idx[rd - 1] = c0;
          write_lanes<C, R, W>(cx, a, w, idx, static_cast<int>(L - c0 < W ? L - c0 : W));
        }
      } else if (threadIdx.x == 0) {
        idx[rd - 1] = 0;
        write_lanes<C, R, W>(cx, a, w, idx, 1);
      }
    });
    if (use_cache) __syncthreads();  // the next row overwrites the cache
  }
}

// Column reductions: each thread owns W adjacent output elements and loops
// over the reduced axis (adjacent threads read adjacent addresses); the
// group's input-shaped writes follow in the same launch.
template <class C, int W>
__global__ void __launch_bounds__(block_threads) column_reduction_kernel(const group_args<C> a, idx_t out_items,
                                                                         idx_t in_items) {
  using Q = prog<C>;
  constexpr int R0 = Q::reduction();
  constexpr int X = Q::operand(R0, 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(R0);
  idx_t xext[rx];
  for (int d = 0; d < rx; ++d) xext[d] = a.ext[Q::shape(X, d)];
  idx_t oext[rx > 1 ? rx - 1 : 1];
  for (int d = 0, j = 0; d < rx; ++d)
    if (d != ax) oext[j++] = xext[d];
  const idx_t stride = static_cast<idx_t>(gridDim.x) * blockDim.x;
  for (idx_t item = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; item < out_items; item += stride) {
    idx_t oidx[rx > 1 ? rx - 1 : 1];
    const int n = chunk_index<W>(item, oext, rx - 1, oidx);
    reduction_values<C, W> rv;
    const context<C, W> cx{&a, &rv};
    static_for<Q::nlocals()>([&](auto mm) {
      constexpr int M = decltype(mm)::value;
      if constexpr (codegen::is_reduction(Q::op(M)) && Q::nops(M) > 0) {
        constexpr int U = Q::operand(M, 0);
        constexpr op_kind K = Q::op(M);
        constexpr dtype DU = Q::dt(U), DM = Q::dt(M);
        constexpr bool fp = is_floating(DU);
        using acc_t = std::conditional_t<fp, double, long long>;
        acc_t s[W], mx[W];
        float cnt = 0;
        float mean[W], m2[W];
        for (int l = 0; l < W; ++l) {
          s[l] = 0;
          mx[l] = fp ? static_cast<acc_t>(-INFINITY) : static_cast<acc_t>(DU == dtype::i32 ? -2147483647LL - 1 : DU == dtype::b8 ? 0 : (-9223372036854775807LL - 1));
          mean[l] = m2[l] = 0;
        }
        vt<DU> v[W];
        idx_t iu[rx];
        for (idx_t t = 0; t < xext[ax]; ++t) {
          for (int d = 0, j = 0; d < rx; ++d) iu[d] = d == ax ? t : oidx[j++];
          eval<C, U, W, rx - 1>(cx, iu, 1, n, v);
          cnt += 1.0f;
          for (int l = 0; l < W; ++l) {
            if constexpr (K == op_kind::sum) {
              if constexpr (fp) s[l] += static_cast<double>(v[l]);
              else s[l] = wrap_sum_op{}(s[l], static_cast<long long>(v[l]));
            } else if constexpr (K == op_kind::amax) {
              mx[l] = nan_max_op{}(mx[l], static_cast<acc_t>(v[l]));
            } else {
              const float x = static_cast<float>(v[l]);
              const float d = x - mean[l];
              mean[l] += d / cnt;
              m2[l] += d * (x - mean[l]);
            }
          }
        }
        constexpr int ri = Q::red_index(M);
        for (int l = 0; l < W; ++l) {
          if constexpr (K == op_kind::sum) {
            if constexpr (fp) rv.f[ri][l] = static_cast<double>(codegen::to_dtype<DM>(s[l]));
            else rv.i[ri][l] = codegen::to_dtype<DM>(s[l]);
          } else if constexpr (K == op_kind::amax) {
            if constexpr (fp) rv.f[ri][l] = static_cast<double>(codegen::to_dtype<DM>(mx[l]));
            else rv.i[ri][l] = codegen::to_dtype<DM>(mx[l]);
          } else {
            const double len = static_cast<double>(xext[ax]);
            const double r = (Q::flag(M) & 2) ? (xext[ax] > 0 ? static_cast<double>(mean[l]) : NAN)
                                               : static_cast<double>(m2[l]) / (len - Q::value(M));
            rv.f[ri][l] = static_cast<double>(codegen::to_dtype<DM>(r));
          }
        }
      }
    });
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (Q::dep(R)) {
        idx_t idx[rx];
        if constexpr (Q::rank(R) == rx) {
          for (int d = 0, j = 0; d < rx; ++d) idx[d] = d == ax ? 0 : oidx[j++];
        } else {
          for (int d = 0; d < rx - 1; ++d) idx[d] = oidx[d];
        }
        write_lanes<C, R, W>(cx, a, w, idx, n);
      }
    });
  }
  // input-shaped writes (values that do not depend on the reductions)
  const context<C, 1> cx{&a, nullptr};
  for (idx_t item = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; item < in_items; item += stride) {
    idx_t idx[rx];
    const int n = chunk_index<W>(item, xext, rx, idx);
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      if constexpr (!Q::dep(R)) write_lanes<C, R, W>(cx, a, w, idx, n);
    });
  }
}

// A strided copy with conversion: element i (row-major over `ext`) moves
// from src + sum(idx * src_str) to dst + sum(idx * dst_str). Broadcasting
// sources have stride 0.
struct copy_shape {
  int rank;
  idx_t ext[max_rank], src_str[max_rank], dst_str[max_rank];
};
template <dtype From, dtype To>
__global__ void copy_kernel(const void* src, void* dst, const copy_shape sh, idx_t total) {
  for (idx_t i = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<idx_t>(gridDim.x) * blockDim.x) {
    idx_t rem = i, so = 0, dof = 0;
    for (int d = sh.rank - 1; d >= 0; --d) {
      const idx_t c = rem % sh.ext[d];
      rem /= sh.ext[d];
      so += c * sh.src_str[d];
      dof += c * sh.dst_str[d];
    }
    codegen::store_value<To>(dst, dof, codegen::to_dtype<To>(codegen::load_value<From>(src, so)));
  }
}

inline int device_sms() {
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), "device query");
  static std::mutex mu;
  static std::vector<int> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(cache.size()) <= dev) cache.resize(static_cast<std::size_t>(dev + 1), 0);
  if (cache[dev] == 0) FUSEX_CUDA_CHECK(cudaDeviceGetAttribute(&cache[dev], cudaDevAttrMultiProcessorCount, dev), "device query");
  return cache[dev];
}

inline unsigned grid_for(idx_t items) {
  const idx_t blocks = (items + block_threads - 1) / block_threads;
  const idx_t cap = static_cast<idx_t>(device_sms()) * 16;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

inline cublasHandle_t cublas_handle() {
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), "cuBLAS handle");
  static std::mutex mu;
  static std::vector<cublasHandle_t> handles;
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(handles.size()) <= dev) handles.resize(static_cast<std::size_t>(dev + 1), nullptr);
  if (!handles[dev]) FUSEX_CUDA_CHECK(cublasCreate(&handles[dev]), "cuBLAS handle");
  return handles[dev];
}

constexpr cudaDataType_t cuda_type(dtype d) {
  return d == dtype::bf16 ? CUDA_R_16BF : d == dtype::f16 ? CUDA_R_16F : d == dtype::f64 ? CUDA_R_64F : CUDA_R_32F;
}

template <dtype From, dtype To>
void launch_copy(const void* src, void* dst, const copy_shape& sh, cudaStream_t stream) {
  idx_t total = 1;
  for (int d = 0; d < sh.rank; ++d) total *= sh.ext[d];
  if (total == 0) return;
  copy_kernel<From, To><<<grid_for(total), block_threads, 0, stream>>>(src, dst, sh, total);
  FUSEX_CUDA_CHECK(cudaGetLastError(), "the matmul operand copy kernel launch");
}

// A matrix operand as cuBLAS wants it: column-major storage with a leading
// dimension, an op, and one batch stride (0 when shared across the batch).
struct gemm_operand {
  const void* data;
  bool transpose;
  idx_t ld, batch_stride;
};

// Batch strides of a view over the output's batch enumeration, if one
// stride serves (dims of extent 1 broadcast).
inline bool uniform_batch_stride(int nb, const idx_t* ext, const idx_t* str, const idx_t* out_ext, idx_t& sb) {
  idx_t eff[max_rank];
  bool any = false;
  for (int d = 0; d < nb; ++d) {
    eff[d] = ext[d] == 1 ? 0 : str[d];
    any = any || eff[d] != 0;
  }
  if (!any) {
    sb = 0;
    return true;
  }
  for (int d = 0; d < nb; ++d)
    if (ext[d] != out_ext[d] && ext[d] != 1) return false;
  sb = eff[nb - 1];
  idx_t span = 1;
  for (int d = nb - 1; d >= 0; --d) {
    if (out_ext[d] > 1 && eff[d] != sb * span) return false;
    span *= out_ext[d];
  }
  return true;
}

template <class C, class Alloc>
void launch_matmul(const group_args<C>& a, cudaStream_t stream, Alloc&& alloc) {
  using Q = prog<C>;
  constexpr int M = Q::write_local(0);
  constexpr int A = Q::operand(M, 0), B = Q::operand(M, 1);
  constexpr int r = Q::rank(M), ra = Q::rank(A), rb = Q::rank(B);
  constexpr dtype DA = Q::dt(A), DB = Q::dt(B), DM = Q::dt(M);
  const int nb = r - 2;
  idx_t oe[max_rank] = {}, ae[max_rank] = {}, be[max_rank] = {};
  for (int d = 0; d < r; ++d) oe[d] = a.ext[Q::shape(M, d)];
  for (int d = 0; d < ra; ++d) ae[d] = a.ext[Q::shape(A, d)];
  for (int d = 0; d < rb; ++d) be[d] = a.ext[Q::shape(B, d)];
  const idx_t m = oe[r - 2], n = oe[r - 1], k = ae[ra - 1];
  idx_t batches = 1;
  for (int d = 0; d < nb; ++d) batches *= oe[d];
  if (m == 0 || n == 0 || batches == 0) return;
  // An operand (rows x cols) in the form cuBLAS takes, copied to a
  // contiguous buffer of the output dtype when its layout or dtype does not fit.
  auto prepare = [&](auto dtag, int slot, int rank, const idx_t* ext, idx_t rows, idx_t cols) {
    constexpr dtype DX = decltype(dtag)::value;
    const idx_t* str = a.in_str[slot];
    const idx_t sr = str[rank - 2], sc = str[rank - 1];
    idx_t sb = 0;
    const bool batch_ok = rank == 2 || uniform_batch_stride(nb, ext, str, oe, sb);
    gemm_operand op{a.in[slot], false, 0, sb};
    bool ok = DX == DM && batch_ok;
    if (ok && sc == 1 && (sr >= cols || rows == 1)) {
      op.transpose = false;  // column-major memory holds X^T
      op.ld = rows == 1 ? (cols > 1 ? cols : 1) : sr;
    } else if (ok && sr == 1 && (sc >= rows || cols == 1)) {
      op.transpose = true;  // column-major memory holds X
      op.ld = cols == 1 ? (rows > 1 ? rows : 1) : sc;
    } else {
      ok = false;
    }
    if (!ok) {
      copy_shape sh{};
      sh.rank = rank == 2 ? 2 : r;
      idx_t count = 1;
      for (int d = sh.rank - 1; d >= 0; --d) {
        const bool mat = d >= sh.rank - 2;
        const int sd = mat ? rank - (sh.rank - d) : d;
        sh.ext[d] = mat ? ext[sd] : oe[d];
        sh.src_str[d] = (!mat && ext[sd] == 1) ? 0 : str[sd];
        sh.dst_str[d] = count;
        count *= sh.ext[d];
      }
      void* buf = alloc(static_cast<std::size_t>(count) * static_cast<std::size_t>(size_of(DM)));
      launch_copy<DX, DM>(a.in[slot], buf, sh, stream);
      op = gemm_operand{buf, false, cols > 1 ? cols : 1, rank == 2 ? 0 : rows * cols};
    }
    return op;
  };
  const gemm_operand ga = prepare(std::integral_constant<dtype, DA>{}, Q::slot(A), ra, ae, m, k);
  const gemm_operand gb = prepare(std::integral_constant<dtype, DB>{}, Q::slot(B), rb, be, k, n);
  // the output: rows of unit stride and one batch stride, or a temporary
  const idx_t* cs = a.out_str[0];
  idx_t sbc = 0;
  const bool c_ok = cs[r - 1] == 1 && (cs[r - 2] >= n || m == 1) && (nb == 0 || uniform_batch_stride(nb, oe, cs, oe, sbc)) &&
                    (batches == 1 || sbc != 0);
  void* cptr = a.out[0];
  idx_t ldc = m == 1 ? n : cs[r - 2];
  if (!c_ok) {
    cptr = alloc(static_cast<std::size_t>(batches * m * n) * static_cast<std::size_t>(size_of(DM)));
    ldc = n;
    sbc = m * n;
  }
  cublasHandle_t h = cublas_handle();
  FUSEX_CUDA_CHECK(cublasSetStream(h, stream), "matmul");
  const cudaDataType_t t = cuda_type(DM);
  if constexpr (DM == dtype::f64) {
    const double alpha = 1, beta = 0;
    FUSEX_CUDA_CHECK(cublasGemmStridedBatchedEx(h, gb.transpose ? CUBLAS_OP_T : CUBLAS_OP_N, ga.transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, gb.data, t,
                                                static_cast<int>(gb.ld), gb.batch_stride, ga.data, t, static_cast<int>(ga.ld),
                                                ga.batch_stride, &beta, cptr, t, static_cast<int>(ldc), sbc,
                                                static_cast<int>(batches), CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
                     "matmul");
  } else {
    const float alpha = 1, beta = 0;
    FUSEX_CUDA_CHECK(cublasGemmStridedBatchedEx(h, gb.transpose ? CUBLAS_OP_T : CUBLAS_OP_N, ga.transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, gb.data, t,
                                                static_cast<int>(gb.ld), gb.batch_stride, ga.data, t, static_cast<int>(ga.ld),
                                                ga.batch_stride, &beta, cptr, t, static_cast<int>(ldc), sbc,
                                                static_cast<int>(batches), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "matmul");
  }
  if (!c_ok) {
    copy_shape sh{};
    sh.rank = r;
    idx_t count = 1;
    for (int d = r - 1; d >= 0; --d) {
      sh.ext[d] = oe[d];
      sh.src_str[d] = count;
      sh.dst_str[d] = cs[d];
      count *= oe[d];
    }
    launch_copy<DM, DM>(cptr, a.out[0], sh, stream);
  }
}

template <class Claimant, class = void>
struct has_run_cuda : std::false_type {};
template <class Claimant>
struct has_run_cuda<Claimant, std::void_t<decltype(Claimant::run_cuda(std::declval<const claimed_call&>(),
                                                                      std::declval<cudaStream_t>()))>> : std::true_type {};

// Kernel launches live in functions whose code type is deduced from the
// arguments: nvcc's host stubs then name the plain code<...> type rather
// than an alias spelled through the user's lambda, which it cannot print.
template <class C>
void launch_pointwise(const group_args<C>& ga, cudaStream_t stream, const char* where) {
  using Q = prog<C>;
  constexpr int W = lanes_for<C>();
  constexpr int NW = Q::nwrites();
  work_table<NW> wt{};
  idx_t total = 0;
  static_for<NW>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    constexpr int r = Q::rank(R);
    idx_t rows = 1, last = 1;
    for (int d = 0; d < r; ++d) (d + 1 < r ? rows : last) *= ga.ext[Q::shape(R, d)];
    wt.begin[w] = total;
    total += rows * ((last + W - 1) / W);
  });
  wt.begin[NW] = total;
  if (total == 0) return;
  pointwise_kernel<codegen::canonical_t<C>, W><<<grid_for(total), block_threads, 0, stream>>>(ga, wt);
  FUSEX_CUDA_CHECK(cudaGetLastError(), where);
}

template <class C>
void launch_row_reduction(const group_args<C>& ga, cudaStream_t stream, const char* where) {
  using Q = prog<C>;
  using K = codegen::canonical_t<C>;
  constexpr int W = lanes_for<C>();
  constexpr int X = Q::operand(Q::reduction(), 0);
  constexpr int rd = Q::rank(X);
  idx_t rows = 1;
  for (int d = 0; d + 1 < rd; ++d) rows *= ga.ext[Q::shape(X, d)];
  if (rows == 0) return;
  // The row cache when it fits in shared memory (asking for more than the
  // default 48 KiB where the device allows it).
  const idx_t cache_bytes = row_cache_plan<C>::total_bytes(ga.ext[Q::shape(X, rd - 1)]);
  int use_cache = cache_bytes > 0 ? 1 : 0;
  if (cache_bytes > 48 * 1024) {
    int dev = 0, limit = 0;
    FUSEX_CUDA_CHECK(cudaGetDevice(&dev), where);
    FUSEX_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), where);
    const idx_t room = limit - static_cast<idx_t>(reduce_temp_bytes<C>()) - 1024;
    if (cache_bytes <= room)
      FUSEX_CUDA_CHECK(cudaFuncSetAttribute(row_reduction_kernel<K, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(cache_bytes)),
                       where);
    else
      use_cache = 0;
  }
  const idx_t cap = static_cast<idx_t>(device_sms()) * 8;
  row_reduction_kernel<K, W><<<static_cast<unsigned>(rows < cap ? rows : cap), block_threads,
                               use_cache ? static_cast<std::size_t>(cache_bytes) : 0, stream>>>(ga, use_cache);
  FUSEX_CUDA_CHECK(cudaGetLastError(), where);
}

template <class C>
void launch_column_reduction(const group_args<C>& ga, cudaStream_t stream, const char* where) {
  using Q = prog<C>;
  constexpr int W = lanes_for<C>();
  constexpr int R0 = Q::reduction();
  constexpr int X = Q::operand(R0, 0);
  constexpr int rx = Q::rank(X), ax = Q::axis(R0);
  idx_t xe[max_rank] = {};
  for (int d = 0; d < rx; ++d) xe[d] = ga.ext[Q::shape(X, d)];
  auto chunks = [&](const idx_t* e, int rr) {
    idx_t rows = 1;
    for (int d = 0; d + 1 < rr; ++d) rows *= e[d];
    const idx_t last = rr > 0 ? e[rr - 1] : 1;
    return rows * ((last + W - 1) / W);
  };
  idx_t oe[max_rank] = {};
  for (int d = 0, j = 0; d < rx; ++d)
    if (d != ax) oe[j++] = xe[d];
  bool input_writes = false;
  constexpr int NW = Q::nwrites();
  static_for<NW>([&](auto ww) { input_writes = input_writes || !Q::dep(Q::write_local(decltype(ww)::value)); });
  const idx_t out_items = chunks(oe, rx - 1), in_items = input_writes ? chunks(xe, rx) : 0;
  const idx_t items = out_items > in_items ? out_items : in_items;
  if (items == 0) return;
  column_reduction_kernel<codegen::canonical_t<C>, W><<<grid_for(items), block_threads, 0, stream>>>(ga, out_items, in_items);
  FUSEX_CUDA_CHECK(cudaGetLastError(), where);
}

template <class PL, int G, class Args, class Outs, class Env, class Alloc>
void run_group_cuda(const std::vector<exec::location>& loc, const Args& args, const Outs& outs, const Env& env,
                    cudaStream_t stream, Alloc&& alloc) {
  using C = typename codegen::group_code<PL, G>::type;
  using Q = prog<C>;
  constexpr group_kind kind = PL::data.groups[G].kind;
  const auto ga = exec::group_arguments<PL, G>(loc, args, outs, env);
  const std::string where = "group " + std::to_string(G) + " (" + name(kind) + ")";
  if constexpr (kind == group_kind::pointwise) {
    launch_pointwise(ga, stream, where.c_str());
  } else if constexpr (kind == group_kind::row_reduction) {
    launch_row_reduction(ga, stream, where.c_str());
  } else if constexpr (kind == group_kind::column_reduction) {
    launch_column_reduction(ga, stream, where.c_str());
  } else if constexpr (kind == group_kind::matmul) {
    launch_matmul(ga, stream, alloc);
  } else {
    constexpr int node = PL::data.members[PL::data.groups[G].member0];
    constexpr int executor = PL::data.groups[G].executor;
    using claimant = typename PL::claimants::template at<executor>;
    static_assert(has_run_cuda<claimant>::value,
                  "fusex::cuda_stream: a claimed op's executor has no run_cuda(const fusex::claimed_call&, cudaStream_t)");
    exec::claimed_operands ops;
    const claimed_call call = exec::claimed_call_of(PL::graph, node, loc, env, ga.out[0], ga.out_str[0], ops);
    claimant::run_cuda(call, stream);
    FUSEX_CUDA_CHECK(cudaGetLastError(), where.c_str());
    for (int w = 1; w < Q::nwrites(); ++w) {
      copy_shape sh{};
      sh.rank = call.out.rank;
      for (int i = 0; i < sh.rank; ++i) {
        sh.ext[i] = call.out.ext[i];
        sh.src_str[i] = call.out.str[i];
        sh.dst_str[i] = ga.out_str[w][i];
      }
      constexpr dtype D = Q::dt(Q::write_local(0));
      launch_copy<D, D>(call.out.data, ga.out[w], sh, stream);
    }
  }
}

// Stream-ordered scratch: cudaMallocAsync, or slices of a caller workspace.
struct scratch {
  cuda_stream s;
  std::size_t used = 0;
  std::vector<void*> owned;
  void* operator()(std::size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    if (bytes == 0) bytes = 256;
    if (s.workspace) {
      if (used + bytes > s.workspace_size)
        throw argument_error("fusex::cuda_stream: the workspace of " + std::to_string(s.workspace_size) +
                             " bytes is too small; the plan needs more than " + std::to_string(used + bytes));
      void* p = static_cast<unsigned char*>(s.workspace) + used;
      used += bytes;
      return p;
    }
    void* p = nullptr;
    FUSEX_CUDA_CHECK(cudaMallocAsync(&p, bytes, s.stream), "an intermediate's allocation");
    owned.push_back(p);
    return p;
  }
  ~scratch() {
    for (void* p : owned) cudaFreeAsync(p, s.stream);  // stream-ordered: after the kernels that use them
  }
};

}  // namespace detail::cuda

// Runs plan `pl` on a CUDA stream: inputs and outputs are device memory.
// Asynchronous with respect to the host, like a kernel launch.
template <class P, class Policy, class... A, class... O>
void run(plan<P, Policy> pl, cuda_stream s, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  using PL = plan<P, Policy>;
  (void)pl;
  const auto args = bind_args(P{}, in);
  const auto outs = bind_results(P{}, out);
  const auto env = check_inputs(P::graph, args.data());
  check_outputs(P::graph, env, args.data(), outs.data());
  detail::cuda::scratch mem{s};
  const auto loc = detail::exec::place_values<PL>(args, outs, env, mem);
  detail::codegen::static_for<PL::data.ngroups>([&](auto gg) {
    detail::cuda::run_group_cuda<PL, decltype(gg)::value>(loc, args, outs, env, s.stream, mem);
  });
}

template <program_like P, class... A, class... O>
void run(P p, cuda_stream s, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  run(partition(p), s, in, out);
}

}  // namespace fusex
