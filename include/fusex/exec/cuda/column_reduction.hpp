#pragma once
// Column-reduction groups: reductions over an outer axis (LayerNorm's
// dweight and dbias over the rows). The reduced rows are cut into `nb`
// blocks and the outputs into chunks of W lanes; a block of the tile kernel
// takes CX chunks x one block of rows, its RT thread rows walking the rows
// in turn, so adjacent threads read adjacent 16-byte vectors of a row. The
// tile's states are combined over its thread rows in order and written to
// the workspace; the merge kernel combines the nb partials of each output in
// block order, finishes them and writes what depends on them. The cut
// depends on the extents only, so results do not depend on the device.
// With one block of rows the tile kernel finishes and writes directly. Each
// level of reductions (those that read no other's result) is one such pair;
// the group's writes shaped like the reduced input come with the first tile
// pass.

#include "reductions.hpp"

namespace fusex::detail::cuda {

// Compile-time facts of a column group.
template <class C>
struct column_shape {
  using Q = prog<C>;
  static constexpr int R0 = Q::reduction();
  static constexpr int X = Q::operand(R0, 0);
  static constexpr int rx = Q::rank(X);
  static constexpr int ax = Q::axis(R0);
  static constexpr int ro = rx - 1;  // rank of the output index space
};

template <class C>
struct column_work {
  static constexpr int N = reduction_plan<C>::N > 0 ? reduction_plan<C>::N : 1;
  int T = 0;          // reduced extent
  int nb = 1;         // blocks of rows
  int nchunks = 0;    // W-lane chunks of the outputs
  int last = 0;       // outputs along the last axis
  fastdiv per_row;    // chunks per output row
  int ncols = 0;      // outputs
  int level = 0;      // the level this launch computes
  int rt = 8;         // thread rows of a tile
  // per reduction: partial states [nb][ncols] and finished values [ncols]
  void* partial[N] = {};
  void* finished[N] = {};
};

// The output index (all but the reduced axis) of chunk c, its lanes, and
// the position of its lane 0 among the outputs (numbered row-major).
template <class C, int W>
__device__ inline int column_chunk(const group_args<C>& a, const column_work<C>& work, int c, int* oidx, int& p) {
  using CS = column_shape<C>;
  using Q = prog<C>;
  int orow, run;
  work.per_row.divmod(c, orow, run);
  p = orow * work.last + run * W;
  // outer output axes: X's axes but the reduced one and the last
  static_for<(CS::ro > 1 ? CS::ro - 1 : 0)>([&](auto kk) {
    constexpr int j = CS::ro - 2 - decltype(kk)::value;  // output axis
    constexpr int d = j < CS::ax ? j : j + 1;           // its axis of X
    if constexpr (j == 0) {
      oidx[0] = orow;
    } else {
      int q, r;
      codegen::divmod_by<C, Q::shape(CS::X, d)>(a, orow, q, r);
      oidx[j] = r;
      orow = q;
    }
  });
  oidx[CS::ro - 1] = run * W;
  const int left = work.last - run * W;
  return left < W ? left : W;
}

// Coordinates in X of row t for the output index oidx.
template <class C, class I>
__device__ inline void column_coords(const int* oidx, I t, I* idx) {
  using CS = column_shape<C>;
#pragma unroll
  for (int d = 0; d < CS::rx; ++d) idx[d] = d == CS::ax ? t : static_cast<I>(oidx[d < CS::ax ? d : d - 1]);
}

// The dependent writes of the chunk at oidx (n lanes), with its reduction values.
template <class C, int W>
__device__ inline void write_dependent(const codegen::context<C, W>& cx, const int* oidx, int n) {
  using Q = prog<C>;
  using CS = column_shape<C>;
  const group_args<C>& a = *cx.a;
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    constexpr int r = Q::rank(R);
    constexpr dtype D = Q::dt(R);
    if constexpr (Q::dep(R)) {
      // keepdim results have X's rank with the reduced axis at 0
      idx_t idx[r > 0 ? r : 1] = {};
#pragma unroll
      for (int d = 0; d < r; ++d) {
        if constexpr (r == CS::rx) idx[d] = d == CS::ax ? 0 : oidx[d < CS::ax ? d : d - 1];
        else idx[d] = oidx[d];
      }
      long long off = 0;
#pragma unroll
      for (int d = 0; d < r; ++d) off += idx[d] * a.out_str[w][d];
      if constexpr (r > 0) {
        if (a.narrow && n == W) {
          int i32[r];
#pragma unroll
          for (int d = 0; d < r; ++d) i32[d] = static_cast<int>(idx[d]);
          codegen::rep_t<D> v[codegen::rep_n<D, W>];
          codegen::eval<C, R, W, r - 1, int, true>(cx, i32, v);
          if (!cx.failed) {
            const int step = static_cast<int>(a.out_str[w][r - 1]);
            codegen::store_rep<D, W, int>(a.out[w], static_cast<int>(off), step, v);
            return;
          }
          cx.failed = false;
        }
      }
      FUSEX_COLD();
      const idx_t c0 = r > 0 ? idx[r - 1] : 0;
#pragma unroll 1
      for (int l = 0; l < n; ++l) {
        if constexpr (r > 0) idx[r - 1] = c0 + l;
        codegen::context<C, W> c1 = cx;
        c1.lane = l;
        codegen::store_value<D>(a.out[w], off + (r > 0 ? l * a.out_str[w][r - 1] : 0), codegen::eval_one<C, R>(c1, idx));
      }
    }
  });
}

