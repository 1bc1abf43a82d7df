#pragma once
// Row-reduction groups: reductions along the last axis with their
// elementwise producers and the consumers that broadcast the results back
// over the row (norms, softmax). A group of `tpr` threads (a power of two,
// 32 to 256, chosen from the row length) owns one row at a time:
//  1. the row of each input read with exactly the row's shape is copied to
//     shared memory once, in 16-byte vectors (when it fits);
//  2. each level of reductions (those that do not read one another) is one
//     pass over the row in W-lane runs, the states combined over the group
//     in a fixed order;
//  3. the row's outputs are written from the same runs.
// With too few rows to fill the GPU, long rows are cut into segments, one
// per group, and the reductions combine across them through the workspace
// in phases (one launch per level, then one for the writes).
// Runs are aligned to the row's first output (or cached input), so full
// runs load and store as vectors; a row's partial first and last runs go
// value by value.

#include "reductions.hpp"

namespace fusex::detail::cuda {

// Inputs a row kernel caches: loads with exactly the row domain's shape.
template <class C>
struct row_cache_plan {
  using Q = prog<C>;
  static constexpr int X = Q::operand(Q::reduction(), 0);
  static constexpr int rd = Q::rank(X);
  static consteval bool cached(int slot) { return codegen::row_domain_load<C>(slot); }
  static consteval bool any() {
    for (int s = 0; s < Q::nreads(); ++s)
      if (cached(s)) return true;
    return false;
  }
  static consteval dtype slot_dtype(int slot) {
    for (int i = 0; i < Q::nlocals(); ++i)
      if (Q::op(i) == op_kind::input && Q::slot(i) == slot) return Q::dt(i);
    return dtype::f32;
  }
};

template <class C>
struct row_work {
  static constexpr int NR = group_args<C>::NR;
  long long rows = 0;
  int L = 0;      // row length
  int nruns = 0;  // W-lane runs per row
  int tpr = 32;   // threads per row
  run_layout runs;
  // the tensor the runs align to: base, element size, strides of the outer axes
  const void* align_base = nullptr;
  int align_esize = 1;
  idx_t align_str[max_rank] = {};
  int cache_bytes = 0;     // shared memory of one row group's cache; 0: no cache
  int cache_off[NR] = {};  // byte offset of each cached input's row in it, -1: not cached
  // Few long rows: each row is cut into `nsplit` segments of `seg_runs`
  // runs, one per group, and the launch runs one phase: phase p < levels
  // writes level p's partial states to `partial` ([reduction][row][segment]),
  // after merging those of the earlier levels; the last phase writes.
  int nsplit = 1, seg_runs = 0, phase = 0;
  state_slot* partial = nullptr;
};

// Copies n elements from src (stride `step`) to dst, a row in shared memory
// whose column 0 is `m` elements past a 16-byte boundary: runs of W
// elements as 16-byte vectors where both sides align, the few elements
// around them one by one.
template <class S, int W>
__device__ inline void fill_row(S* dst, const S* src, long long step, int n, int m, int t, int tpr) {
  constexpr int V = 16 / static_cast<int>(sizeof(S));
  constexpr int K = W / V > 0 ? W / V : 1;  // vectors per run
  const bool aligned = step == 1 && ((reinterpret_cast<std::uintptr_t>(src) - static_cast<std::uintptr_t>(m) * sizeof(S)) & 15) == 0;
  if (aligned && V > 1) {
    const int h = (V - m % V) % V < n ? (V - m % V) % V : n;  // elements before the first aligned vector
    const int nr = (n - h) / (K * V);                          // whole runs of K vectors
    const int done = h + nr * K * V;
    if (t < h || done + t < n) {
      FUSEX_COLD();
      if (t < h) dst[t] = src[t];
      for (int e = done + t; e < n; e += tpr) dst[e] = src[e];
    }
    const uint4* s4 = reinterpret_cast<const uint4*>(src + h);
    uint4* d4 = reinterpret_cast<uint4*>(dst + h);
    for (int k = t; k < nr; k += tpr) {
      uint4 v[K];
#pragma unroll
      for (int j = 0; j < K; ++j) v[j] = __ldg(s4 + k * K + j);
#pragma unroll
      for (int j = 0; j < K; ++j) d4[k * K + j] = v[j];
    }
  } else {
    FUSEX_COLD();
    for (int k = t; k < n; k += tpr) dst[k] = src[k * step];
  }
}

// W lanes of each reduction's operand, in its register type.
template <class C, int W>
struct lane_values {
  using Q = prog<C>;
  using RL = codegen::reduction_layout<C>;
  // operand values are classed by the operand's type, which may differ from the result's
  template <int K>
  static consteval int cls() {
    const dtype d = Q::dt(reduction_plan<C>::source(K));
    return (d == dtype::f16 || d == dtype::bf16 || d == dtype::f32) ? 0 : d == dtype::f64 ? 1 : 2;
  }
  vt<dtype::f32> f[reduction_plan<C>::N > 0 ? reduction_plan<C>::N : 1][W];
  double d[reduction_plan<C>::N > 0 ? reduction_plan<C>::N : 1][W];
  long long l[reduction_plan<C>::N > 0 ? reduction_plan<C>::N : 1][W];
  template <int K>
  __device__ auto* at() {
    if constexpr (cls<K>() == 0) return f[K];
    else if constexpr (cls<K>() == 1) return d[K];
    else return l[K];
  }
};

// The states of a pass, one per reduction K of the group (a tuple without
// <cuda/std/tuple>, which costs seconds of nvcc time per translation unit).
template <class C, int K = 0, int N = reduction_plan<C>::N>
struct states_of {
  typename device_reducer<C, K>::type::state head;
  states_of<C, K + 1, N> tail;
  template <int J>
  __device__ auto& at() {
    if constexpr (J == K) return head;
    else return tail.template at<J>();
  }
};
template <class C, int N>
struct states_of<C, N, N> {};

template <class C, int W>
__global__ void __launch_bounds__(block_threads, 2) row_kernel(const __grid_constant__ group_args<C> a,
                                                            const __grid_constant__ row_work<C> work) {
  using Q = prog<C>;
  using RP = reduction_plan<C>;
  using RL = codegen::reduction_layout<C>;
  using RC = row_cache_plan<C>;
  constexpr int X = RC::X;
  constexpr int rd = RC::rd;
  constexpr int NR = group_args<C>::NR;
  constexpr int N = RP::N;
  extern __shared__ uint4 dynamic_smem[];
  __shared__ state_slot slots[N > 0 ? N : 1][block_threads / 32];
  const int tpr = work.tpr;
  const int lg = __ffs(tpr) - 1;  // tpr is a power of two
  const int g = static_cast<int>(threadIdx.x) >> lg, t = static_cast<int>(threadIdx.x) & (tpr - 1);
  const int groups = block_threads >> lg;
  auto sync = [&] {
    if (tpr == 32) __syncwarp();
    else asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "r"(tpr) : "memory");
  };
  unsigned char* cache = reinterpret_cast<unsigned char*>(dynamic_smem) + g * work.cache_bytes;
  const unsigned char* cache_row[NR] = {};
  const int L = work.L;
  const bool split = work.nsplit > 1;
  const long long units = work.rows * work.nsplit;
  for (long long unit = static_cast<long long>(blockIdx.x) * groups + g; unit < units;
       unit += static_cast<long long>(gridDim.x) * groups) {
    const long long row = split ? unit / work.nsplit : unit;
    const int seg = split ? static_cast<int>(unit - row * work.nsplit) : 0;
    // this group's runs of the row
    const int c_begin = seg * work.seg_runs;
    const int c_end = split ? (c_begin + work.seg_runs < work.nruns ? c_begin + work.seg_runs : work.nruns) : work.nruns;
    idx_t outer[rd] = {};
    row_coords<C, X>(a, row, outer);
    long long aoff = 0;
#pragma unroll
    for (int d = 0; d + 1 < rd; ++d) aoff += outer[d] * work.align_str[d];
    const int m = row_peel(work.runs, work.align_base, work.align_esize, aoff);
    if constexpr (RC::any()) {
      if (work.cache_bytes > 0 && !split) {
        static_for<NR>([&](auto ss) {
          constexpr int s = decltype(ss)::value;
          if constexpr (RC::cached(s)) {
            using S = storage_t<RC::slot_dtype(s)>;
            S* col0 = reinterpret_cast<S*>(cache + work.cache_off[s]) + m;
            cache_row[s] = reinterpret_cast<const unsigned char*>(col0);
            long long off = 0;
#pragma unroll
            for (int d = 0; d + 1 < rd; ++d) off += outer[d] * a.in_str[s][d];
            fill_row<S, W>(col0, static_cast<const S*>(a.in[s]) + off, a.in_str[s][rd - 1], L, m, t, tpr);
          }
        });
        sync();
      }
    }
    codegen::reduction_values<C, 1> rv;
    const codegen::context<C, 1, RC::any()> cx{&a, &rv, cache_row, outer};
    // the full runs of a row; a group beyond 32-bit offsets goes value by value
    auto full = [&](int col0) { return a.narrow && col0 >= 0 && col0 + W <= L; };
    auto valid = [&](int col0, int& lo, int& hi) {
      lo = col0 < 0 ? -col0 : 0;
      hi = L - col0 < W ? L - col0 : W;
    };
    static_for<RP::nlevels()>([&](auto lvl) {
      constexpr int lv = decltype(lvl)::value;
      if (split && lv < work.phase) {
        // an earlier level: its segments' partial states, merged in order
        // (few rows only: outside the fast path the gate measures)
        FUSEX_COLD();
        static_for<N>([&](auto kk) {
          constexpr int k = decltype(kk)::value;
          if constexpr (RP::level(k) == lv && RP::accumulates(k)) {
            using RD = typename device_reducer<C, k>::type;
            using S = typename RD::state;
            S sk = RD::identity();
            const state_slot* p = work.partial + (static_cast<long long>(k) * work.rows + row) * work.nsplit;
            for (int j = 0; j < work.nsplit; ++j) sk = RD::combine(sk, *reinterpret_cast<const S*>(p[j].bytes));
            finish_from<C, k>(rv, &sk, 1, L);
          }
        });
        return;
      }
      if (split && lv > work.phase) return;
      states_of<C> st;
      static_for<N>([&](auto kk) {
        constexpr int k = decltype(kk)::value;
        st.template at<k>() = device_reducer<C, k>::type::identity();
      });
      for (int c = c_begin + t; c < c_end; c += tpr) {
        const int col0 = c * W - m;
        if (full(col0)) {
          int idx[rd];
#pragma unroll
          for (int d = 0; d + 1 < rd; ++d) idx[d] = static_cast<int>(outer[d]);
          idx[rd - 1] = col0;
          lane_values<C, W> v;
          static_for<N>([&](auto kk) {
            constexpr int k = decltype(kk)::value;
            if constexpr (RP::level(k) == lv && RP::accumulates(k))
              codegen::eval_values<C, RP::source(k), W, rd - 1, int>(cx, idx, v.template at<k>());
          });
          if (!cx.failed) {
            static_for<N>([&](auto kk) {
              constexpr int k = decltype(kk)::value;
              if constexpr (RP::level(k) == lv && RP::accumulates(k))
                device_reducer<C, k>::type::template add_lanes<W>(st.template at<k>(), v.template at<k>());
            });
            continue;
          }
          cx.failed = false;  // a remap split the lanes: value by value below
        }
        {
          FUSEX_COLD();
          int lo, hi;
          valid(col0, lo, hi);
          idx_t il[rd];
#pragma unroll
          for (int d = 0; d < rd; ++d) il[d] = outer[d];
#pragma unroll 1
          for (int l = lo; l < hi; ++l) {
            il[rd - 1] = col0 + l;
            static_for<N>([&](auto kk) {
              constexpr int k = decltype(kk)::value;
              if constexpr (RP::level(k) == lv && RP::accumulates(k))
                device_reducer<C, k>::type::add(st.template at<k>(), codegen::eval_one<C, RP::source(k)>(cx, il));
            });
          }
        }
      }
      static_for<N>([&](auto kk) {
        constexpr int k = decltype(kk)::value;
        if constexpr (RP::level(k) == lv && RP::accumulates(k)) {
          using RD = typename device_reducer<C, k>::type;
          const auto s = group_combine<RD>(st.template at<k>(), slots[k] + (g << lg >> 5), tpr, sync);
          if (split) {
            if (t == 0)
              *reinterpret_cast<typename RD::state*>(
                  work.partial[(static_cast<long long>(k) * work.rows + row) * work.nsplit + seg].bytes) = s;
          } else {
            finish_from<C, k>(rv, &s, 1, L);
          }
        }
      });
    });
    // the row's outputs (split rows: in the last phase, each group its segment)
    if (split && work.phase < RP::nlevels()) {
      sync();
      continue;
    }
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      constexpr dtype D = Q::dt(R);
      if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1)) {
        for (int c = c_begin + t; c < c_end; c += tpr) {
          const int col0 = c * W - m;
          if (full(col0)) {
            int idx[rd];
            int off = 0;
#pragma unroll
            for (int d = 0; d + 1 < rd; ++d) {
              idx[d] = static_cast<int>(outer[d]);
              off += idx[d] * static_cast<int>(a.out_str[w][d]);
            }
            idx[rd - 1] = col0;
            const int step = static_cast<int>(a.out_str[w][rd - 1]);
            codegen::rep_t<D> v[codegen::rep_n<D, W>];
            codegen::eval<C, R, W, rd - 1, int, true>(cx, idx, v);
            if (!cx.failed) {
              codegen::store_rep<D, W, int>(a.out[w], off + col0 * step, step, v);
              continue;
            }
            cx.failed = false;
          }
          {
            FUSEX_COLD();
            int lo, hi;
            valid(col0, lo, hi);
            idx_t il[rd];
            long long off = 0;
#pragma unroll
            for (int d = 0; d < rd; ++d) {
              il[d] = outer[d];
              if (d + 1 < rd) off += outer[d] * a.out_str[w][d];
            }
#pragma unroll 1
            for (int l = lo; l < hi; ++l) {
              il[rd - 1] = col0 + l;
              codegen::store_value<D>(a.out[w], off + (col0 + l) * a.out_str[w][rd - 1], codegen::eval_one<C, R>(cx, il));
            }
          }
        }
      } else if (t == 0 && seg == 0) {
        long long off = 0;
#pragma unroll
        for (int d = 0; d < Q::rank(R); ++d) off += (d < rd - 1 ? outer[d] : 0) * a.out_str[w][d];
        codegen::store_value<D>(a.out[w], off, codegen::eval_one<C, R>(cx, outer));
      }
    });
    sync();  // the next row reuses the cache and the combine slots
  }
}

