// Every elementwise prim on the reference executor against a double-precision
// formula, for f32, bf16 and f16: special values, odd extents, zero-size
// dims, non-contiguous inputs and broadcasting.
#include "support.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {

#define UNARY_PROGRAM(fn) \
  template <class T>      \
  constexpr auto p_##fn = fx::trace([](fx::tensor<T, 2> x) { return fx::fn(x); });
UNARY_PROGRAM(neg)
UNARY_PROGRAM(abs)
UNARY_PROGRAM(exp)
UNARY_PROGRAM(exp2)
UNARY_PROGRAM(log)
UNARY_PROGRAM(log1p)
UNARY_PROGRAM(sqrt)
UNARY_PROGRAM(rsqrt)
UNARY_PROGRAM(reciprocal)
UNARY_PROGRAM(erf)
UNARY_PROGRAM(tanh)
UNARY_PROGRAM(sin)
UNARY_PROGRAM(cos)
UNARY_PROGRAM(sigmoid)
UNARY_PROGRAM(dgelu)

#define BINARY_PROGRAM(fn)                                                                          \
  template <class T>                                                                                \
  constexpr auto p_##fn = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b) { return fx::fn(a, b); }); \
  template <class T>                                                                                \
  constexpr auto pb_##fn = fx::trace([](fx::tensor<T, 1> a, fx::tensor<T, 1> b) {                  \
    return fx::fn(fx::unsqueeze<1>(a), fx::unsqueeze<0>(b));                                        \
  });
BINARY_PROGRAM(add)
BINARY_PROGRAM(sub)
BINARY_PROGRAM(mul)
BINARY_PROGRAM(div)
BINARY_PROGRAM(pow)
BINARY_PROGRAM(maximum)
BINARY_PROGRAM(minimum)
BINARY_PROGRAM(eq)
BINARY_PROGRAM(ne)
BINARY_PROGRAM(lt)
BINARY_PROGRAM(le)
BINARY_PROGRAM(gt)
BINARY_PROGRAM(ge)

// Inputs of shape (rows, cols) stored with padded rows (non-contiguous).
template <class T>
struct strided_input {
  std::vector<T> storage;
  fx::view<const T, 2> view;
  strided_input(int rows, int cols, const std::vector<double>& values, int pad = 3)
      : storage(static_cast<std::size_t>(rows * (cols + pad)) + 1) {
    for (auto& s : storage) s = from_double<T>(-777.0);  // never read
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        storage[static_cast<std::size_t>(r * (cols + pad) + c)] = from_double<T>(values[static_cast<std::size_t>(r * cols + c)]);
    view = fx::view<const T, 2>(storage.data(), {rows, cols}, {cols + pad, 1});
  }
  double at(int r, int c) const { return to_double(view(r, c)); }
};

template <class T>
std::vector<double> test_values(int n) {
  auto v = special_values();
  auto r = random_values<double>(static_cast<std::size_t>(n), -4, 4);
  v.insert(v.end(), r.begin(), r.end());
  v.resize(static_cast<std::size_t>(n));
  return v;
}

template <class T, class Prog, class Formula>
void check_unary(Prog prog, Formula f, const char* name) {
  constexpr int rows = 5, cols = 7;  // odd extents
  strided_input<T> x(rows, cols, test_values<T>(rows * cols));
  using Out = typename fx::result_types<Prog>::template at<0>;
  auto out = fx::evaluate(prog, fx::reference, x.view);
  REQUIRE(out.extent(0) == rows);
  REQUIRE(out.extent(1) == cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double in = x.at(r, c), expect = f(in), got = to_double(out(r, c));
      INFO(name << "(" << in << ") = " << got << ", expected " << expect);
      REQUIRE(close_as<typename Out::value_type>(got, expect));
    }
  // Zero-size: extents propagate, nothing is read or written.
  fx::view<const T, 2> empty(nullptr, {0, 4});
  auto e = fx::evaluate(prog, fx::reference, empty);
  REQUIRE(e.extent(0) == 0);
  REQUIRE(e.extent(1) == 4);
}

template <class T, class Prog, class ProgB, class Formula>
void check_binary(Prog prog, ProgB progb, Formula f, const char* name) {
  const auto specials = special_values();
  const int n = static_cast<int>(specials.size());
  // Every pair of special values, a as rows and b as columns.
  std::vector<double> av, bv;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      av.push_back(specials[i]);
      bv.push_back(specials[j]);
    }
  strided_input<T> a(n, n, av), b(n, n, bv, 1);
  auto out = fx::evaluate(prog, fx::reference, a.view, b.view);
  using Out = typename fx::result_types<Prog>::template at<0>::value_type;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      const double x = a.at(r, c), y = b.at(r, c), expect = f(x, y), got = to_double(out(r, c));
      INFO(name << "(" << x << ", " << y << ") = " << got << ", expected " << expect);
      REQUIRE(close_as<Out>(got, expect));
    }
  // Broadcasting (m, 1) against (1, k) with odd extents.
  const auto ra = random_values<T>(3, 0.25, 3), rb = random_values<T>(5, 0.25, 3);
  auto bout = fx::evaluate(progb, fx::reference, fx::view<const T, 1>(ra.data(), {3}), fx::view<const T, 1>(rb.data(), {5}));
  REQUIRE(bout.extent(0) == 3);
  REQUIRE(bout.extent(1) == 5);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      const double expect = f(to_double(ra[i]), to_double(rb[j])), got = to_double(bout(i, j));
      INFO(name << " broadcast (" << i << ", " << j << ") = " << got << ", expected " << expect);
      REQUIRE(close_as<Out>(got, expect));
    }
}