// Finished values of the earlier levels for the chunk at output position p.
template <class C, int W>
__device__ inline void load_finished(const column_work<C>& work, int lv, int p, int n, codegen::reduction_values<C, W>& rv) {
  using RP = reduction_plan<C>;
  static_for<RP::N>([&](auto kk) {
    constexpr int k = decltype(kk)::value;
    if (RP::level(k) < lv) {
      using V = std::remove_reference_t<decltype(rv.template at<k>()[0])>;
      const V* f = static_cast<const V*>(work.finished[k]) + p;
#pragma unroll
      for (int l = 0; l < W; ++l) rv.template at<k>()[l] = f[l < n ? l : 0];
    }
  });
}

// One tile: CX chunks x the rows of block blockIdx.y, for the reductions of
// level work.level; partial states out (or, with one block, the results).
template <class C, int W>
__global__ void __launch_bounds__(block_threads, 4) column_tile_kernel(const __grid_constant__ group_args<C> a,
                                                                    const __grid_constant__ column_work<C> work) {
  using Q = prog<C>;
  using CS = column_shape<C>;
  using RP = reduction_plan<C>;
  using RL = codegen::reduction_layout<C>;
  constexpr int N = RP::N;
  __shared__ state_slot buf[block_threads];
  const int rt = work.rt, cx_threads = block_threads / rt;
  const int tx = static_cast<int>(threadIdx.x) % cx_threads, ty = static_cast<int>(threadIdx.x) / cx_threads;
  const int c = static_cast<int>(blockIdx.x) * cx_threads + tx;
  const bool live = c < work.nchunks;
  int oidx[CS::ro > 0 ? CS::ro : 1] = {};
  int p = 0;
  const int n = live ? column_chunk<C, W>(a, work, c, oidx, p) : 0;
  const int b = static_cast<int>(blockIdx.y);
  const int t0 = static_cast<int>(static_cast<long long>(work.T) * b / work.nb);
  const int t1 = static_cast<int>(static_cast<long long>(work.T) * (b + 1) / work.nb);
  codegen::reduction_values<C, W> rv;
  if (live) load_finished<C, W>(work, work.level, p, n, rv);
  const codegen::context<C, W> cxt{&a, &rv};
  const codegen::context<C, 1> cx1{&a};
  static_for<RP::nlevels()>([&](auto lvl) {
    constexpr int lv = decltype(lvl)::value;
    if (lv != work.level) return;
    // per-lane states of this level's reductions
    static_for<N>([&](auto kk) {
      constexpr int k = decltype(kk)::value;
      if constexpr (RP::level(k) == lv && RP::accumulates(k)) {
        using RD = typename device_reducer<C, k>::type;
        constexpr int M = RL::local(k);
        constexpr int U = Q::operand(M, 0);
        typename RD::state s[W];
#pragma unroll
        for (int l = 0; l < W; ++l) s[l] = RD::identity();
        if (live) {
          for (int t = t0 + ty; t < t1; t += rt) {
            if (a.narrow && n == W) {
              int idx[CS::rx];
              column_coords<C>(oidx, t, idx);
              vt<Q::dt(U)> v[W];
              codegen::eval_values<C, U, W, CS::rx - 1, int>(cxt, idx, v);
              if (!cxt.failed) {
#pragma unroll
                for (int l = 0; l < W; ++l) RD::add(s[l], v[l]);
                continue;
              }
              cxt.failed = false;
            }
            {
              FUSEX_COLD();
              idx_t idx[CS::rx];
              column_coords<C>(oidx, static_cast<idx_t>(t), idx);
              const idx_t c0 = idx[CS::rx - 1];
#pragma unroll 1
              for (int l = 0; l < n; ++l) {
                idx[CS::rx - 1] = c0 + l;
                codegen::context<C, W> c1 = cxt;
                c1.lane = l;
                const auto v = codegen::eval_one<C, U>(c1, idx);
                // lane l of s, without indexing the register array at run time
                static_for<W>([&](auto ll) {
                  if (decltype(ll)::value == l) RD::add(s[decltype(ll)::value], v);
                });
              }
            }
          }
        }
        // combine the thread rows in order, lane by lane
        using S = typename RD::state;
#pragma unroll
        for (int l = 0; l < W; ++l) {
          __syncthreads();
          *reinterpret_cast<S*>(buf[threadIdx.x].bytes) = s[l];
          __syncthreads();
          if (ty == 0) {
#pragma unroll
            for (int y = 1; y < 8; ++y)
              if (y < rt) s[l] = RD::combine(s[l], *reinterpret_cast<const S*>(buf[y * cx_threads + tx].bytes));
          }
        }
        if (ty == 0 && live) {
          if (work.nb == 1) {
            finish_from<C, k>(rv, s, W, work.T);
          } else {
            S* out = static_cast<S*>(work.partial[k]) + static_cast<long long>(b) * work.ncols + p;
#pragma unroll
            for (int l = 0; l < W; ++l)
              if (l < n) out[l] = s[l];
          }
        }
      }
    });
    if (work.nb == 1 && ty == 0 && live) {
      // one block of rows: this tile has the results
      static_for<N>([&](auto kk) {
        constexpr int k = decltype(kk)::value;
        if constexpr (RP::level(k) == lv) {
          using V = std::remove_reference_t<decltype(rv.template at<k>()[0])>;
          if (lv + 1 < RP::nlevels()) {
            V* f = static_cast<V*>(work.finished[k]) + p;
#pragma unroll
            for (int l = 0; l < W; ++l)
              if (l < n) f[l] = rv.template at<k>()[l];
          }
        }
      });
      if (lv + 1 == RP::nlevels()) write_dependent<C, W>(cxt, oidx, n);
    }
  });
  // writes shaped like the reduced input, with the first pass over it
  if (work.level == 0 && live) {
    static_for<Q::nwrites()>([&](auto ww) {
      constexpr int w = decltype(ww)::value;
      constexpr int R = Q::write_local(w);
      constexpr dtype D = Q::dt(R);
      if constexpr (!Q::dep(R)) {
        for (int t = t0 + ty; t < t1; t += rt) {
          if (a.narrow && n == W) {
            int idx[CS::rx];
            column_coords<C>(oidx, t, idx);
            int off = 0;
#pragma unroll
            for (int d = 0; d < CS::rx; ++d) off += idx[d] * static_cast<int>(a.out_str[w][d]);
            codegen::rep_t<D> v[codegen::rep_n<D, W>];
            codegen::eval<C, R, W, CS::rx - 1, int, true>(cx1, idx, v);
            if (!cx1.failed) {
              codegen::store_rep<D, W, int>(a.out[w], off, static_cast<int>(a.out_str[w][CS::rx - 1]), v);
              continue;
            }
            cx1.failed = false;
          }
          {
            FUSEX_COLD();
            idx_t idx[CS::rx];
            column_coords<C>(oidx, static_cast<idx_t>(t), idx);
            long long off = 0;
#pragma unroll
            for (int d = 0; d < CS::rx; ++d) off += idx[d] * a.out_str[w][d];
            const idx_t c0 = idx[CS::rx - 1];
#pragma unroll 1
            for (int l = 0; l < n; ++l) {
              idx[CS::rx - 1] = c0 + l;
              codegen::store_value<D>(a.out[w], off + l * a.out_str[w][CS::rx - 1], codegen::eval_one<C, R>(cx1, idx));
            }
          }
        }
      }
    });
  }
}

