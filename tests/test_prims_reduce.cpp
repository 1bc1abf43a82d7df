// Reductions and matmul on the reference executor against double formulas.
#include "support.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {
template <class T>
constexpr auto p_reduce = fx::trace([](fx::tensor<T, 3> x) {
  auto [var1, mean1] = fx::var_mean<1>(x, 1.0);
  return std::tuple{fx::sum<1>(x), fx::amax<-1>(x), var1, mean1, fx::sum<0>(x, fx::keepdim)};
});
template <class T>
constexpr auto p_mm = fx::trace([](fx::tensor<T, 3> a, fx::tensor<T, 3> b, fx::tensor<T, 2> w) {
  return std::tuple{fx::matmul(a, b), fx::matmul(a, w)};
});

template <class T>
std::vector<T> filled(int n) {
  auto v = random_values<T>(static_cast<std::size_t>(n), -2, 2);
  return v;
}
}  // namespace

TEMPLATE_TEST_CASE("sum, amax and var_mean along an axis", "[prims][reduce]", float, fx::bf16, fx::f16) {
  using T = TestType;
  const int A = 3, B = 7, C = 5;
  auto data = filled<T>(A * B * C);
  data[4] = from_double<T>(NAN);  // (0, 0, 4): NaN propagates through amax and sum
  fx::view<const T, 3> x(data.data(), {A, B, C});
  auto [s, m, v, mu, s0] = fx::evaluate(p_reduce<T>, fx::reference, x);
  REQUIRE(s.extent(0) == A);
  REQUIRE(s.extent(1) == C);
  REQUIRE(s0.extent(0) == 1);
  auto at = [&](int i, int j, int k) { return to_double(data[static_cast<std::size_t>((i * B + j) * C + k)]); };
  for (int i = 0; i < A; ++i)
    for (int k = 0; k < C; ++k) {
      double sum = 0, sq = 0;
      for (int j = 0; j < B; ++j) sum += at(i, j, k);
      const double mean = sum / B;
      for (int j = 0; j < B; ++j) sq += (at(i, j, k) - mean) * (at(i, j, k) - mean);
      INFO("i=" << i << " k=" << k);
      REQUIRE(close_as<T>(to_double(s(i, k)), sum));
      REQUIRE(close_as<T>(to_double(mu(i, k)), mean));
      REQUIRE(close_as<T>(to_double(v(i, k)), sq / (B - 1)));
    }
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < B; ++j) {
      double mx = -INFINITY;
      for (int k = 0; k < C; ++k) mx = std::isnan(at(i, j, k)) || std::isnan(mx) ? NAN : std::max(mx, at(i, j, k));
      REQUIRE(close_as<T>(to_double(m(i, j)), mx));
    }
  for (int j = 0; j < B; ++j)
    for (int k = 0; k < C; ++k) {
      double sum = 0;
      for (int i = 0; i < A; ++i) sum += at(i, j, k);
      REQUIRE(close_as<T>(to_double(s0(0, j, k)), sum));
    }
  // Zero-length reductions: the sum is 0, the max is -inf, the mean NaN.
  auto [es, em, ev, emu, es0] = fx::evaluate(p_reduce<T>, fx::reference, fx::view<const T, 3>(nullptr, {2, 0, 0}));
  REQUIRE(es.size() == 0);
  REQUIRE(em.size() == 0);
  auto [zs, zm, zv, zmu, zs0] = fx::evaluate(p_reduce<T>, fx::reference, fx::view<const T, 3>(nullptr, {2, 0, 3}));
  REQUIRE(zs.size() == 6);
  for (int k = 0; k < 6; ++k) {
    REQUIRE(to_double(zs.values()[k]) == 0.0);
    REQUIRE(std::isnan(to_double(zmu.values()[k])));
  }
}

TEMPLATE_TEST_CASE("batched matmul, with a weight shared across the batch", "[prims][matmul]", float, fx::bf16, fx::f16) {
  using T = TestType;
  const int Bt = 2, M = 3, K = 5, N = 4;
  auto a = filled<T>(Bt * M * K), b = filled<T>(Bt * K * N), w = filled<T>(K * N);
  // b is given transposed in memory (non-contiguous view).
  std::vector<T> bt(b.size());
  for (int z = 0; z < Bt; ++z)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) bt[static_cast<std::size_t>((z * N + n) * K + k)] = b[static_cast<std::size_t>((z * K + k) * N + n)];
  auto [c, cw] = fx::evaluate(p_mm<T>, fx::reference, fx::view<const T, 3>(a.data(), {Bt, M, K}),
                              fx::view<const T, 3>(bt.data(), {Bt, K, N}, {N * K, 1, K}),
                              fx::view<const T, 2>(w.data(), {K, N}));
  for (int z = 0; z < Bt; ++z)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double e = 0, ew = 0;
        for (int k = 0; k < K; ++k) {
          const double av = to_double(a[static_cast<std::size_t>((z * M + m) * K + k)]);
          e += av * to_double(b[static_cast<std::size_t>((z * K + k) * N + n)]);
          ew += av * to_double(w[static_cast<std::size_t>(k * N + n)]);
        }
        REQUIRE(close_as<T>(to_double(c(z, m, n)), e));
        REQUIRE(close_as<T>(to_double(cw(z, m, n)), ew));
      }
}
