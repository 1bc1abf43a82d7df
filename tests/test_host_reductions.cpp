// The fused host executor against the reference under the fused,
// greedy-claim and unfused policies: row reductions (LayerNorm, softmax),
// column reductions with input-shaped writes, zero-size and non-contiguous
// inputs, errors, and plans run concurrently. (test_host_executor.cpp: the
// pointwise groups, remaps, matmul, scalars, in place.)
#include "executor_check.hpp"

#include <thread>
#include <cstdint>
#include <cstring>

using namespace fxt;
namespace fx = fusex;

namespace {

constexpr auto layer_norm = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<float, 1> w, fx::tensor<float, 1> b,
                                         fx::scalar<float> eps) {
  auto r = fx::ops::layer_norm(x, w, b, eps);
  return std::tuple{r.y, r.mean, r.rstd};
});
static_assert(fx::partition(layer_norm).kernels() == 1);

constexpr auto softmax = fx::trace([](fx::tensor<float, 3> x) {
  auto m = fx::amax<-1>(x, fx::keepdim);
  auto e = fx::exp(x - m);
  return e / fx::sum<-1>(e, fx::keepdim);
});
static_assert(fx::partition(softmax).kernels() == 1);

constexpr auto column_sums = fx::trace([](fx::tensor<float, 2> dy, fx::tensor<float, 2> x) {
  auto [var, mean] = fx::var_mean<0>(x, 1.0);
  return std::tuple{fx::sum<0>(dy * x), fx::sum<0>(dy, fx::keepdim), dy * 2.0f, var, mean};
});
static_assert(fx::partition(column_sums).kernels() == 1);

// Over the middle axis of a rank-3 value, with a second reduction that reads
// the first (centred second moment) and an amax.
constexpr auto middle_axis = fx::trace([](fx::tensor<float, 3> x) {
  auto m = fx::sum<1>(x, fx::keepdim) / fx::convert<float>(fx::index_value<std::int64_t>(x.extent<1>(), x));
  auto c = x - m;
  return std::tuple{fx::sum<1>(c * c), fx::amax<1>(x), m};
});

}  // namespace

TEST_CASE("host executor: row reductions (LayerNorm, softmax)", "[executor][host]") {
  auto x = random_tensor<fx::bf16, 2>({37, 301});
  auto w = random_tensor<float, 1>({301}), b = random_tensor<float, 1>({301});
  check_policies(layer_norm, "layer_norm", x, w, b, 1e-5f);
  auto s = random_tensor<float, 3>({3, 5, 131}, -6, 6);
  check_policies(softmax, "softmax", s);
  // a row of length 0 and rows of length 1
  check_policies(softmax, "softmax empty rows", fx::view<const float, 3>(nullptr, {2, 3, 0}));
  check_policies(softmax, "softmax unit rows", random_tensor<float, 3>({2, 3, 1}));
}

TEST_CASE("host executor: column reductions with input-shaped writes", "[executor][host]") {
  auto dy = random_tensor<float, 2>({70, 19}), x = random_tensor<float, 2>({70, 19});
  check_policies(column_sums, "column_sums", dy, x);
  // transposed (non-contiguous) inputs
  std::vector<float> store(19 * 70);
  for (auto& v : store) v = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng()));
  fx::view<const float, 2> xt(store.data(), {70, 19}, {1, 70});
  check_policies(column_sums, "column_sums transposed", dy, xt);
}