// Merges the nb partial states of each output in block order, finishes
// them, and (after the last level) writes the values that depend on them.
template <class C, int W>
__global__ void __launch_bounds__(block_threads, 4) column_merge_kernel(const __grid_constant__ group_args<C> a,
                                                                     const __grid_constant__ column_work<C> work) {
  using Q = prog<C>;
  using CS = column_shape<C>;
  using RP = reduction_plan<C>;
  using RL = codegen::reduction_layout<C>;
  constexpr int N = RP::N;
  const int c = static_cast<int>(blockIdx.x) * block_threads + static_cast<int>(threadIdx.x);
  if (c >= work.nchunks) return;
  int oidx[CS::ro > 0 ? CS::ro : 1] = {};
  int p = 0;
  const int n = column_chunk<C, W>(a, work, c, oidx, p);
  codegen::reduction_values<C, W> rv;
  load_finished<C, W>(work, work.level, p, n, rv);
  static_for<N>([&](auto kk) {
    constexpr int k = decltype(kk)::value;
    if constexpr (RP::accumulates(k)) {
      if (RP::level(k) != work.level) return;
      using RD = typename device_reducer<C, k>::type;
      using S = typename RD::state;
      constexpr int M = RL::local(k);
      S s[W];
#pragma unroll
      for (int l = 0; l < W; ++l) s[l] = RD::identity();
      const S* part = static_cast<const S*>(work.partial[k]) + p;
      for (int b = 0; b < work.nb; ++b) {
#pragma unroll
        for (int l = 0; l < W; ++l)
          if (l < n) s[l] = RD::combine(s[l], part[static_cast<long long>(b) * work.ncols + l]);
      }
      finish_from<C, k>(rv, s, W, work.T);
    }
  });
  if (work.level + 1 < RP::nlevels()) {
    static_for<N>([&](auto kk) {
      constexpr int k = decltype(kk)::value;
      if (RP::level(k) == work.level) {
        using V = std::remove_reference_t<decltype(rv.template at<k>()[0])>;
        V* f = static_cast<V*>(work.finished[k]) + p;
#pragma unroll
        for (int l = 0; l < W; ++l)
          if (l < n) f[l] = rv.template at<k>()[l];
      }
    });
  } else {
    const codegen::context<C, W> cx{&a, &rv};
    write_dependent<C, W>(cx, oidx, n);
  }
}

