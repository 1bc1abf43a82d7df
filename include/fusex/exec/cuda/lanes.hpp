#pragma once
// Pieces shared by the CUDA kernels: lanes per thread, launch sizes, and the
// chunks of a write's space (rows of W-lane runs, aligned to the
// destination so that full runs store as 16-byte vectors).

#include "../../codegen/eval.hpp"
#include "context.hpp"

namespace fusex::detail::cuda {

using codegen::fastdiv;
using codegen::group_args;
using codegen::idx_t;
using codegen::prog;
using codegen::static_for;
using codegen::vt;

inline constexpr int block_threads = 256;

// Lanes per thread: `bytes` of the narrowest tensor the group loads or
// writes, at most 32. Each operand then moves as one or more 16-byte
// vectors (an f32 input of a bf16 group: twice as many as a bf16 one).
// Pointwise kernels take 32 bytes: the index arithmetic of a run is then
// shared by 16 bf16 lanes.
template <class C>
consteval int lanes_for(int bytes) {
  using Q = prog<C>;
  int narrowest = 16;
  for (int i = 0; i < Q::nlocals(); ++i)
    if (Q::op(i) == op_kind::input) narrowest = size_of(Q::dt(i)) < narrowest ? size_of(Q::dt(i)) : narrowest;
  for (int w = 0; w < Q::nwrites(); ++w) {
    const int s = size_of(Q::dt(Q::write_local(w)));
    narrowest = s < narrowest ? s : narrowest;
  }
  const int w = bytes / narrowest;
  return w > 32 ? 32 : w < 1 ? 1 : w;
}

inline unsigned grid_for(idx_t items, int per_sm = 8) {
  const idx_t blocks = (items + block_threads - 1) / block_threads;
  const idx_t cap = static_cast<idx_t>(current_device().sms) * per_sm;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

// How the rows of one write are cut into runs of W lanes. Run c of a row
// starts at column c * W - peel, where peel is the row's misalignment (in
// elements) of the destination, so that every full run is aligned.
struct run_layout {
  fastdiv per_row;  // runs per row
  int peel = 0;     // the same for every row; -1: computed per row
  int vec = 1;      // elements of one aligned vector of the destination
};

// The layout of a write of `last` columns to rows of `pitch` elements
// (stride 1 along the row when `unit`), starting at `base`.
template <int W>
run_layout layout_runs(const void* base, int esize, idx_t last, bool unit, const idx_t* outer_str, int outer) {
  run_layout L;
  int vec = 16 / esize;
  if (vec > W) vec = W;
  if (!unit || vec < 2) {
    L.per_row = fastdiv((last + W - 1) / W);
    L.peel = 0;
    L.vec = 1;
    return L;
  }
  L.vec = vec;
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  bool uniform = addr % static_cast<std::uintptr_t>(esize) == 0;
  for (int d = 0; d < outer; ++d) uniform = uniform && (outer_str[d] * esize) % 16 == 0;
  if (uniform) {
    L.peel = static_cast<int>((addr / static_cast<std::uintptr_t>(esize)) % static_cast<std::uintptr_t>(vec));
    L.per_row = fastdiv((last + L.peel + W - 1) / W);
  } else {
    L.peel = -1;
    L.per_row = fastdiv((last + vec - 1 + W - 1) / W);
  }
  return L;
}

// The peel of a row whose first element is at element offset `off` from base.
__device__ inline int row_peel(const run_layout& L, const void* base, int esize, long long off) {
  if (L.peel >= 0) return L.peel;
  // vec and esize are powers of two: the low bits of the element address
  const auto e = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(base) / static_cast<unsigned>(esize)) +
                 static_cast<unsigned>(off);
  return static_cast<int>(e & static_cast<unsigned>(L.vec - 1));
}

// Outer coordinates of a linear row of local R (all axes but the last).
template <class C, int R, class I>
__device__ inline void row_coords(const group_args<C>& a, I row, I* idx) {
  constexpr int r = prog<C>::rank(R);
  static_for<(r > 1 ? r - 1 : 0)>([&](auto kk) {
    constexpr int d = r - 2 - decltype(kk)::value;
    if constexpr (d == 0) {
      idx[0] = row;
    } else {
      I q, rem;
      codegen::divmod_by<C, prog<C>::shape(R, d)>(a, row, q, rem);
      idx[d] = rem;
      row = q;
    }
  });
}

}  // namespace fusex::detail::cuda
