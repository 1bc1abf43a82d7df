// The fused host executor against the reference under the fused,
// greedy-claim and unfused policies: pointwise groups with remaps (RoPE,
// the qkv split), matmul, scalars, integers, and outputs written in place.
// (test_host_reductions.cpp: the reduction groups.)
#include "executor_check.hpp"
#include "shared_programs.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {

constexpr auto rotary = fx::trace([](fx::tensor<float, 4> x, fx::tensor<float, 2> cos, fx::tensor<float, 2> sin, fx::index n) {
  return fx::ops::apply_rope(x, cos, sin, n);
});
static_assert(fx::partition(rotary).kernels() == 1);

constexpr auto mlp = fx::trace([](fx::tensor<fx::bf16, 3> x, fx::tensor<fx::bf16, 2> w1, fx::tensor<fx::bf16, 2> w2) {
  auto h = fx::ops::gelu(fx::matmul(x, w1));
  return fx::matmul(h, w2) + x;
});
static_assert(fx::partition(mlp).kernels() == 4);

// litgpt's qkv split with RoPE, k and v expanded to n_head heads: q's rows
// go time step by time step within a head (row_order: its rows are
// neighbours along time); k's and v's head axis cannot step (heads sit in
// query groups), so it goes outside and their rows step along time.
constexpr auto qkv_rope = fx::trace([](fx::tensor<fx::bf16, 3> qkv, fx::tensor<fx::bf16, 2> cos,
                                       fx::tensor<fx::bf16, 2> sin, fx::index n_head, fx::index groups, fx::index hs,
                                       fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, groups, hs, n});
});

// Its backward: rows of dqkv are dozens of segments (each head's rotated
// halves and pass-through part, k and v summed over their query groups).
constexpr auto qkv_rope_backward = fx::trace([](fx::tensor<fx::bf16, 4> dq, fx::tensor<fx::bf16, 4> dk,
                                                fx::tensor<fx::bf16, 4> dv, fx::tensor<fx::bf16, 2> cos,
                                                fx::tensor<fx::bf16, 2> sin, fx::index n_head, fx::index groups,
                                                fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope_backward<true>(dq, dk, dv, cos, sin, {n_head, groups, hs, n});
});

using fxt::programs::remaps;

constexpr auto scalars_ints = fx::trace([](fx::tensor<std::int32_t, 2> i, fx::tensor<float, 2> x, fx::scalar<float> s) {
  auto q = i / 3 + fx::abs(i);
  auto f = fx::where(x > s, x * s, fx::convert<float>(q));
  return std::tuple{q, fx::convert<std::int64_t>(f), f, fx::sum<1>(i), fx::amax<1>(q)};
});

}  // namespace

TEST_CASE("host executor: remaps with run-time parameters", "[executor][host]") {
  auto q = random_tensor<float, 4>({2, 3, 7, 64});
  auto c = random_tensor<float, 2>({7, 48}), s = random_tensor<float, 2>({7, 48});
  check_policies(rotary, "rotary", q, c, s, 48);
  check_policies(rotary, "rotary full", q, random_tensor<float, 2>({7, 64}), random_tensor<float, 2>({7, 64}), 64);
  auto x = random_tensor<float, 3>({4, 6, 5});
  check_policies(remaps, "remaps", x, 1);
  check_policies(remaps, "remaps zero pad", x, 0);
}

TEST_CASE("host executor: qkv split + RoPE with expanded k and v, on 1 to 3 threads", "[executor][host]") {
  // 8 heads in 2 groups, head size 64, 16 rotary dimensions; odd T, and
  // runs of heads too short to replay (T 2: each head's rows bound one by one)
  for (const int T : {37, 34, 2}) {
    const int nh = 8, G = 2, hs = 64, n = 16;  // 2 x 8 x T rows of 64: enough for threads
    auto qkv = random_tensor<fx::bf16, 3>({2, T, (nh + 2 * G) * hs});
    auto cos = random_tensor<fx::bf16, 2>({T, n}), sin = random_tensor<fx::bf16, 2>({T, n});
    const auto ref = fx::evaluate(qkv_rope, fx::reference, qkv, cos, sin, nh, G, hs, n);
    for (const int threads : {1, 2, 3}) {
      INFO("T " << T << ", " << threads << " threads");
      const auto got = fx::evaluate(fx::partition(qkv_rope), fx::host{threads}, qkv, cos, sin, nh, G, hs, n);
      require_all_close(got, ref, "qkv_split_rope");
      // streamed past the caches (fx::host::stream_writes_from 1): the
      // rotated values and the moved ones (v, the pass-through part) the
      // same bits
      const auto streamed = fx::evaluate(fx::partition(qkv_rope), fx::host{threads, 1}, qkv, cos, sin, nh, G, hs, n);
      require_same_bits(streamed, got, "qkv_split_rope, streamed");
    }
  }
}

