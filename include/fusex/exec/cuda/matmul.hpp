#pragma once
// matmul groups through cuBLAS (cublasGemmStridedBatchedEx_64: 64-bit
// extents, fp32 compute for 16- and 32-bit types, fp64 for double), with
// operands used in place when one of their two inner strides is 1 and one
// batch stride serves; otherwise they are copied (and converted) to scratch
// first. k = 0 writes zeros, as the reference does. Strided copies with
// conversion, also used for a claimed op's extra output slots.

#include "lanes.hpp"

namespace fusex::detail::cuda {

// A strided copy with conversion: element i (row-major over `ext`) moves
// from src + sum(idx * src_str) to dst + sum(idx * dst_str). Broadcasting
// sources have stride 0; src == nullptr writes zeros.
struct copy_shape {
  int rank;
  idx_t ext[max_rank], src_str[max_rank], dst_str[max_rank];
};
template <dtype From, dtype To>
__global__ void copy_kernel(const void* src, void* dst, const __grid_constant__ copy_shape sh, idx_t total) {
  for (idx_t i = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<idx_t>(gridDim.x) * blockDim.x) {
    idx_t rem = i, so = 0, dof = 0;
    for (int d = sh.rank - 1; d >= 0; --d) {
      const idx_t c = rem % sh.ext[d];
      rem /= sh.ext[d];
      so += c * sh.src_str[d];
      dof += c * sh.dst_str[d];
    }
    const vt<To> v = src ? codegen::to_dtype<To>(codegen::load_value<From>(src, so)) : vt<To>(0);
    codegen::store_value<To>(dst, dof, v);
  }
}

template <dtype From, dtype To>
void launch_copy(const void* src, void* dst, const copy_shape& sh, cudaStream_t stream, const char* where) {
  idx_t total = 1;
  for (int d = 0; d < sh.rank; ++d) total *= sh.ext[d];
  if (total == 0) return;
  copy_kernel<From, To><<<grid_for(total), block_threads, 0, stream>>>(src, dst, sh, total);
  FUSEX_CUDA_CHECK(cudaGetLastError(), where);
}

constexpr cudaDataType_t cuda_type(dtype d) {
  return d == dtype::bf16 ? CUDA_R_16BF : d == dtype::f16 ? CUDA_R_16F : d == dtype::f64 ? CUDA_R_64F : CUDA_R_32F;
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

// Runs (or, with dry, only allocates the scratch of) matmul group C.
template <class C, class Alloc>
void launch_matmul(const group_args<C>& a, cudaStream_t stream, cuda_context* ctx, const char* where, Alloc&& alloc,
                   bool dry) {
  using Q = prog<C>;
  constexpr int M = Q::write_local(0);
  constexpr int A = Q::operand(M, 0), B = Q::operand(M, 1);
  constexpr int r = Q::rank(M), ra = Q::rank(A), rb = Q::rank(B);
  constexpr dtype DA = Q::dt(A), DB = Q::dt(B), DM = Q::dt(M);
  const int nb = r - 2;
  idx_t oe[max_rank] = {}, ae[max_rank] = {}, be[max_rank] = {};
  static_for<r>([&](auto d) { oe[decltype(d)::value] = codegen::ext_of<C, Q::shape(M, decltype(d)::value)>(a); });
  static_for<ra>([&](auto d) { ae[decltype(d)::value] = codegen::ext_of<C, Q::shape(A, decltype(d)::value)>(a); });
  static_for<rb>([&](auto d) { be[decltype(d)::value] = codegen::ext_of<C, Q::shape(B, decltype(d)::value)>(a); });
  const idx_t m = oe[r - 2], n = oe[r - 1], k = ae[ra - 1];
  idx_t batches = 1;
  for (int d = 0; d < nb; ++d) batches *= oe[d];
  if (m == 0 || n == 0 || batches == 0) return;
  const idx_t* cs = a.out_str[0];
  if (k == 0) {  // an empty sum: zeros
    copy_shape sh{};
    sh.rank = r;
    for (int d = 0; d < r; ++d) {
      sh.ext[d] = oe[d];
      sh.dst_str[d] = cs[d];
    }
    if (!dry) launch_copy<DM, DM>(nullptr, a.out[0], sh, stream, where);
    return;
  }
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
      if (!dry) launch_copy<DX, DM>(a.in[slot], buf, sh, stream, where);
      op = gemm_operand{buf, false, cols > 1 ? cols : 1, rank == 2 ? 0 : rows * cols};
    }
    return op;
  };
  const gemm_operand ga = prepare(std::integral_constant<dtype, DA>{}, Q::slot(A), ra, ae, m, k);
  const gemm_operand gb = prepare(std::integral_constant<dtype, DB>{}, Q::slot(B), rb, be, k, n);
  // the output: rows of unit stride and one batch stride, or a temporary
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
  if (dry) return;
  cuda_context& context = ctx ? *ctx : context_for(stream, where);
  auto [h, lock] = context.cublas();
  FUSEX_CUDA_CHECK(cublasSetStream(h, stream), where);
  const cudaDataType_t t = cuda_type(DM);
  const auto op_of = [](const gemm_operand& g) { return g.transpose ? CUBLAS_OP_T : CUBLAS_OP_N; };
  auto gemm = [&](const void* alpha, const void* beta, cublasComputeType_t compute) {
    FUSEX_CUDA_CHECK(cublasGemmStridedBatchedEx_64(h, op_of(gb), op_of(ga), n, m, k, alpha, gb.data, t, gb.ld,
                                                   gb.batch_stride, ga.data, t, ga.ld, ga.batch_stride, beta, cptr, t,
                                                   ldc, sbc, batches, compute, CUBLAS_GEMM_DEFAULT),
                     where);
  };
  if constexpr (DM == dtype::f64) {
    const double alpha = 1, beta = 0;
    gemm(&alpha, &beta, CUBLAS_COMPUTE_64F);
  } else {
    const float alpha = 1, beta = 0;
    gemm(&alpha, &beta, CUBLAS_COMPUTE_32F);
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
    launch_copy<DM, DM>(cptr, a.out[0], sh, stream, where);
  }
}

}  // namespace fusex::detail::cuda
