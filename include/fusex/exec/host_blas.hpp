#pragma once
// Host GEMM. With FUSEX_HAS_CBLAS (set by the fusex CMake target when a CBLAS
// such as OpenBLAS is found) it calls cblas_?gemm; otherwise a cache-blocked
// loop keeps header-only users without BLAS working, only slower.

#include <cstdint>

#if defined(FUSEX_HAS_CBLAS)
#include <cblas.h>
#endif

namespace fusex::detail {

// C[M x N] = A[M x K] * B[K x N], row-major with leading dimensions.
template <class T>
void host_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
               std::int64_t ldb, T* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a zero leading dimension; the product is zero
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
    return;
  }
#if defined(FUSEX_HAS_CBLAS)
  if constexpr (sizeof(T) == 8) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c,
                static_cast<int>(ldc));
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c,
                static_cast<int>(ldc));
  }
#else
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
  constexpr std::int64_t kb = 64;
  for (std::int64_t p0 = 0; p0 < k; p0 += kb) {
    const std::int64_t p1 = p0 + kb < k ? p0 + kb : k;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = p0; p < p1; ++p) {
        const T av = a[i * lda + p];
        for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] += av * b[p * ldb + j];
      }
  }
#endif
}

}  // namespace fusex::detail