// Shapes of the rows the host replays differently (engine.hpp, run_rows):
// qkv rows of 4 KiB, read time step by time step for q, k and v (their rows
// prefetched ahead), and dqkv rows of 8 heads' segments (written in tiles
// of rows, segment by segment), with row counts that leave partial tiles.
TEST_CASE("host executor: qkv split + RoPE, rows a page apart and rows of many segments", "[executor][host]") {
  const int nh = 8, G = 4, hs = 128, n = 32;
  for (const int T : {37, 6}) {
    auto qkv = random_tensor<fx::bf16, 3>({2, T, (nh + 2 * G) * hs});
    auto cos = random_tensor<fx::bf16, 2>({T, n}), sin = random_tensor<fx::bf16, 2>({T, n});
    const fx::extents_array<4> heads{2, nh, T, hs};
    auto dq = random_tensor<fx::bf16, 4>(heads), dk = random_tensor<fx::bf16, 4>(heads),
         dv = random_tensor<fx::bf16, 4>(heads);
    const auto ref = fx::evaluate(qkv_rope, fx::reference, qkv, cos, sin, nh, G, hs, n);
    const auto dref = fx::evaluate(qkv_rope_backward, fx::reference, dq, dk, dv, cos, sin, nh, G, hs, n);
    for (const int threads : {1, 2, 3}) {
      INFO("T " << T << ", " << threads << " threads");
      require_all_close(fx::evaluate(fx::partition(qkv_rope), fx::host{threads}, qkv, cos, sin, nh, G, hs, n), ref,
                        "qkv_split_rope");
      require_all_close(fx::evaluate(fx::partition(qkv_rope_backward), fx::host{threads}, dq, dk, dv, cos, sin, nh, G,
                                     hs, n),
                        dref, "qkv_split_rope_backward");
    }
  }
}

// Outputs in layouts that change how rows are tiled (engine.hpp, run_rows:
// rows of a write in tiles, each segment over a tile's rows): q, k and v
// stored time-major (rows one head apart in a time step, a time step h
// heads apart), or with the head axis strided (no contiguous segment); dqkv
// with padded rows, or stored channel-major. Row counts leave partial tiles.
TEST_CASE("host executor: qkv split + RoPE into strided outputs", "[executor][host]") {
  const int B = 2, nh = 8, G = 2, hs = 64, n = 16, C = (nh + 2 * G) * hs;
  for (const int T : {37, 21}) {
    auto qkv = random_tensor<fx::bf16, 3>({B, T, C});
    auto cos = random_tensor<fx::bf16, 2>({T, n}), sin = random_tensor<fx::bf16, 2>({T, n});
    const fx::extents_array<4> heads{B, nh, T, hs};
    auto dq = random_tensor<fx::bf16, 4>(heads), dk = random_tensor<fx::bf16, 4>(heads),
         dv = random_tensor<fx::bf16, 4>(heads);
    const auto ref = fx::evaluate(qkv_rope, fx::reference, qkv, cos, sin, nh, G, hs, n);
    const auto dref = fx::evaluate(qkv_rope_backward, fx::reference, dq, dk, dv, cos, sin, nh, G, hs, n);
    const std::size_t size = static_cast<std::size_t>(B) * nh * T * hs;
    const fx::extents_array<4> time_major{T * nh * hs, hs, nh * hs, 1}, strided_heads{nh * hs * T, hs * T, 1, T};
    const fx::index_t pad = 5;
    const fx::extents_array<3> padded_rows{T * (C + pad), C + pad, 1}, channel_major{C * T, 1, T};
    for (const int threads : {1, 2, 3}) {
      for (const auto& str : {time_major, strided_heads}) {
        INFO("T " << T << ", " << threads << " threads, q's strides " << str[0] << " " << str[1] << " " << str[2]
                  << " " << str[3]);
        std::vector<fx::bf16> q(size), k(size), v(size);
        fx::view<fx::bf16, 4> qv(q.data(), heads, str), kv(k.data(), heads, str), vv(v.data(), heads, str);
        fx::run(fx::partition(qkv_rope), fx::host{threads}, fx::inputs(qkv.as_view(), cos.as_view(), sin.as_view(), nh, G, hs, n),
                fx::outputs(qv, kv, vv));
        require_all_close(std::tuple{gathered(qv), gathered(kv), gathered(vv)}, ref, "qkv_split_rope, strided");
      }
      for (const auto& str : {padded_rows, channel_major}) {
        INFO("T " << T << ", " << threads << " threads, dqkv's strides " << str[0] << " " << str[1] << " " << str[2]);
        std::vector<fx::bf16> store(static_cast<std::size_t>(B) * T * (C + pad));
        fx::view<fx::bf16, 3> dqkv(store.data(), {B, T, C}, str);
        fx::run(fx::partition(qkv_rope_backward), fx::host{threads},
                fx::inputs(dq.as_view(), dk.as_view(), dv.as_view(), cos.as_view(), sin.as_view(), nh, G, hs, n),
                fx::outputs(dqkv));
        require_all_close(gathered(dqkv), dref, "qkv_split_rope_backward, strided");
      }
    }
  }
}

