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
  static_assert(static_cast<float>(fusex::bf16(1.5f)) == 1.5f);
  static_assert(static_cast<float>(fusex::f16(-0.25f)) == -0.25f);
  static_assert(fusex::promote(fusex::dtype::bf16, fusex::dtype::f16) == fusex::dtype::f32);
  static_assert(fusex::promote(fusex::dtype::i32, fusex::dtype::bf16) == fusex::dtype::bf16);
  static_assert(fusex::promote(fusex::dtype::b8, fusex::dtype::i64) == fusex::dtype::i64);
  SUCCEED();
}