TEST_CASE("host executor: column reductions over many row blocks and column tiles", "[executor][host]") {
  // 1000 rows: the host cuts them into blocks merged in order; 700 columns:
  // several tiles of chunks, the last one partial.
  auto dy = random_tensor<float, 2>({1000, 700}), x = random_tensor<float, 2>({1000, 700}, 50, 54);
  check_policies(column_sums, "column_sums 1000 x 700", dy, x);
  // Wider than a tile (8192 positions): on 1 thread two tiles, the second
  // partial; 40 rows are one row block, so on 2 and 3 threads the tiles
  // narrow (to 2048 and 1024 positions) to give every thread work.
  auto wide = random_tensor<float, 2>({40, 9000}), wx = random_tensor<float, 2>({40, 9000}, 50, 54);
  const auto want = fx::evaluate(column_sums, fx::reference, wide, wx);
  for (const int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    require_all_close(fx::evaluate(fx::partition(column_sums), fx::host{threads}, wide, wx), want, "column_sums 40 x 9000");
  }
  check_policies(middle_axis, "middle axis", random_tensor<float, 3>({3, 517, 45}));
  check_policies(middle_axis, "middle axis of extent 1", random_tensor<float, 3>({3, 1, 45}));
  check_policies(column_sums, "no rows", fx::view<const float, 2>(nullptr, {0, 5}), fx::view<const float, 2>(nullptr, {0, 5}));
}

namespace {
// dx in bf16, dweight and dbias summed over rows in f32 and stored in bf16:
// sums whose values only reach bf16 outputs accumulate in f32 blocks on the
// host (row sums over the normalised axis and column sums over the rows).
constexpr auto layer_norm_bwd = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 1> w,
                                             fx::tensor<fx::bf16, 2> dy) {
  auto [var, mean] = fx::var_mean<-1>(fx::convert<float>(x), 0.0, fx::keepdim);
  auto [dx, dw, db] = fx::ops::layer_norm_backward(x, w, mean, fx::rsqrt(var + 1e-5f), dy);
  return std::tuple{dx, dw, db};
});
}  // namespace

TEST_CASE("host executor: bf16 LayerNorm backward (f32 block sums) against the reference", "[executor][host]") {
  // 300 rows: column sums in several row blocks; 40 rows: one block, whose
  // states are finished a register at a time; 517 columns: a partial last
  // register in every row. Large means make the sums cancel.
  const int C = 517;
  for (const int R : {300, 40}) {
    INFO(R << " rows");
    auto x = random_tensor<fx::bf16, 2>({R, C}, 20, 24), dy = random_tensor<fx::bf16, 2>({R, C});
    check_policies(layer_norm_bwd, "layer_norm backward", x, random_tensor<fx::bf16, 1>({C}), dy);
  }
}

namespace {
// The mean square in f32 (its own accuracy checked) beside RMSNorm's y: a
// sum of squares, which the host accumulates in f32 blocks of registers.
constexpr auto rms_norm = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<float, 1> w, fx::scalar<float> eps) {
  auto xf = fx::convert<float>(x);
  return std::tuple{fx::sum<-1>(xf * xf, fx::keepdim), fx::ops::rms_norm(x, w, eps)};
});
static_assert(fx::partition(rms_norm).kernels() == 1);
}  // namespace

TEST_CASE("host executor: rows of whole register blocks (RMSNorm, LayerNorm) against the reference",
          "[executor][host]") {
  // 1100 columns: two whole blocks of 2 x 16 registers, then single
  // registers and a partial one.
  const int R = 9, C = 1100;
  auto w = random_tensor<float, 1>({C}), b = random_tensor<float, 1>({C});
  check_policies(rms_norm, "rms_norm", random_tensor<fx::bf16, 2>({R, C}), w, 1e-5f);
  check_policies(layer_norm, "layer_norm", random_tensor<fx::bf16, 2>({R, C}), w, b, 1e-5f);
  // large means: Welford's blocks against the reference's two passes
  check_policies(layer_norm, "layer_norm, large mean", random_tensor<fx::bf16, 2>({R, C}, 200, 204), w, b, 1e-5f);
}

