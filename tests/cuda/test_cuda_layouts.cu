// The CUDA executor on the layouts, sizes and dtypes its fast paths must
// not get wrong: misaligned, strided and stride-0 views; more rows than
// 8 x SMs; rows that need more than 48 KiB of shared memory and rows too
// long to cache; f64, f16, integer and bool dtypes; zero-size tensors and
// k = 0; a pointwise group over more than 2^31 elements.
#include "device_support.hpp"

namespace {

using namespace fxt;
using fxt::cuda::arena;
using fxt::cuda::check_device;
using fxt::cuda::stream_guard;
using bf = fx::bf16;

constexpr auto axpb = fx::trace([](fx::tensor<bf, 2> x, fx::tensor<bf, 2> b) {
  return fx::convert<bf>(fx::convert<float>(x) * 2.0f + fx::convert<float>(b));
});
constexpr auto rms_norm = fx::trace([](fx::tensor<bf, 2> x, fx::tensor<bf, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });
constexpr auto ln_grad = fx::vjp(fx::trace([](fx::tensor<bf, 2> x, fx::tensor<bf, 1> w, fx::tensor<bf, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
}));
constexpr auto softmax = fx::trace([](fx::tensor<float, 2> x) {
  auto e = fx::exp(x - fx::amax<-1>(x, fx::keepdim));
  return e / fx::sum<-1>(e, fx::keepdim);
});
constexpr auto ln_f64 = fx::trace([](fx::tensor<double, 2> x, fx::tensor<double, 1> w, fx::tensor<double, 1> b) {
  auto r = fx::ops::layer_norm(x, w, b, 1e-9);
  return std::tuple{r.y, r.mean, r.rstd, fx::var_mean<0>(x, 1.0).var};
});
constexpr auto f16_ops = fx::trace([](fx::tensor<fx::f16, 2> x) {
  auto g = fx::ops::gelu(x);
  return std::tuple{g, fx::sum<-1>(fx::convert<float>(x)), fx::amax<0>(x)};
});
constexpr auto int_ops = fx::trace([](fx::tensor<std::int32_t, 2> i, fx::tensor<std::int64_t, 2> j) {
  auto q = i / 3 + fx::abs(i) * 2;
  return std::tuple{q, fx::sum<-1>(q), fx::sum<0>(j), fx::amax<-1>(j - fx::convert<std::int64_t>(i))};
});
constexpr auto bool_ops = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 2> y) {
  auto p = x > y;
  return std::tuple{p, fx::where(p, x, y), fx::amax<-1>(p), fx::sum<0>(fx::convert<std::int32_t>(p))};
});
constexpr auto matmul = fx::trace([](fx::tensor<float, 2> a, fx::tensor<float, 2> b) { return fx::matmul(a, b); });
constexpr auto times_two = fx::trace([](fx::tensor<bf, 2> x) { return fx::convert<bf>(fx::convert<float>(x) * 2.0f); });

}  // namespace