double nan_max(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b); }

}  // namespace

TEMPLATE_TEST_CASE("unary prims match double formulas", "[prims][elementwise]", float, fx::bf16, fx::f16) {
  using T = TestType;
  check_unary<T>(p_neg<T>, [](double x) { return -x; }, "neg");
  check_unary<T>(p_abs<T>, [](double x) { return std::fabs(x); }, "abs");
  check_unary<T>(p_exp<T>, [](double x) { return std::exp(x); }, "exp");
  check_unary<T>(p_exp2<T>, [](double x) { return std::exp2(x); }, "exp2");
  check_unary<T>(p_log<T>, [](double x) { return std::log(x); }, "log");
  check_unary<T>(p_log1p<T>, [](double x) { return std::log1p(x); }, "log1p");
  check_unary<T>(p_sqrt<T>, [](double x) { return std::sqrt(x); }, "sqrt");
  check_unary<T>(p_rsqrt<T>, [](double x) { return 1 / std::sqrt(x); }, "rsqrt");
  check_unary<T>(p_reciprocal<T>, [](double x) { return 1 / x; }, "reciprocal");
  check_unary<T>(p_erf<T>, [](double x) { return std::erf(x); }, "erf");
  check_unary<T>(p_tanh<T>, [](double x) { return std::tanh(x); }, "tanh");
  check_unary<T>(p_sin<T>, [](double x) { return std::sin(x); }, "sin");
  check_unary<T>(p_cos<T>, [](double x) { return std::cos(x); }, "cos");
  check_unary<T>(p_sigmoid<T>, [](double x) { return 1 / (1 + std::exp(-x)); }, "sigmoid");
  check_unary<T>(p_dgelu<T>, [](double x) {
    return std::isinf(x) ? (x > 0 ? 1.0 : 0.0) : 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
  }, "dgelu");
}

TEMPLATE_TEST_CASE("binary prims match double formulas", "[prims][elementwise]", float, fx::bf16, fx::f16) {
  using T = TestType;
  check_binary<T>(p_add<T>, pb_add<T>, [](double a, double b) { return a + b; }, "add");
  check_binary<T>(p_sub<T>, pb_sub<T>, [](double a, double b) { return a - b; }, "sub");
  check_binary<T>(p_mul<T>, pb_mul<T>, [](double a, double b) { return a * b; }, "mul");
  check_binary<T>(p_div<T>, pb_div<T>, [](double a, double b) { return a / b; }, "div");
  check_binary<T>(p_pow<T>, pb_pow<T>, [](double a, double b) { return std::pow(a, b); }, "pow");
  check_binary<T>(p_maximum<T>, pb_maximum<T>, nan_max, "maximum");
  check_binary<T>(p_minimum<T>, pb_minimum<T>, nan_min, "minimum");
  check_binary<T>(p_eq<T>, pb_eq<T>, [](double a, double b) { return double(a == b); }, "eq");
  check_binary<T>(p_ne<T>, pb_ne<T>, [](double a, double b) { return double(a != b); }, "ne");
  check_binary<T>(p_lt<T>, pb_lt<T>, [](double a, double b) { return double(a < b); }, "lt");
  check_binary<T>(p_le<T>, pb_le<T>, [](double a, double b) { return double(a <= b); }, "le");
  check_binary<T>(p_gt<T>, pb_gt<T>, [](double a, double b) { return double(a > b); }, "gt");
  check_binary<T>(p_ge<T>, pb_ge<T>, [](double a, double b) { return double(a >= b); }, "ge");
}

namespace {
template <class T>
constexpr auto p_where = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b) { return fx::where(a > b, a, b * 2.0f); });
template <class T>
constexpr auto p_scalar = fx::trace([](fx::tensor<T, 2> a, fx::scalar<float> s) { return a * s + 0.25f; });
template <class T>
constexpr auto p_mixed = fx::trace([](fx::tensor<T, 2> a, fx::tensor<float, 2> b) { return a + b; });
template <class T>
constexpr auto p_rank0 = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 0> s) { return a - s; });
}  // namespace