TEST_CASE("host executor: bf16 LayerNorm rows whose mean nears the drift limit, summed as bf16 pairs",
          "[executor][host]") {
  // With AVX512_BF16 the statistics of a bf16 row take its values as bf16
  // pairs, unshifted: the f32 blocks' rounding, where there is any, grows
  // with mean^2 / variance, up to the drift limit (a lane's ratio of 4),
  // past which the row runs again centred on its mean. Rows from ratio 0 to
  // far past the limit, mean and rstd in f32 against the reference; 4133
  // columns: eight whole blocks, single registers and a partial one.
  const int C = 4133;
  const double ratios[] = {0, 0.5, 1, 1.5, 1.9, 1.99, 2.01, 2.5, 8, -1.9, -3};
  const int R = static_cast<int>(std::size(ratios));
  fx::host_tensor<fx::bf16, 2> x({R, C});
  std::uniform_real_distribution<double> u(-std::sqrt(3.0), std::sqrt(3.0));  // variance 1
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) x.values()[i * C + j] = from_double<fx::bf16>(ratios[i] + u(rng()));
  const auto w = random_tensor<float, 1>({C}), b = random_tensor<float, 1>({C});
  check_policies(layer_norm, "layer_norm, means near the drift limit", x, w, b, 1e-5f);
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    require_all_close(fx::evaluate(fx::partition(layer_norm), fx::host{threads}, x, w, b, 1e-5f),
                      fx::evaluate(layer_norm, fx::reference, x, w, b, 1e-5f), "layer_norm, means near the drift limit");
  }
}

TEST_CASE("host executor: a sum of squares past f32's range sums again in f64", "[executor][host]") {
  // squares of 1.5e19 are finite in f32 (2.25e38), but 16 of them are not:
  // an f32 block overflows where the reference's f64 sum does not. Rows
  // with an infinity or a NaN keep theirs.
  const int R = 4, C = 1100;
  fx::host_tensor<fx::bf16, 2> x({R, C});
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) x.values()[i * C + j] = from_double<fx::bf16>((j % 2 ? 1.5e19 : -1.4e19) * (i + 1) / 4);
  x.values()[2 * C + 700] = from_double<fx::bf16>(INFINITY);
  x.values()[3 * C + 5] = from_double<fx::bf16>(NAN);
  const auto ref = fx::evaluate(rms_norm, fx::reference, x, random_tensor<float, 1>({C}), 1e-5f);
  // the case is the one meant: row 1's blocks overflow, its y does not
  REQUIRE(std::isfinite(to_double(std::get<1>(ref).values()[C])));
  REQUIRE(to_double(std::get<1>(ref).values()[C]) != 0);
  check_policies(rms_norm, "rms_norm, squares past f32", x, random_tensor<float, 1>({C}), 1e-5f);
}

TEST_CASE("host executor: LayerNorm's mean over rows with an infinity or a NaN is the reference's",
          "[executor][host]") {
  // Welford's mean of a lane that met +inf goes NaN (inf - inf), where the
  // true mean is +inf: the host must notice and sum the mean again. Rows:
  // +inf in a block, -inf in a block, a NaN, both infinities, +inf in the
  // scalar tail, and finite values whose differences (row 5) or their
  // squares (row 6: the variance too, whose rstd is then 0) overflow f32.
  const int R = 7, C = 1100;
  auto x = random_tensor<fx::bf16, 2>({R, C});
  x.values()[0 * C + 5] = from_double<fx::bf16>(INFINITY);
  x.values()[1 * C + 300] = from_double<fx::bf16>(-INFINITY);
  x.values()[2 * C + 17] = from_double<fx::bf16>(NAN);
  x.values()[3 * C + 40] = from_double<fx::bf16>(INFINITY);
  x.values()[3 * C + 900] = from_double<fx::bf16>(-INFINITY);
  x.values()[4 * C + 1090] = from_double<fx::bf16>(INFINITY);
  for (int j = 0; j < C; ++j) {
    x.values()[5 * C + j] = from_double<fx::bf16>(j % 2 ? 3e38 : -3e38);
    x.values()[6 * C + j] = from_double<fx::bf16>(j % 2 ? 1e20 : 2e20);
  }
  const auto w = random_tensor<float, 1>({C}), b = random_tensor<float, 1>({C});
  const auto ref = fx::evaluate(layer_norm, fx::reference, x, w, b, 1e-5f);
  // the cases are the ones meant
  REQUIRE(std::isinf(std::get<1>(ref).values()[0]));
  REQUIRE(std::isinf(std::get<1>(ref).values()[1]));
  REQUIRE(std::isnan(std::get<1>(ref).values()[3]));
  REQUIRE(std::isinf(std::get<1>(ref).values()[4]));
  REQUIRE(std::isfinite(std::get<1>(ref).values()[5]));
  REQUIRE(std::isfinite(to_double(std::get<0>(ref).values()[5 * C])));
  REQUIRE(std::isfinite(std::get<1>(ref).values()[6]));
  check_policies(layer_norm, "layer_norm, rows with infinities", x, w, b, 1e-5f);
}