TEST_CASE("cuda: misaligned, strided and stride-0 views", "[cuda]") {
  const int R = 37, C = 515;
  const auto x = random_tensor<bf, 2>({R, C}), b = random_tensor<bf, 2>({R, C});
  const auto ref = fx::evaluate(axpb, fx::reference, x, b);
  const auto plan = fx::partition(axpb);
  stream_guard s;
  arena a;
  auto check = [&](fx::view<const bf, 2> dx, fx::view<const bf, 2> db, fx::view<bf, 2> out, const char* what) {
    fx::run(plan, fx::cuda_stream{s}, fx::inputs(dx, db), fx::outputs(out));
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    // gather the output view back to a contiguous host tensor
    fx::index_t span = 0;
    for (int i = 0; i < 2; ++i) span += (out.extent(i) - 1) * out.stride(i);
    std::vector<bf> raw(static_cast<std::size_t>(span + 1));
    CUDA_REQUIRE(cudaMemcpy(raw.data(), out.data(), raw.size() * sizeof(bf), cudaMemcpyDeviceToHost));
    fx::host_tensor<bf, 2> got({R, C});
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) got(i, j) = raw[static_cast<std::size_t>(i * out.stride(0) + j * out.stride(1))];
    require_close(got, ref, what);
  };
  auto contiguous_out = [&](int offset) {
    bf* p = static_cast<bf*>(a.bytes((R * C + 8) * sizeof(bf))) + offset;
    return fx::view<bf, 2>(p, {R, C});
  };
  check(a.copy_strided(x, {C, 1}, 1), a.copy_strided(b, {C, 1}, 3), contiguous_out(1), "misaligned bases");
  check(a.copy_strided(x, {C + 5, 1}), a.copy_strided(b, {C, 1}), contiguous_out(0), "padded rows");
  check(a.copy_strided(x, {1, R}), a.copy_strided(b, {2 * C, 2}), contiguous_out(0), "transposed and strided inputs");
  {
    bf* p = static_cast<bf*>(a.bytes(static_cast<std::size_t>(2 * R * C) * sizeof(bf)));
    check(a.copy_strided(x, {C, 1}), a.copy_strided(b, {C, 1}), fx::view<bf, 2>(p, {R, C}, {1, 2 * R}), "strided output");
  }
  // stride 0: every row of b is its first row
  fx::host_tensor<bf, 2> b0({R, C});
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) b0(i, j) = b(0, j);
  const auto ref0 = fx::evaluate(axpb, fx::reference, x, b0);
  fx::host_tensor<bf, 2> row({1, C});
  for (int j = 0; j < C; ++j) row(0, j) = b(0, j);
  const auto drow = a.copy(row);
  const fx::view<const bf, 2> bcast(drow.data(), {R, C}, {0, 1});
  auto out = contiguous_out(0);
  fx::run(plan, fx::cuda_stream{s}, fx::inputs(a.copy_strided(x, {C, 1}), bcast), fx::outputs(out));
  fx::host_tensor<bf, 2> got({R, C});
  a.back(got, out);
  require_close(got, ref0, "stride-0 input");
  // a row kernel on misaligned and strided rows
  const auto w = random_tensor<bf, 1>({C});
  const auto rref = fx::evaluate(rms_norm, fx::reference, x, w);
  auto rout = contiguous_out(1);
  fx::run(fx::partition(rms_norm), fx::cuda_stream{s}, fx::inputs(a.copy_strided(x, {C + 3, 1}, 1), a.copy(w)), fx::outputs(rout));
  fx::host_tensor<bf, 2> rgot({R, C});
  CUDA_REQUIRE(cudaMemcpy(rgot.data(), rout.data(), static_cast<std::size_t>(R * C) * sizeof(bf), cudaMemcpyDeviceToHost));
  require_close(rgot, rref, "row kernel on misaligned, padded rows");
}

TEST_CASE("cuda: more rows than 8 x SMs, rows beyond 48 KiB of shared memory, rows too long to cache", "[cuda]") {
  const int rows = 8 * fxt::cuda::device_sms() * 2 + 3;
  check_device("rms_norm, many rows", fx::partition(rms_norm), rms_norm, random_tensor<bf, 2>({rows, 256}),
               random_tensor<bf, 1>({256}));
  // x and dy rows of 12288 bf16: 48 KiB of cache per row group, and more with the peel
  const int C = 12288;
  const auto x = random_tensor<bf, 2>({40, C});
  const auto w = random_tensor<bf, 1>({C}), b = random_tensor<bf, 1>({C});
  const auto fwd = fx::evaluate(decltype(ln_grad)::forward, fx::reference, x, w, b);
  const auto dy = random_tensor<bf, 2>({40, C});
  std::apply([&](const auto&... f) {
    check_device("layer_norm backward, 12288-long rows", fx::partition(decltype(ln_grad)::backward), decltype(ln_grad)::backward, x, w,
                 b, f..., dy);
  }, fwd);
  check_device("softmax over 150000-long f32 rows (no cache)", fx::partition(softmax), softmax,
               random_tensor<float, 2>({3, 150000}, -5, 5));
}

TEST_CASE("cuda: few long rows, cut into segments across groups", "[cuda]") {
  check_device("softmax over 2 rows of 1000000 f32", fx::partition(softmax), softmax,
               random_tensor<float, 2>({2, 1000000}, -5, 5));
  check_device("rms_norm over 3 rows of 100000 bf16", fx::partition(rms_norm), rms_norm,
               random_tensor<bf, 2>({3, 100000}), random_tensor<bf, 1>({100000}));
  const auto x = random_tensor<bf, 2>({1, 300000});
  const auto w = random_tensor<bf, 1>({300000}), b = random_tensor<bf, 1>({300000});
  const auto fwd = fx::evaluate(decltype(ln_grad)::forward, fx::reference, x, w, b);
  check_device("layer_norm forward over one row of 300000", fx::partition(decltype(ln_grad)::forward), decltype(ln_grad)::forward,
               x, w, b);
  std::apply([&](const auto&... f) {
    check_device("layer_norm backward over one row of 300000 (two levels)", fx::partition(decltype(ln_grad)::backward),
                 decltype(ln_grad)::backward, x, w, b, f..., random_tensor<bf, 2>({1, 300000}));
  }, fwd);
}

