// 16-bit storage types against brute-force rounding in double.
#include "support.hpp"

using namespace fxt;

namespace {
// Value of an IEEE binary16 bit pattern, from the format's definition.
double f16_value(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = s ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}
// Nearest representable value by search; ties go to the even pattern.
template <class Value>
std::uint16_t nearest(double x, Value value_of, std::uint16_t max_finite_bits, std::uint16_t inf_bits) {
  const bool neg = std::signbit(x);
  const double a = std::fabs(x);
  std::uint16_t lo = 0, hi = max_finite_bits;
  if (a >= value_of(max_finite_bits)) {
    // Past the largest finite value: rounds to it or to infinity.
    const double next = 2 * value_of(max_finite_bits) - value_of(max_finite_bits - 1);
    const double mid = (value_of(max_finite_bits) + next) / 2;
    const std::uint16_t r = a >= mid ? inf_bits : max_finite_bits;
    return static_cast<std::uint16_t>(r | (neg ? 0x8000 : 0));
  }
  while (hi - lo > 1) {  // positive patterns are ordered like their values
    const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi) / 2);
    if (value_of(mid) <= a) lo = mid;
    else hi = mid;
  }
  const double dl = a - value_of(lo), dh = value_of(hi) - a;
  std::uint16_t r = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
  return static_cast<std::uint16_t>(r | (neg ? 0x8000 : 0));
}
double bf16_value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("f16 decodes every bit pattern as the format defines", "[dtype]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double expect = f16_value(static_cast<std::uint16_t>(h));
    const double got = static_cast<float>(fusex::f16::from_bits(static_cast<std::uint16_t>(h)));
    if (std::isnan(expect)) REQUIRE(std::isnan(got));
    else REQUIRE(got == expect);
  }
}

TEST_CASE("f16 and bf16 round-trip every finite pattern", "[dtype]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float hf = static_cast<float>(fusex::f16::from_bits(b));
    if (!std::isnan(hf)) REQUIRE(fusex::f16(hf).bits == b);
    else REQUIRE(std::isnan(static_cast<float>(fusex::f16(hf))));
    const float bf = static_cast<float>(fusex::bf16::from_bits(b));
    if (!std::isnan(bf)) REQUIRE(fusex::bf16(bf).bits == b);
    else REQUIRE(std::isnan(static_cast<float>(fusex::bf16(bf))));
  }
}

TEST_CASE("float to f16 and bf16 rounds to nearest even", "[dtype]") {
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = bits(rng());
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    // Concentrate on the f16 range half of the time.
    if (i % 2) f = std::ldexp(std::fmod(std::fabs(f), 1.0f) + 0.5f, static_cast<int>(u % 44) - 28) * (u & 1 ? -1 : 1);
    const std::uint16_t eh = nearest(f, f16_value, 0x7bff, 0x7c00);
    INFO("f16 of " << f);
    REQUIRE(fusex::f16(f).bits == eh);
    const std::uint16_t eb = nearest(f, bf16_value, 0x7f7f, 0x7f80);
    INFO("bf16 of " << f);
    REQUIRE(fusex::bf16(f).bits == eb);
  }
  // Exact ties: 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7.
  REQUIRE(fusex::bf16(1.0f + std::ldexp(1.0f, -8)).bits == fusex::bf16(1.0f).bits);
  REQUIRE(fusex::bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits == fusex::bf16(1.0f + std::ldexp(1.0f, -6)).bits);
  REQUIRE(std::isinf(static_cast<float>(fusex::f16(65520.0f))));
  REQUIRE(static_cast<float>(fusex::f16(65519.0f)) == 65504.0f);
}

TEST_CASE("conversions are usable in constant expressions", "[dtype]") {
  STATIC_REQUIRE(static_cast<float>(fusex::bf16(1.5f)) == 1.5f);
  STATIC_REQUIRE(static_cast<float>(fusex::f16(-0.25f)) == -0.25f);
  STATIC_REQUIRE(fusex::promote(fusex::dtype::bf16, fusex::dtype::f16) == fusex::dtype::f32);
  STATIC_REQUIRE(fusex::promote(fusex::dtype::i32, fusex::dtype::bf16) == fusex::dtype::bf16);
  STATIC_REQUIRE(fusex::promote(fusex::dtype::b8, fusex::dtype::i64) == fusex::dtype::i64);
}