namespace {
// A bf16 sum over rows: the host keeps it in f32 tiles of 16 rows.
constexpr auto column_products = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 2> y) {
  return fx::convert<fx::bf16>(fx::sum<0>(fx::convert<float>(x) * fx::convert<float>(y)));
});
}  // namespace

TEST_CASE("host executor: column sums past f32's range within a tile sum again in f64", "[executor][host]") {
  // Products of 1e38 in runs of 16 rows of one sign, then 16 of the other:
  // every f32 tile of 16 rows overflows, the f64 sum is small.
  const int R = 256, C = 40;
  fx::host_tensor<fx::bf16, 2> x({R, C}), y({R, C});
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      x.values()[i * C + j] = from_double<fx::bf16>((i / 16) % 2 ? -1e19 : 1e19);
      y.values()[i * C + j] = from_double<fx::bf16>(i == 3 ? 1e19 + 1e17 * j : 1e19);
    }
  const auto ref = fx::evaluate(column_products, fx::reference, x, y);
  REQUIRE(std::isfinite(to_double(ref.values()[1])));  // the case is the one meant
  check_policies(column_products, "column products past f32", x, y);
}

namespace {
// A sum over a head group, kept as an axis of 1 (a GQA backward's dk):
// the column group's write is the reduction's own value.
constexpr auto group_sum = fx::trace([](fx::tensor<fx::bf16, 3> x) { return fx::sum<1>(x, fx::keepdim); });
}  // namespace

TEST_CASE("host executor: a column sum's own value, finished into a dense output or written by a pass into a strided one",
          "[executor][host]") {
  // Dense outputs take the sums as each tile finishes them; a strided
  // output view takes the write pass. 300 lanes: whole registers; 17: a
  // partial one; 70 rows to sum: two row blocks (no direct finish).
  for (const auto ext : {fx::extents_array<3>{4, 6, 300}, fx::extents_array<3>{3, 5, 17}, fx::extents_array<3>{2, 130, 40}}) {
    auto x = random_tensor<fx::bf16, 3>(ext);
    const auto ref = fx::evaluate(group_sum, fx::reference, x);
    const fx::index_t n0 = ext[0], L = ext[2];
    for (const int threads : {1, 2, 3}) {
      INFO(ext[0] << " x " << ext[1] << " x " << ext[2] << ", " << threads << " threads");
      require_all_close(fx::evaluate(fx::partition(group_sum), fx::host{threads}, x), ref, "group sum, dense");
      std::vector<fx::bf16> store(static_cast<std::size_t>(n0 * L));
      fx::view<fx::bf16, 3> out(store.data(), {n0, 1, L}, {1, n0 * L, n0});  // lanes n0 apart
      fx::run(fx::partition(group_sum), fx::host{threads}, fx::inputs(x.as_view()), fx::outputs(out));
      require_all_close(gathered(out), ref, "group sum, strided");
    }
  }
}