TEST_CASE("cuda: f64, f16, integer and bool dtypes", "[cuda]") {
  check_device("layer_norm and column var in f64", fx::partition(ln_f64), ln_f64, random_tensor<double, 2>({300, 777}, 1e4, 1e4 + 1),
               random_tensor<double, 1>({777}), random_tensor<double, 1>({777}));
  check_device("f16 gelu, sum, column amax", fx::partition(f16_ops), f16_ops, random_tensor<fx::f16, 2>({50, 333}, -4, 4));
  fx::host_tensor<std::int32_t, 2> i({45, 130});
  fx::host_tensor<std::int64_t, 2> j({45, 130});
  std::mt19937 g(5);
  std::uniform_int_distribution<std::int64_t> d(-100000, 100000);
  for (auto& v : i.values()) v = static_cast<std::int32_t>(d(g));
  for (auto& v : j.values()) v = d(g) * 40000;
  check_device("integer ops and reductions", fx::partition(int_ops), int_ops, i, j);
  check_device("bool ops and reductions", fx::partition(bool_ops), bool_ops, random_tensor<float, 2>({70, 129}),
               random_tensor<float, 2>({70, 129}));
}

TEST_CASE("cuda: zero-size tensors and matmul with k = 0", "[cuda]") {
  check_device("pointwise, no rows", fx::partition(axpb), axpb, random_tensor<bf, 2>({0, 64}), random_tensor<bf, 2>({0, 64}));
  check_device("row kernel, empty rows", fx::partition(rms_norm), rms_norm, random_tensor<bf, 2>({5, 0}), random_tensor<bf, 1>({0}));
  check_device("softmax, no rows", fx::partition(softmax), softmax, random_tensor<float, 2>({0, 100}));
  check_device("matmul, k = 0", fx::partition(matmul), matmul, random_tensor<float, 2>({7, 0}), random_tensor<float, 2>({0, 9}));
  check_device("matmul, m = 0", fx::partition(matmul), matmul, random_tensor<float, 2>({0, 5}), random_tensor<float, 2>({5, 9}));
}

TEST_CASE("cuda: a pointwise group over more than 2^31 elements", "[cuda][large]") {
  const fx::index_t R = 1 << 16, C = (1 << 15) + 16;  // 2^31 + 2^20 elements
  const std::size_t n = static_cast<std::size_t>(R * C), bytes = n * sizeof(bf);
  std::size_t free_bytes = 0, total = 0;
  CUDA_REQUIRE(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * bytes + (std::size_t{1} << 30)) {
    WARN("not enough device memory for 2 x " << bytes << " bytes: test not run");
    return;
  }
  arena a;
  bf* x = static_cast<bf*>(a.bytes(bytes));
  bf* y = static_cast<bf*>(a.bytes(bytes));
  CUDA_REQUIRE(cudaMemset(x, 0x3f, bytes));  // every element 0x3f3f
  CUDA_REQUIRE(cudaMemset(y, 0, bytes));
  stream_guard s;
  fx::run(fx::partition(times_two), fx::cuda_stream{s}, fx::inputs(fx::view<const bf, 2>(x, {R, C})), fx::outputs(fx::view<bf, 2>(y, {R, C})));
  CUDA_REQUIRE(cudaStreamSynchronize(s));
  const float expected = static_cast<float>(bf(2.0f * static_cast<float>(bf::from_bits(0x3f3f))));
  std::vector<bf> probe(4096);
  for (const std::size_t at : {std::size_t{0}, n / 2 - 2048, (std::size_t{1} << 31) - 2048, n - 4096}) {
    CUDA_REQUIRE(cudaMemcpy(probe.data(), y + at, probe.size() * sizeof(bf), cudaMemcpyDeviceToHost));
    for (std::size_t k = 0; k < probe.size(); ++k) {
      INFO("element " << at + k);
      REQUIRE(static_cast<float>(probe[k]) == expected);
    }
  }
}