// The cut of a column group: blocks of rows and thread rows, from the
// extents only.
struct column_cut {
  int nb = 1, rt = 8;
};
inline column_cut cut_columns(idx_t T) {
  column_cut c;
  idx_t nb = T / 256;  // blocks of at least 256 rows, at most 64
  c.nb = static_cast<int>(nb < 1 ? 1 : nb > 64 ? 64 : nb);
  int rt = 8;
  while (rt > 1 && rt > T) rt /= 2;
  c.rt = rt;
  return c;
}

// Workspace bytes of a column group's partial and finished values.
template <class C>
std::size_t column_workspace_bytes(const group_args<C>& ga) {
  using CS = column_shape<C>;
  using RP = reduction_plan<C>;
  using Q = prog<C>;
  idx_t T = 0, ncols = 1;
  static_for<CS::rx>([&](auto dd) {
    constexpr int d = decltype(dd)::value;
    const idx_t e = codegen::ext_of<C, Q::shape(CS::X, d)>(ga);
    if (d == CS::ax) T = e;
    else ncols *= e;
  });
  const column_cut cut = cut_columns(T);
  std::size_t bytes = 0;
  static_for<RP::N>([&](auto kk) {
    constexpr int k = decltype(kk)::value;
    using S = typename device_reducer<C, k>::type::state;
    if (cut.nb > 1 && RP::accumulates(k)) bytes += (static_cast<std::size_t>(cut.nb) * ncols * sizeof(S) + 255) / 256 * 256;
    if (RP::nlevels() > 1) bytes += (static_cast<std::size_t>(ncols) * 8 + 255) / 256 * 256;
  });
  return bytes;
}