TEST_CASE("host executor: the plan's errors are the reference's errors", "[executor][host]") {
  auto dy = random_tensor<float, 2>({7, 3}), x = random_tensor<float, 2>({7, 4});
  REQUIRE_THROWS_AS(fx::evaluate(fx::partition(column_sums), fx::host{}, dy, x), fx::shape_error);
}

TEST_CASE("host executor: plans run concurrently from several threads, each into its own outputs", "[executor][host]") {
  // Each thread runs the LayerNorm and softmax plans on its own inputs; the
  // results must equal, bit for bit, the same plans run alone (the host
  // executor's reductions combine in a fixed order, whatever the threads).
  constexpr auto ln_plan = fx::partition(layer_norm);
  constexpr auto sm_plan = fx::partition(softmax);
  constexpr int workers = 4;
  std::vector<fx::host_tensor<fx::bf16, 2>> xs;
  std::vector<fx::host_tensor<float, 3>> ss;
  for (int t = 0; t < workers; ++t) {
    xs.push_back(random_tensor<fx::bf16, 2>({64 + t, 509}));
    ss.push_back(random_tensor<float, 3>({3, 7 + t, 257}, -6, 6));
  }
  const auto w = random_tensor<float, 1>({509}), b = random_tensor<float, 1>({509});
  std::vector<decltype(fx::evaluate(ln_plan, fx::host{}, xs[0], w, b, 1e-5f))> ln_alone;
  std::vector<fx::host_tensor<float, 3>> sm_alone;
  for (int t = 0; t < workers; ++t) {
    ln_alone.push_back(fx::evaluate(ln_plan, fx::host{}, xs[t], w, b, 1e-5f));
    sm_alone.push_back(fx::evaluate(sm_plan, fx::host{}, ss[t]));
  }
  std::vector<int> mismatches(workers, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < workers; ++t)
    pool.emplace_back([&, t] {
      for (int rep = 0; rep < 8; ++rep) {
        auto [y, mean, rstd] = fx::evaluate(ln_plan, fx::host{2}, xs[t], w, b, 1e-5f);
        auto s = fx::evaluate(sm_plan, fx::host{2}, ss[t]);
        const auto& [y0, mean0, rstd0] = ln_alone[t];
        for (fx::index_t i = 0; i < y.size(); ++i) mismatches[t] += y.data()[i].bits != y0.data()[i].bits;
        for (fx::index_t i = 0; i < mean.size(); ++i)
          mismatches[t] += mean.data()[i] != mean0.data()[i] || rstd.data()[i] != rstd0.data()[i];
        for (fx::index_t i = 0; i < s.size(); ++i) mismatches[t] += s.data()[i] != sm_alone[t].data()[i];
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < workers; ++t) CHECK(mismatches[t] == 0);
}

namespace {
// 16-bit weights the same in every row, which the host reads as floats
// widened once per launch (engine.hpp, stage_arena): a norm's bf16 weight
// and bias, and a pointwise scale whose rows are replayed (with a cat along
// the lanes: one row's segments read different ranges of the weight).
template <class T>
constexpr auto layer_norm_16 = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  auto r = fx::ops::layer_norm(x, w, b, 1e-5f);
  return std::tuple{r.y, r.mean, r.rstd};
});
constexpr auto rms_norm_16 = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 1> w) {
  return fx::ops::rms_norm(x, w, 1e-5f);
});
constexpr auto scale_cat = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 1> w) {
  auto y = x * fx::broadcast_in_dim<1>(w, {x.extent<0>(), x.extent<1>()});
  auto head = fx::slice<1>(y, 0, 21);
  return std::tuple{y, fx::cat<1>(head, x, head * 2.0f)};
});
// The fused plan on 1, 2 and 3 threads against the reference (one policy:
// the staging is the engine's, whatever the grouping).
template <class P, class... Args>
void check_fused(P prog, const char* name, const Args&... args) {
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  for (const int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    require_all_close(fx::evaluate(fx::partition(prog), fx::host{threads}, args...), ref, name);
  }
}
}  // namespace