#if FUSEX_HOST_SIMD
// The host executor's register lanes (core/simd.hpp) must compute exactly
// what its scalar lanes compute: the same plan gives the same bits whether a
// run goes through a vector or value by value.
namespace {
template <class F>
void check_lanes(const char* name, F f, const std::vector<float>& xs) {
  namespace s = fusex::simd;
  for (std::size_t i = 0; i + s::width <= xs.size(); i += s::width) {
    float out[s::width];
    s::store(out, f(s::load(xs.data() + i)));
    for (int l = 0; l < s::width; ++l) {
      const float want = f(xs[i + l]);
      INFO(name << "(" << xs[i + l] << ") lane " << l << ": " << out[l] << ", scalar " << want);
      REQUIRE(std::memcmp(&out[l], &want, sizeof want) == 0);
    }
  }
}
std::vector<float> lane_inputs(float lo, float hi) {
  std::vector<float> xs = {0.0f, -0.0f, NAN, -NAN, INFINITY, -INFINITY, 1e-40f, -1e-40f, 1.17549435e-38f,
                           3.4e38f, -3.4e38f, 0.5f, -0.5f, 1.0f, -1.0f, 3.92f, -3.92f, 88.7f, -103.9f, 4.0f};
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int i = 0; i < 4096; ++i) xs.push_back(d(g));
  while (xs.size() % fusex::simd::width) xs.push_back(1.0f);
  return xs;
}
}  // namespace

TEST_CASE("host register lanes: every float function agrees with its scalar form bit for bit", "[dtype][simd]") {
  namespace m = fusex::math;
  const auto wide = lane_inputs(-120.0f, 120.0f), pos = lane_inputs(0.0f, 1e6f);
  check_lanes("exp", [](auto x) { return m::exp(x); }, wide);
  check_lanes("exp2", [](auto x) { return m::exp2(x); }, wide);
  check_lanes("erf", [](auto x) { return m::erf(x); }, lane_inputs(-6.0f, 6.0f));
  check_lanes("tanh", [](auto x) { return m::tanh(x); }, lane_inputs(-12.0f, 12.0f));
  check_lanes("sigmoid", [](auto x) { return m::sigmoid(x); }, wide);
  check_lanes("dgelu", [](auto x) { return m::dgelu(x); }, lane_inputs(-12.0f, 12.0f));
  check_lanes("sin", [](auto x) { return m::sin(x); }, wide);
  check_lanes("cos", [](auto x) { return m::cos(x); }, wide);
  check_lanes("abs", [](auto x) { return m::abs(x); }, wide);
  check_lanes("log", [](auto x) { return m::log(x); }, pos);
  check_lanes("log1p", [](auto x) { return m::log1p(x); }, pos);
  check_lanes("rsqrt", [](auto x) { return m::rsqrt(x); }, pos);
  check_lanes("sqrt", [](auto x) { return m::sqrt(x); }, pos);
  check_lanes("log of negatives", [](auto x) { return m::log(x); }, wide);
  check_lanes("maximum", [](auto x) { return m::maximum(x, x * 0.5f - 1.0f); }, wide);
  // one operand NaN, the other not (sqrt of a negative)
  check_lanes("maximum with a NaN second", [](auto x) { return m::maximum(x, m::sqrt(x)); }, wide);
  check_lanes("maximum with a NaN first", [](auto x) { return m::maximum(m::sqrt(x), x); }, wide);
  check_lanes("minimum with a NaN second", [](auto x) { return m::minimum(x, m::sqrt(x)); }, wide);
  check_lanes("minimum with a NaN first", [](auto x) { return m::minimum(m::sqrt(x), x); }, wide);
  check_lanes("minimum", [](auto x) { return m::minimum(x, x * 0.5f - 1.0f); }, wide);
}