TEMPLATE_TEST_CASE("where, scalars, rank-0 tensors and mixed dtypes", "[prims][elementwise]", float, fx::bf16, fx::f16) {
  using T = TestType;
  const int rows = 4, cols = 3;
  strided_input<T> a(rows, cols, test_values<T>(rows * cols)), b(rows, cols, random_values<double>(rows * cols));
  auto w = fx::evaluate(p_where<T>, fx::reference, a.view, b.view);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double x = a.at(r, c), y = b.at(r, c);
      REQUIRE(close_as<T>(to_double(w(r, c)), x > y ? x : y * 2));
    }
  auto s = fx::evaluate(p_scalar<T>, fx::reference, a.view, 1.5);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      // a * s rounds to T, then + 0.25 rounds to T (two prims).
      const double prod = to_double(from_double<T>(a.at(r, c) * 1.5));
      REQUIRE(close_as<T>(to_double(s(r, c)), prod + 0.25));
    }
  std::vector<float> fb(rows * cols);
  for (int i = 0; i < rows * cols; ++i) fb[i] = static_cast<float>(i) * 0.5f;
  auto m = fx::evaluate(p_mixed<T>, fx::reference, a.view, fx::view<const float, 2>(fb.data(), {rows, cols}));
  static_assert(std::is_same_v<typename decltype(m)::value_type, float>);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) REQUIRE(close_as<float>(m(r, c), a.at(r, c) + fb[r * cols + c]));
  const T s0 = from_double<T>(0.75);
  auto z = fx::evaluate(p_rank0<T>, fx::reference, a.view, fx::view<const T, 0>(&s0, {}));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) REQUIRE(close_as<T>(to_double(z(r, c)), a.at(r, c) - 0.75));
}

namespace {
constexpr auto p_to_int = fx::trace([](fx::tensor<float, 1> x) {
  return std::tuple{fx::convert<std::int32_t>(x), fx::convert<std::int64_t>(x), fx::convert<bool>(x),
                    fx::convert<fx::bf16>(x), fx::convert<fx::f16>(x), fx::convert<double>(x)};
});
constexpr auto p_int_ops = fx::trace([](fx::tensor<std::int32_t, 1> a, fx::tensor<std::int32_t, 1> b) {
  return std::tuple{a + b, a - b, a * b, a / b, fx::pow(a, b), fx::maximum(a, b), -a, fx::abs(a), a < b,
                    fx::convert<float>(a) / 2.0f};
});
}  // namespace

TEST_CASE("convert_element_type: truncation, saturation, NaN to zero, rounding", "[prims][elementwise]") {
  const std::vector<float> x = {1.7f, -1.7f, 3e9f, -3e9f, NAN, INFINITY, 0.0f, 1.00390625f, 65520.0f};
  auto [i32, i64, b, bf, hf, d] = fx::evaluate(p_to_int, fx::reference, fx::view<const float, 1>(x.data(), {9}));
  const std::vector<std::int32_t> e32 = {1, -1, 2147483647, -2147483647 - 1, 0, 2147483647, 0, 1, 65520};
  for (int k = 0; k < 9; ++k) {
    INFO("k=" << k);
    CHECK(i32(k) == e32[k]);
    CHECK(i64(k) == (k == 2 ? 3000000000LL : k == 3 ? -3000000000LL : k == 5 ? INT64_MAX : e32[k]));
    CHECK(b(k) == (x[k] != 0.0f));
    if (std::isnan(x[k])) CHECK(std::isnan(d(k)));
    else CHECK(d(k) == static_cast<double>(x[k]));
  }
  CHECK(static_cast<float>(bf(7)) == 1.0f);              // 1 + 2^-8 ties to even
  CHECK(std::isinf(static_cast<float>(hf(8))));          // 65520 overflows f16
  CHECK(static_cast<float>(hf(7)) == 1.00390625f);       // exactly representable in f16
}

TEST_CASE("integer arithmetic wraps; division truncates and x / 0 is 0", "[prims][elementwise]") {
  const std::vector<std::int32_t> a = {7, -7, 2147483647, -2147483647 - 1, 3, 5};
  const std::vector<std::int32_t> b = {2, 2, 1, -1, 0, -1};
  auto [add, sub, mul, div, pw, mx, ng, ab, lt, fd] =
      fx::evaluate(p_int_ops, fx::reference, fx::view<const std::int32_t, 1>(a.data(), {6}),
                   fx::view<const std::int32_t, 1>(b.data(), {6}));
  for (int k = 0; k < 6; ++k) {
    const std::int64_t x = a[k], y = b[k];
    auto wrap = [](std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); };
    INFO("k=" << k);
    CHECK(add(k) == wrap(x + y));
    CHECK(sub(k) == wrap(x - y));
    CHECK(mul(k) == wrap(x * y));
    CHECK(div(k) == (y == 0 ? 0 : wrap(x / y)));
    CHECK(mx(k) == std::max(a[k], b[k]));
    CHECK(ng(k) == wrap(-x));
    CHECK(ab(k) == wrap(x < 0 ? -x : x));
    CHECK(lt(k) == (x < y));
    CHECK(fd(k) == static_cast<float>(x) / 2.0f);
  }
  CHECK(pw(0) == 49);
  CHECK(pw(4) == 1);  // 3^0
}