TEST_CASE("host executor: 16-bit weights read alike in every row (staged as floats) against the reference",
          "[executor][host]") {
  // 517 columns: a partial register closes every row
  for (const int C : {517, 1024}) {
    INFO(C << " columns");
    auto x = random_tensor<fx::bf16, 2>({70, C});
    auto w = random_tensor<fx::bf16, 1>({C}), b = random_tensor<fx::bf16, 1>({C});
    check_fused(layer_norm_16<fx::bf16>, "layer_norm, bf16 weight and bias", x, w, b);
    check_fused(rms_norm_16, "rms_norm, bf16 weight", x, w);
    check_fused(layer_norm_16<fx::f16>, "layer_norm, f16", random_tensor<fx::f16, 2>({70, C}),
                random_tensor<fx::f16, 1>({C}), random_tensor<fx::f16, 1>({C}));
    check_fused(scale_cat, "scale and cat", x, w);
  }
  // a weight read at a stride (every other element of a buffer)
  const int C = 300;
  std::vector<fx::bf16> every_other(2 * C);
  for (auto& v : every_other) v = fx::bf16(static_cast<float>(std::uniform_real_distribution<double>(-2, 2)(rng())));
  const fx::view<const fx::bf16, 1> strided(every_other.data(), {C}, {2});
  auto x = random_tensor<fx::bf16, 2>({40, C});
  auto b = random_tensor<fx::bf16, 1>({C});
  check_fused(layer_norm_16<fx::bf16>, "layer_norm, strided weight", x, strided, b);
  check_fused(scale_cat, "scale and cat, strided weight", x, strided);
  // Threads of one row and of two (each thread stages its own floats): on
  // 3 threads, 5 long rows are shares of 1, 2 and 2 rows, 3 rows one each.
  for (const int R : {5, 3}) {
    INFO(R << " rows of 16384");
    check_fused(layer_norm_16<fx::bf16>, "layer_norm, long rows", random_tensor<fx::bf16, 2>({R, 16384}),
                random_tensor<fx::bf16, 1>({16384}), random_tensor<fx::bf16, 1>({16384}));
  }
}

TEST_CASE("host executor: a staged weight changed between launches is read again", "[executor][host]") {
  // The same addresses, new values: a launch must not reuse the floats an
  // earlier launch widened.
  const int R = 64, C = 256;
  auto x = random_tensor<fx::bf16, 2>({R, C});
  auto w = random_tensor<fx::bf16, 1>({C}), b = random_tensor<fx::bf16, 1>({C});
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    for (int launch = 0; launch < 3; ++launch) {
      INFO("launch " << launch);
      require_all_close(fx::evaluate(fx::partition(layer_norm_16<fx::bf16>), fx::host{threads}, x, w, b),
                        fx::evaluate(layer_norm_16<fx::bf16>, fx::reference, x, w, b), "layer_norm");
      require_all_close(fx::evaluate(fx::partition(scale_cat), fx::host{threads}, x, w),
                        fx::evaluate(scale_cat, fx::reference, x, w), "scale and cat");
      for (auto& v : w.values()) v = fx::bf16(-2.0f * static_cast<float>(v) + 0.5f);
      for (auto& v : b.values()) v = fx::bf16(static_cast<float>(v) - 1.0f);
    }
  }
}

namespace {
// Moments of f32 rows: full mantissas, whose squares round in the host's
// f32 block sums.
constexpr auto row_moments = fx::trace([](fx::tensor<float, 2> x) {
  auto [var, mean] = fx::var_mean<-1>(x, 0.0);
  return std::tuple{var, mean};
});
}  // namespace