// Lanes per thread of a row group: 32 bytes of its narrowest tensor, 64 for
// light groups (one reduction level, few inputs), whose per-run bookkeeping
// is then shared by more lanes without running out of registers.
template <class C>
consteval int row_lanes() {
  using Q = prog<C>;
  const bool light = reduction_plan<C>::nlevels() == 1 && Q::nreads() <= 3;
  return lanes_for<C>(light ? 64 : 32);
}

// Segments per row: rows of at least 4096 elements are cut when there are
// too few to give the GPU a few hundred groups (from the extents alone, so
// that results do not depend on the device).
inline int row_segments(idx_t rows, idx_t L, int nruns) {
  if (rows >= 256 || L < 2 * 4096) return 1;
  idx_t s = L / 4096;
  const idx_t want = (256 + rows - 1) / rows;
  if (s > want) s = want;
  if (s > nruns) s = nruns;
  return static_cast<int>(s < 1 ? 1 : s);
}

template <class C, class Alloc>
void launch_row_reduction(const group_args<C>& ga, cudaStream_t stream, const char* where, Alloc&& alloc, bool dry) {
  using Q = prog<C>;
  using RC = row_cache_plan<C>;
  using K = codegen::canonical_t<C>;
  constexpr int W = row_lanes<C>();
  constexpr int X = RC::X;
  constexpr int rd = RC::rd;
  row_work<C> work{};
  idx_t rows = 1;
  static_for<rd>([&](auto dd) {
    constexpr int d = decltype(dd)::value;
    const idx_t e = codegen::ext_of<C, Q::shape(X, d)>(ga);
    if (d + 1 < rd) rows *= e;
    else work.L = static_cast<int>(e);
  });
  if (rows == 0) return;
  work.rows = rows;
  using RP = reduction_plan<C>;
  group_args<C> a = ga;
  const idx_t L = codegen::ext_of<C, Q::shape(X, rd - 1)>(ga);
  if (L >= (idx_t{1} << 31)) a.narrow = false;
  // the tensor the runs align to: the first output over the whole row, else the first cached input
  int align_w = -1, align_s = -1;
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1))
      if (align_w < 0 && ga.out_str[w][rd - 1] == 1) align_w = w;
  });
  static_for<Q::nreads()>([&](auto ss) {
    constexpr int s = decltype(ss)::value;
    if constexpr (RC::cached(s))
      if (align_s < 0 && ga.in_str[s][rd - 1] == 1) align_s = s;
  });
  const idx_t* astr = nullptr;
  if (align_w >= 0) {
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      if (w == align_w) {
        work.align_base = ga.out[w];
        work.align_esize = size_of(Q::dt(Q::write_local(w)));
        astr = ga.out_str[w];
      }
    });
  } else if (align_s >= 0) {
    static_for<Q::nreads()>([&](auto ss) {
      constexpr int s = decltype(ss)::value;
      if (s == align_s) {
        work.align_base = ga.in[s];
        work.align_esize = size_of(RC::slot_dtype(s));
        astr = ga.in_str[s];
      }
    });
  }
  if (astr) {
    for (int d = 0; d + 1 < rd; ++d) work.align_str[d] = astr[d];
    work.runs = layout_runs<W>(work.align_base, work.align_esize, L, true, astr, rd - 1);
  } else {
    work.runs = layout_runs<W>(nullptr, 1, L, false, nullptr, 0);
  }
  work.nruns = L > 0 ? work.runs.per_row.d : 0;
  work.nsplit = RP::N > 0 ? row_segments(rows, L, work.nruns) : 1;
  if (work.nsplit > 1) {
    work.seg_runs = (work.nruns + work.nsplit - 1) / work.nsplit;
    work.partial = static_cast<state_slot*>(
        alloc(static_cast<std::size_t>(RP::N) * static_cast<std::size_t>(rows * work.nsplit) * sizeof(state_slot)));
  }
  if (dry) return;
  // threads per row (or segment): 32 to 256, each with 16 runs or more, so
  // that the per-row work (coordinates, the combines) stays a small share of
  // each thread's
  const int runs = work.nsplit > 1 ? work.seg_runs : work.nruns;
  int tpr = 32;
  while (tpr < block_threads && runs > 16 * tpr) tpr *= 2;
  work.tpr = tpr;
  const int groups = block_threads / tpr;
  // the row cache, when every group's rows fit in shared memory
  int bytes = 0;
  static_for<Q::nreads()>([&](auto ss) {
    constexpr int s = decltype(ss)::value;
    work.cache_off[s] = -1;
    if constexpr (RC::cached(s)) {
      work.cache_off[s] = bytes;
      bytes += static_cast<int>((L * size_of(RC::slot_dtype(s)) + 31) / 16 * 16);  // + 16 for the peel
    }
  });
  const device_info& dev = current_device();
  const idx_t smem = static_cast<idx_t>(bytes) * groups;
  if (bytes > 0 && smem <= dev.smem_optin - 4096) {
    work.cache_bytes = bytes;
    if (smem > 48 * 1024) allow_large_shared_memory(row_kernel<K, W>, where);
  }
  if (work.nsplit > 1) work.cache_bytes = 0;  // each phase reads its segment once
  const idx_t units = rows * work.nsplit;
  const idx_t blocks = (units + groups - 1) / groups;
  const idx_t cap = static_cast<idx_t>(dev.sms) * 8;
  const int phases = work.nsplit > 1 ? RP::nlevels() + 1 : 1;
  for (int p = 0; p < phases; ++p) {
    work.phase = p;
    row_kernel<K, W><<<static_cast<unsigned>(blocks < cap ? blocks : cap), block_threads,
                       static_cast<std::size_t>(work.cache_bytes) * groups, stream>>>(a, work);
    FUSEX_CUDA_CHECK(cudaGetLastError(), where);
  }
}

}  // namespace fusex::detail::cuda