TEST_CASE("host register lanes: bf16 rounding agrees with bf16::from_float on sampled bit patterns", "[dtype][simd]") {
  namespace s = fusex::simd;
  std::vector<std::uint32_t> bits;
  for (std::uint64_t u = 0; u <= 0xffffffffu; u += 65521) bits.push_back(static_cast<std::uint32_t>(u));
  for (std::uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x3f808000u, 0x3f818000u,
                          0x7f7fffffu, 0x00008000u})
    bits.push_back(u);
  while (bits.size() % s::width) bits.push_back(0);
  for (std::size_t i = 0; i < bits.size(); i += s::width) {
    float in[s::width], back[s::width], rounded[s::width];
    std::memcpy(in, bits.data() + i, sizeof in);
    const s::u16v h = s::f32_to_bf16_bits(s::load(in));
    s::store(back, s::bf16_bits_to_f32(h));
    s::store(rounded, s::round_bf16(s::load(in)));
    for (int l = 0; l < s::width; ++l) {
      INFO("pattern 0x" << std::hex << bits[i + l]);
      REQUIRE(h[l] == fusex::bf16::from_float(in[l]));
      const float want = fusex::bf16::to_float(h[l]);
      REQUIRE(std::memcmp(&back[l], &want, sizeof want) == 0);
      REQUIRE(std::memcmp(&rounded[l], &want, sizeof want) == 0);
    }
  }
  // Four registers rounded together, with one subnormal test: the patterns
  // above, then blocks whose only subnormal lane is in their last register.
  while (bits.size() % (4 * s::width)) bits.push_back(0x80000005u);
  for (std::uint32_t k = 0; k < 8; ++k)
    for (int l = 0; l < 4 * s::width; ++l) bits.push_back(l == 4 * s::width - 1 - static_cast<int>(k) ? 0x00400001u + k * 0x1000u : 0x3f800000u + k);
  while (bits.size() % (4 * s::width)) bits.push_back(0x80000005u);
  for (std::size_t i = 0; i < bits.size(); i += 4 * s::width) {
    s::f32v in[4];
    std::uint16_t h[4 * s::width];
    std::memcpy(in, bits.data() + i, sizeof in);
    s::store_bf16_bits_n<4>(in, h);
    for (int l = 0; l < 4 * s::width; ++l) {
      INFO("pattern 0x" << std::hex << bits[i + l]);
      float f;
      std::memcpy(&f, &bits[i + l], sizeof f);
      REQUIRE(h[l] == fusex::bf16::from_float(f));
    }
  }
  // Zeros of both signs among normal values: a zero output sends the block
  // to the inputs' class test, which finds no subnormal. Then every block
  // again as three registers (the last one rounded alone) and streamed to
  // a cache line (non-temporal stores): the same bits.
  for (std::uint32_t k = 0; k < 3; ++k)
    for (int l = 0; l < 4 * s::width; ++l)
      bits.push_back(l % 5 == static_cast<int>(k) ? (l % 2 ? 0x80000000u : 0u) : 0x40490fdbu + static_cast<std::uint32_t>(l) * 0x10001u);
  for (std::size_t i = 0; i < bits.size(); i += 4 * s::width) {
    s::f32v in[4];
    std::uint16_t three[3 * s::width];
    alignas(64) std::uint16_t streamed[4 * s::width];
    std::memcpy(in, bits.data() + i, sizeof in);
    s::store_bf16_bits_n<3>(in, three);
    s::store_bf16_bits_n<4, true>(in, streamed);
    s::stream_fence();
    for (int l = 0; l < 4 * s::width; ++l) {
      INFO("pattern 0x" << std::hex << bits[i + l]);
      float f;
      std::memcpy(&f, &bits[i + l], sizeof f);
      if (l < 3 * s::width) REQUIRE(three[l] == fusex::bf16::from_float(f));
      REQUIRE(streamed[l] == fusex::bf16::from_float(f));
    }
  }
}
#endif

TEST_CASE("host erf is within 7 ulp of erf in double on [0, 6]", "[dtype][math]") {
  double worst = 0;
  float at = 0;
  for (float x = 1.2e-38f; x < 6.0f; x = x < 1e-6f ? x * 1.001f : std::nextafter(x, 7.0f) + (x > 1e-3f ? x * 3e-6f : 0)) {
    const double e = std::erf(static_cast<double>(x));
    const double u = std::fabs(fusex::math::erf(x) - e) / std::ldexp(1.0, std::ilogb(static_cast<float>(e)) - 23);
    if (u > worst) worst = u, at = x;
  }
  INFO("worst " << worst << " ulp at " << at);
  CHECK(worst <= 7.5);
  CHECK(std::isnan(fusex::math::erf(NAN)));
  CHECK(fusex::math::erf(INFINITY) == 1.0f);
  CHECK(fusex::math::erf(-INFINITY) == -1.0f);
  CHECK(std::signbit(fusex::math::erf(-0.0f)));
}