namespace {
constexpr auto scale_bf16 = fx::trace([](fx::tensor<fx::bf16, 2> x) { return x * 0x1p-20f; });
}  // namespace

// Whole registers are rounded to bf16 four at a time with one subnormal test
// for the four: a subnormal result in any register of a block, or in the
// partial register after the blocks, rounds as bf16::from_float rounds it
// (the one-instruction conversion would flush it to zero).
TEST_CASE("host executor: bf16 results that are subnormal, in every register of a block", "[executor][host]") {
  const int C = 4 * 16 * 3 + 7;
  auto x = random_tensor<fx::bf16, 2>({2, C});
  // x * 2^-20 is a float subnormal for |x| below 2^-106
  for (const int j : {5, 63, 64 + 16, 128 + 47, C - 2}) x(0, j) = fx::bf16(-0x1.3p-110f);
  for (const int j : {0, 64 + 33, C - 1}) x(1, j) = fx::bf16(0x1.7p-115f);
  fx::host_tensor<fx::bf16, 2> y({2, C});
  fx::run(fx::partition(scale_bf16), fx::host{}, fx::inputs(x.as_view()), fx::outputs(y.as_view()));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < C; ++j) {
      INFO("element (" << i << ", " << j << ") of x " << static_cast<float>(x(i, j)));
      REQUIRE(y(i, j).bits == fx::bf16(static_cast<float>(x(i, j)) * 0x1p-20f).bits);
    }
}

TEST_CASE("host executor: matmul groups between fused groups", "[executor][host]") {
  auto x = random_tensor<fx::bf16, 3>({2, 9, 16});
  auto w1 = random_tensor<fx::bf16, 2>({16, 40}), w2 = random_tensor<fx::bf16, 2>({40, 16});
  check_policies(mlp, "mlp", x, w1, w2);
}

TEST_CASE("host executor: scalars, integers, where", "[executor][host]") {
  fx::host_tensor<std::int32_t, 2> i({4, 9});
  std::uniform_int_distribution<int> d(-50, 50);
  for (auto& v : i.values()) v = d(rng());
  auto x = random_tensor<float, 2>({4, 9});
  check_policies(scalars_ints, "scalars_ints", i, x, 0.25f);
}

namespace {
constexpr auto axpy_exp = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 2> y) { return fx::exp(x) * 2.0f + y; });
constexpr auto reads_by_reduction = fx::trace([](fx::tensor<float, 2> x) { return std::tuple{x * 2.0f, fx::sum<1>(x)}; });
constexpr auto reads_by_remap = fx::trace([](fx::tensor<float, 2> x) { return x + fx::permute<1, 0>(x); });
constexpr auto read_elsewhere = fx::trace([](fx::tensor<float, 2> x) { return std::tuple{x * 2.0f, fx::sin(x)}; });
}  // namespace

