#pragma once
// Pointwise groups: one grid-stride loop over the W-lane runs of all the
// group's writes. A full run evaluates its root in lanes mode with 32-bit
// coordinates and stores 16-byte vectors; the partial runs at a row's ends
// (and every run of a group too large for 32-bit offsets) take the cold
// path, one value at a time.

#include "lanes.hpp"

namespace fusex::detail::cuda {

template <class C>
struct pointwise_work {
  static constexpr int NW = prog<C>::nwrites();
  idx_t begin[NW + 1];  // write w covers items [begin[w], begin[w + 1])
  run_layout runs[NW];
};

// The runs of write w at [lo, hi) of row `row`, value by value.
template <class C, int w, int W, class I>
__device__ inline void write_by_value(const codegen::context<C, 1>& cx, const I* idx, long long col0, int lo, int hi) {
  using Q = prog<C>;
  constexpr int R = Q::write_local(w);
  constexpr int r = Q::rank(R);
  constexpr dtype D = Q::dt(R);
  const group_args<C>& a = *cx.a;
  FUSEX_COLD();
  idx_t il[r > 0 ? r : 1];
  long long off = 0;
#pragma unroll
  for (int d = 0; d + 1 < r; ++d) {
    il[d] = idx[d];
    off += static_cast<long long>(idx[d]) * a.out_str[w][d];
  }
#pragma unroll 1
  for (int l = lo; l < hi; ++l) {
    if constexpr (r > 0) il[r - 1] = col0 + l;
    const long long o = r > 0 ? off + (col0 + l) * a.out_str[w][r - 1] : 0;
    codegen::store_value<D>(a.out[w], o, codegen::eval_one<C, R>(cx, il));
  }
}

// Item `item` of write w: its row and run, then the values.
template <class C, int w, int W, class I>
__device__ inline void pointwise_item(const codegen::context<C, 1>& cx, const pointwise_work<C>& work, I item) {
  using Q = prog<C>;
  constexpr int R = Q::write_local(w);
  constexpr int r = Q::rank(R);
  constexpr dtype D = Q::dt(R);
  const group_args<C>& a = *cx.a;
  const I local = item - static_cast<I>(work.begin[w]);
  if constexpr (r == 0) {
    write_by_value<C, w, W, I>(cx, static_cast<const I*>(nullptr), 0, 0, 1);
  } else {
    I row, run;
    work.runs[w].per_row.divmod(local, row, run);
    I idx[r];
    row_coords<C, R>(a, row, idx);
    const I last = static_cast<I>(codegen::ext_of<C, Q::shape(R, r - 1)>(a));
    I off = 0;
#pragma unroll
    for (int d = 0; d + 1 < r; ++d) off += idx[d] * static_cast<I>(a.out_str[w][d]);
    const int peel = row_peel(work.runs[w], a.out[w], size_of(D), off);
    const I col0 = run * W - peel;
    if constexpr (std::is_same_v<I, int>) {
      if (col0 >= 0 && col0 + W <= last) {
        idx[r - 1] = col0;
        codegen::rep_t<D> v[codegen::rep_n<D, W>];
        codegen::eval<C, R, W, r - 1, I, true>(cx, idx, v);
        if (!cx.failed) {
          const I step = static_cast<I>(a.out_str[w][r - 1]);
          codegen::store_rep<D, W, I>(a.out[w], off + col0 * step, step, v);
          return;
        }
        cx.failed = false;  // a remap split the lanes: value by value below
      }
    }
    const I lo = col0 < 0 ? -col0 : 0;
    const I hi = last - col0 < W ? last - col0 : W;
    if (lo < hi) write_by_value<C, w, W, I>(cx, idx, col0, static_cast<int>(lo), static_cast<int>(hi));
  }
}

// The write that item belongs to, as an if-else chain: an item runs one
// write's code.
template <class C, int w, int W, class I>
__device__ inline void dispatch_item(const codegen::context<C, 1>& cx, const pointwise_work<C>& work, I item) {
  if constexpr (w + 1 < prog<C>::nwrites()) {
    if (item < static_cast<I>(work.begin[w + 1])) pointwise_item<C, w, W, I>(cx, work, item);
    else dispatch_item<C, w + 1, W, I>(cx, work, item);
  } else {
    pointwise_item<C, w, W, I>(cx, work, item);
  }
}

template <class C, int W>
__global__ void __launch_bounds__(block_threads, 3) pointwise_kernel(const __grid_constant__ group_args<C> a,
                                                                  const __grid_constant__ pointwise_work<C> work) {
  using Q = prog<C>;
  const codegen::context<C, 1> cx{&a};
  auto loop = [&](auto tag) {
    using I = decltype(tag);
    const I total = static_cast<I>(work.begin[Q::nwrites()]);
    const I stride = static_cast<I>(gridDim.x) * block_threads;
    for (I item = static_cast<I>(blockIdx.x) * block_threads + threadIdx.x; item < total; item += stride)
      dispatch_item<C, 0, W, I>(cx, work, item);
  };
  if (a.narrow) {
    loop(int{});
  } else {
    FUSEX_COLD();  // beyond 32-bit offsets: value by value
    loop(static_cast<long long>(0));
  }
}

template <class C>
void launch_pointwise(const group_args<C>& ga, cudaStream_t stream, const char* where) {
  using Q = prog<C>;
  constexpr int W = lanes_for<C>(32);
  constexpr int NW = Q::nwrites();
  pointwise_work<C> work{};
  idx_t total = 0;
  static_for<NW>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    constexpr int r = Q::rank(R);
    idx_t rows = 1, last = 1;
    static_for<r>([&](auto dd) {
      constexpr int d = decltype(dd)::value;
      (d + 1 < r ? rows : last) *= codegen::ext_of<C, Q::shape(R, d)>(ga);
    });
    work.begin[w] = total;
    if (rows == 0 || last == 0) {
      work.runs[w].per_row = fastdiv(1);
      return;
    }
    work.runs[w] = layout_runs<W>(ga.out[w], size_of(Q::dt(R)), last, r > 0 && ga.out_str[w][r - 1] == 1, ga.out_str[w],
                                  r > 0 ? r - 1 : 0);
    total += r == 0 ? 1 : rows * work.runs[w].per_row.d;
  });
  work.begin[NW] = total;
  if (total == 0) return;
  group_args<C> a = ga;
  a.narrow = a.narrow && total < (idx_t{1} << 31);
  pointwise_kernel<codegen::canonical_t<C>, W><<<grid_for(total), block_threads, 0, stream>>>(a, work);
  FUSEX_CUDA_CHECK(cudaGetLastError(), where);
}

}  // namespace fusex::detail::cuda