// The host executor's float math (core/math.hpp) against the same function
// in double, over every 509th float bit pattern of each function's domain
// (8.4 M values across the whole range, subnormals and infinities
// included), in ulps of the float nearest the exact result. docs/prims.md
// states these bounds; special values (NaN, +-inf, overflow to inf) must
// come out exactly as the double function's rounded result.
namespace {
double ulp_of(double exact) {
  const float r = static_cast<float>(exact);
  const float a = std::fabs(r);
  if (!std::isfinite(r)) return std::ldexp(1.0, 104);
  if (a < 1.17549435e-38f) return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(a) - 23);
}
// floor: the error's unit where the result is small in magnitude, for
// functions with an absolute error there (dgelu, 1/2 - o near its zero)
template <class F, class D>
void check_ulps(const char* name, F f, D exact, double lo, double bound, double floor = 0) {
  double worst = 0;
  float at = 0;
  long special_wrong = 0, n = 0;
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 509) {
    const auto b = static_cast<std::uint32_t>(u);
    float x;
    std::memcpy(&x, &b, sizeof x);
    if (std::isnan(x) || x < lo) continue;
    ++n;
    const double e = exact(static_cast<double>(x));
    const float got = f(x);
    if (std::isnan(e) || std::isinf(static_cast<float>(e))) {
      special_wrong += std::isnan(e) ? !std::isnan(got) : got != static_cast<float>(e);
      continue;
    }
    const double err = std::fabs(static_cast<double>(got) - e) / std::max(ulp_of(e), floor);
    if (!(err <= worst)) worst = err, at = x;
  }
  INFO(name << ": worst " << worst << " ulp at " << at << " over " << n << " values; " << special_wrong
            << " special values wrong");
  CHECK(worst <= bound);
  CHECK(special_wrong == 0);
  CHECK(std::isnan(f(NAN)));
}
}  // namespace

TEST_CASE("host float math is within its stated ulps of the double result over the whole float range", "[dtype][math]") {
  namespace m = fusex::math;
  const double all = -INFINITY;
  check_ulps("exp", [](float x) { return m::exp(x); }, [](double x) { return std::exp(x); }, all, 1.5);
  check_ulps("exp2", [](float x) { return m::exp2(x); }, [](double x) { return std::exp2(x); }, all, 1.5);
  check_ulps("log", [](float x) { return m::log(x); }, [](double x) { return std::log(x); }, 0.0, 2.0);
  check_ulps("log1p", [](float x) { return m::log1p(x); }, [](double x) { return std::log1p(x); }, -1.0, 4.0);
  check_ulps("erf", [](float x) { return m::erf(x); }, [](double x) { return std::erf(x); }, all, 7.0);
  // both erf forms, whichever one this build's m::erf is
  check_ulps("erf by table", [](float x) { return m::detail::erf_by_table(x); }, [](double x) { return std::erf(x); },
             all, 2.5);
  check_ulps("erf rational", [](float x) { return m::detail::erf_rational(x); }, [](double x) { return std::erf(x); },
             all, 7.0);
  // d gelu / dx: ulps of the result, or units of 2^-24 where it is below 1/2
  const auto dgelu = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)) + (std::isinf(x) ? 0.0 : x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI)); };
  check_ulps("dgelu", [](float x) { return m::dgelu(x); }, dgelu, all, 3.5, 0x1p-24);
  check_ulps("dgelu by table", [](float x) { return m::detail::dgelu_by_table(x); }, dgelu, all, 1.1, 0x1p-24);
  check_ulps("dgelu from erf and exp", [](float x) { return m::detail::dgelu_formula(x); }, dgelu, all, 3.5, 0x1p-24);
  check_ulps("tanh", [](float x) { return m::tanh(x); }, [](double x) { return std::tanh(x); }, all, 1.5);
  check_ulps("sigmoid", [](float x) { return m::sigmoid(x); }, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
             all, 3.5);
  check_ulps("sin", [](float x) { return m::sin(x); }, [](double x) { return std::sin(x); }, all, 2.0);
  check_ulps("cos", [](float x) { return m::cos(x); }, [](double x) { return std::cos(x); }, all, 2.0);
  check_ulps("sqrt", [](float x) { return m::sqrt(x); }, [](double x) { return std::sqrt(x); }, 0.0, 3.0);
  check_ulps("rsqrt", [](float x) { return m::rsqrt(x); }, [](double x) { return 1.0 / std::sqrt(x); }, 0.0, 3.5);
  // below the domain: NaN, as the double functions give
  CHECK(std::isnan(m::log(-1.0f)));
  CHECK(std::isnan(m::log1p(-2.0f)));
  CHECK(std::isnan(m::sqrt(-1.0f)));
  CHECK(m::log(0.0f) == -INFINITY);
  CHECK(m::sigmoid(-100.0f) > 0.0f);  // 3.7e-44, a subnormal, not 0
}