TEST_CASE("in place: an elementwise output over its argument, on every executor", "[executor][host][in-place]") {
  const int R = 7, C = 37;
  const auto x = random_tensor<float, 2>({R, C});
  const auto y0 = random_tensor<float, 2>({R, C});
  // y's storage with padded rows: in place over a strided view too.
  for (const int pad : {0, 3}) {
    std::vector<float> expected;
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) expected.push_back(static_cast<float>(std::exp(double(x(i, j))) * 2 + y0(i, j)));
    auto check = [&](auto&& run, const char* what) {
      std::vector<float> store(static_cast<std::size_t>(R * (C + pad)), -1.0f);
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) store[static_cast<std::size_t>(i * (C + pad) + j)] = y0(i, j);
      fx::view<float, 2> y(store.data(), {R, C}, {C + pad, 1});
      run(y);
      INFO(what << ", row padding " << pad);
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) REQUIRE(close_as<float>(y(i, j), expected[static_cast<std::size_t>(i * C + j)]));
      for (int i = 0; i < R; ++i)
        for (int j = C; j < C + pad; ++j) REQUIRE(store[static_cast<std::size_t>(i * (C + pad) + j)] == -1.0f);
    };
    check([&](fx::view<float, 2> y) { fx::run(axpy_exp, fx::reference, fx::inputs(x.as_view(), y), fx::outputs(y)); }, "reference");
    check([&](fx::view<float, 2> y) { fx::run(fx::partition(axpy_exp), fx::host{}, fx::inputs(x.as_view(), y), fx::outputs(y)); },
          "host, fused");
    check([&](fx::view<float, 2> y) {
      fx::run(fx::partition(axpy_exp, fx::policy::unfused<>{}), fx::host{}, fx::inputs(x.as_view(), y), fx::outputs(y));
    }, "host, unfused");
  }
}

TEST_CASE("in place: refused where another index or a later read would see the overwritten values", "[executor][host][in-place]") {
  auto x = random_tensor<float, 2>({4, 4});
  const auto before = x;
  fx::host_tensor<float, 1> s({4});
  fx::host_tensor<float, 2> other({4, 4});
  auto refused = [&](auto&& run, const char* what) {
    INFO(what);
    REQUIRE_THROWS_WITH(run(), Catch::Contains("overlaps argument 0"));
    for (int i = 0; i < 16; ++i) REQUIRE(x.data()[i] == before.data()[i]);  // nothing written
  };
  auto both = [&](auto prog, auto outs_of, const char* what) {
    refused([&] { std::apply([&](auto... o) { fx::run(prog, fx::reference, fx::inputs(x.as_view()), fx::outputs(o...)); }, outs_of()); }, what);
    refused([&] { std::apply([&](auto... o) { fx::run(fx::partition(prog), fx::host{}, fx::inputs(x.as_view()), fx::outputs(o...)); }, outs_of()); },
            what);
  };
  both(reads_by_reduction, [&] { return std::tuple{x.as_view(), s.as_view()}; }, "a reduction reads the argument");
  both(reads_by_remap, [&] { return std::tuple{x.as_view()}; }, "a transpose reads the argument");
  both(read_elsewhere, [&] { return std::tuple{x.as_view(), other.as_view()}; }, "another output reads the argument");
  // The same memory as another view (transposed): not in place.
  const auto y = random_tensor<float, 2>({4, 4});
  fx::view<float, 2> xt(x.data(), {4, 4}, {1, 4});
  REQUIRE_THROWS_WITH(fx::run(fx::partition(axpy_exp), fx::host{}, fx::inputs(y.as_view(), x.as_view()), fx::outputs(xt)),
                      Catch::Contains("same view"));
}

TEST_CASE("host executor: the last-level cache's size, from Linux's notation", "[executor][host]") {
  namespace he = fx::detail::host_engine;
  CHECK(he::parse_cache_size("32768K") == (std::size_t{32} << 20));
  CHECK(he::parse_cache_size("1024K") == (std::size_t{1} << 20));
  CHECK(he::parse_cache_size("8M") == (std::size_t{8} << 20));
  CHECK(he::parse_cache_size("512") == 512);
  CHECK(he::parse_cache_size("") == 0);
  // Whatever the machine reports, the figure that sets streaming is a
  // last-level cache's: at least 1 MiB.
  CHECK(he::last_level_cache_bytes() >= (std::size_t{1} << 20));
}