template <class C, class Alloc>
void launch_column_reduction(const group_args<C>& ga, cudaStream_t stream, const char* where, Alloc&& alloc, bool dry) {
  using Q = prog<C>;
  using CS = column_shape<C>;
  using RP = reduction_plan<C>;
  using K = codegen::canonical_t<C>;
  constexpr int W = lanes_for<C>(16);
  column_work<C> work{};
  idx_t T = 0, last = 1, orows = 1;
  static_for<CS::rx>([&](auto dd) {
    constexpr int d = decltype(dd)::value;
    const idx_t e = codegen::ext_of<C, Q::shape(CS::X, d)>(ga);
    if (d == CS::ax) T = e;
    else if (d == CS::rx - 1) last = e;
    else orows *= e;
  });
  const idx_t per_row = (last + W - 1) / W;
  const idx_t nchunks = orows * per_row;
  if (nchunks == 0) return;
  const idx_t ncols = orows * last;
  group_args<C> a = ga;
  if (T >= (idx_t{1} << 31) || nchunks >= (idx_t{1} << 31) || ncols >= (idx_t{1} << 30))
    throw shape_error(std::string("fusex: ") + where + ": a column reduction over " + std::to_string(T) + " rows into " +
                      std::to_string(ncols) + " outputs is beyond the CUDA executor's 32-bit output indexing");
  const column_cut cut = cut_columns(T);
  work.T = static_cast<int>(T);
  work.nb = cut.nb;
  work.rt = cut.rt;
  work.nchunks = static_cast<int>(nchunks);
  work.last = static_cast<int>(last);
  work.per_row = fastdiv(per_row);
  work.ncols = static_cast<int>(ncols);
  static_for<RP::N>([&](auto kk) {
    constexpr int k = decltype(kk)::value;
    using S = typename device_reducer<C, k>::type::state;
    if (cut.nb > 1 && RP::accumulates(k)) work.partial[k] = alloc(static_cast<std::size_t>(cut.nb) * ncols * sizeof(S));
    if (RP::nlevels() > 1) work.finished[k] = alloc(static_cast<std::size_t>(ncols) * 8);
  });
  if (dry) return;
  const int cxt = block_threads / cut.rt;
  const dim3 tiles(static_cast<unsigned>((nchunks + cxt - 1) / cxt), static_cast<unsigned>(cut.nb));
  const unsigned merge_blocks = static_cast<unsigned>((nchunks + block_threads - 1) / block_threads);
  for (int lv = 0; lv < RP::nlevels(); ++lv) {
    work.level = lv;
    column_tile_kernel<K, W><<<tiles, block_threads, 0, stream>>>(a, work);
    FUSEX_CUDA_CHECK(cudaGetLastError(), where);
    if (cut.nb > 1) {
      column_merge_kernel<K, W><<<merge_blocks, block_threads, 0, stream>>>(a, work);
      FUSEX_CUDA_CHECK(cudaGetLastError(), where);
    }
  }
}

}  // namespace fusex::detail::cuda