TEST_CASE("host executor: moments of rows that drift from their first values are the reference's",
          "[executor][host]") {
  // The host sums each lane's v - K in f32 blocks, K the mean of the lane's
  // first 16 values (the row's first 512 columns), and the blocks' rounding
  // grows with (K - mean)^2 / variance, up to (values / 16) for a lane.
  // Rows 0 and 2 are one value in their first 512 columns and another in
  // the rest, whose squares and sums of 16 round alike in every block (a
  // lane's ratio near 4000), so
  // the host must run them again centred on their mean. Row 1 is an
  // ordinary one.
  const int R = 3, C = 512 * 4000;
  // 256 (1 + 3 / 2^13): its square rounds in f32, the variance (about 16)
  // is far above the tolerance's absolute term
  const double v = 256 + 3 * std::ldexp(1.0, -5);
  fx::host_tensor<float, 2> x({R, C});
  std::uniform_real_distribution<double> u(-1, 1);
  for (int j = 0; j < C; ++j) {
    x.values()[j] = static_cast<float>(j < 512 ? 0 : v);
    x.values()[C + j] = static_cast<float>(u(rng()));
    x.values()[2 * C + j] = static_cast<float>(j < 512 ? 512 : -v);
  }
  check_fused(row_moments, "moments of drifting rows", x);
}

namespace {
// The fused plan with its outputs streamed past the caches (every launch's
// whole blocks that start on a line) against the reference, and bit for
// bit against the same plan with cached stores, on 1 to 3 threads.
template <class P, class... Args>
void check_streamed(P prog, const char* name, const Args&... args) {
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  for (const int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    const auto streamed = fx::evaluate(fx::partition(prog), fx::host{threads, 1}, args...);
    const auto cached = fx::evaluate(fx::partition(prog), fx::host{threads, SIZE_MAX}, args...);
    require_all_close(streamed, ref, name);
    require_same_bits(streamed, cached, name);
  }
}
}  // namespace

TEST_CASE("host executor: outputs streamed past the caches are the reference's, bit for bit those of cached stores",
          "[executor][host]") {
  // bf16 (rounded two registers a store) and f32 outputs of pointwise, row
  // and column groups; 1032 columns: a bf16 row starts on a line every
  // fourth row, 517: a partial register closes every row.
  for (const int C : {517, 1032}) {
    INFO(C << " columns");
    auto x = random_tensor<fx::bf16, 2>({70, C});
    auto w = random_tensor<fx::bf16, 1>({C}), b = random_tensor<fx::bf16, 1>({C});
    check_streamed(layer_norm_16<fx::bf16>, "layer_norm, bf16", x, w, b);
    check_streamed(scale_cat, "scale and cat", x, w);
    check_streamed(softmax, "softmax, f32", random_tensor<float, 3>({3, 9, C}, -6, 6));
    check_streamed(column_sums, "column sums, f32", random_tensor<float, 2>({70, C}), random_tensor<float, 2>({70, C}));
    check_streamed(layer_norm_bwd, "layer_norm backward, bf16", x, w, random_tensor<fx::bf16, 2>({70, C}));
  }
  // outputs a few bytes past a line: the rows' blocks start on lines in turn
  const int R = 70, C = 1032;
  auto x = random_tensor<fx::bf16, 2>({R, C});
  auto w = random_tensor<fx::bf16, 1>({C});
  const auto ref = fx::evaluate(scale_cat, fx::reference, x, w);
  for (const int offset : {1, 8, 24}) {
    INFO("outputs " << 2 * offset << " bytes past a line");
    fx::host_tensor<fx::bf16, 1> y_buf({R * C + offset}), cat_buf({R * (C + 42) + offset});
    const fx::view<fx::bf16, 2> y(y_buf.data() + offset, {R, C});
    const fx::view<fx::bf16, 2> cat(cat_buf.data() + offset, {R, C + 42});
    fx::run(fx::partition(scale_cat), fx::host{2, 1}, fx::inputs(x.as_view(), w.as_view()), fx::outputs(y, cat));
    require_all_close(std::tuple{gathered(y), gathered(cat)}, ref, "scale and cat, outputs off the lines");
  }
}
