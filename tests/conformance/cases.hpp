#pragma once
// The cases of the conformance suite. Each program gathers a family of prims
// as outputs of one trace (one plan per dtype keeps the build short; the
// unfused policy still runs every prim as its own kernel), and each output is
// checked element by element against the semantics of docs/prims.md,
// computed here in double precision or in exact integer arithmetic.

#include "conformance.hpp"

namespace fxt::conf {

// ------------------------------------------------------- integer semantics
template <class T>
long long wrap(unsigned long long u) {
  return static_cast<long long>(static_cast<T>(static_cast<std::make_unsigned_t<T>>(u)));
}
// Integer pow: exact modulo 2^bits for e >= 0; for e < 0 the truncated
// 1 / b^-e (1 for b = 1, +-1 for b = -1, else 0).
template <class T>
long long int_pow(long long b, long long e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;
  std::make_unsigned_t<T> r = 1, x = static_cast<std::make_unsigned_t<T>>(b);
  for (long long k = 0; k < e && k < 200; ++k) r *= x;  // x^e mod 2^bits is periodic past 64 factors for odd x
  if (e >= 200) {  // beyond: even bases reach 0; odd ones cycle with a period dividing 2^(bits-2)
    r = 1;
    auto p = static_cast<std::make_unsigned_t<T>>(b);
    for (unsigned long long n = static_cast<unsigned long long>(e); n; n >>= 1, p *= p)
      if (n & 1) r *= p;
  }
  return static_cast<long long>(static_cast<T>(r));
}
template <class T>
long long int_div(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return wrap<T>(0ull - static_cast<unsigned long long>(a));
  return a / b;
}
// Float to integer: truncate, saturate at the range, NaN to 0.
template <class D>
long long float_to_int(double x) {
  if (std::isnan(x)) return 0;
  const double lim = std::ldexp(1.0, std::numeric_limits<D>::digits);  // 2^31 or 2^63
  if (x >= lim) return std::numeric_limits<D>::max();
  if (x < -lim) return std::numeric_limits<D>::min();
  return static_cast<long long>(std::trunc(x));
}

// f(std::integral_constant<std::size_t, K>{}) for K < N. (A function, not a
// lambda over a pack: nvcc's front end does not expand packs through nested
// generic lambdas.)
template <class F, std::size_t... K>
void for_each_index_impl(F&& f, std::index_sequence<K...>) {
  (f(std::integral_constant<std::size_t, K>{}), ...);
}
template <std::size_t N, class F>
void for_each_index(F&& f) {
  for_each_index_impl(f, std::make_index_sequence<N>{});
}

inline double nan_max(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); }
inline double nan_min(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b); }

template <class T, class V>
std::string show(V v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// ------------------------------------------------------------------ unary
template <class T>
constexpr auto unary_program = fx::trace([](fx::tensor<T, 2> x) {
  return std::tuple{fx::neg(x),  fx::abs(x),   fx::exp(x),        fx::exp2(x), fx::log(x),  fx::log1p(x), fx::sqrt(x),
                    fx::rsqrt(x), fx::reciprocal(x), fx::erf(x), fx::tanh(x), fx::sin(x),  fx::cos(x),   fx::sigmoid(x),
                    fx::dgelu(x)};
});
inline constexpr const char* unary_names[] = {"neg", "abs",  "exp", "exp2", "log", "log1p", "sqrt",
                                              "rsqrt", "reciprocal", "erf", "tanh", "sin", "cos", "sigmoid", "dgelu"};
// Phi(x) + x phi(x), Phi from erfc for its left tail
inline double dgelu_formula(double x) {
  if (std::isinf(x)) return x > 0 ? 1.0 : 0.0;
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
}
inline double unary_formula(int k, double x) {
  switch (k) {
    case 0: return -x;
    case 1: return std::fabs(x);
    case 2: return std::exp(x);
    case 3: return std::exp2(x);
    case 4: return std::log(x);
    case 5: return std::log1p(x);
    case 6: return std::sqrt(x);
    case 7: return 1 / std::sqrt(x);
    case 8: return 1 / x;
    case 9: return std::erf(x);
    case 10: return std::tanh(x);
    case 11: return std::sin(x);
    case 12: return std::cos(x);
    case 13: return 1 / (1 + std::exp(-x));
    default: return dgelu_formula(x);
  }
}

template <class T, class Runner>
void unary_case(const Runner& run, layout how) {
  const auto values = edge_values<T>(5 * 9);
  const auto x = make_input<T>(how, 5, 9, [&](fx::index_t i, fx::index_t j) { return values[static_cast<std::size_t>(i * 9 + j)]; });
  const auto out = run(unary_program<T>, x);
  for_each_index<std::tuple_size_v<std::decay_t<decltype(out)>>>([&](auto k) {
          constexpr std::size_t K = decltype(k)::value;
          const auto& o = std::get<K>(out);
          using Out = typename std::decay_t<decltype(o)>::value_type;
          auto describe = [&](const auto& i) { return std::string(unary_names[K]) + "(" + show<T>(x.at(i[0], i[1])) + ")"; };
          check_output(o, x.logical.extents(),
                       [&](const auto& i) {
                         const auto v = x.at(i[0], i[1]);
                         if constexpr (is_float<Out>) {
                           // an integer operand converts to f32 first
                           const double xf = is_float<T> ? static_cast<double>(v) : static_cast<double>(static_cast<float>(v));
                           return std::pair{unary_formula(static_cast<int>(K), xf), 0.0};
                         } else {
                           const auto u = static_cast<unsigned long long>(v);
                           return std::pair{K == 0 || v < 0 ? wrap<T>(0ull - u) : static_cast<long long>(v), 0.0};
                         }
                       },
                       describe, std::string(unary_names[K]) + " on " + run.name + ", " + name(how));
  });
}

// ----------------------------------------------------------------- binary
template <class T>
constexpr auto binary_program = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b) {
  return std::tuple{fx::add(a, b), fx::sub(a, b), fx::mul(a, b), fx::div(a, b), fx::pow(a, b),
                    fx::maximum(a, b), fx::minimum(a, b), a == b, a != b, a < b, a <= b, a > b, a >= b,
                    fx::where(a > b, a, b)};
});
inline constexpr const char* binary_names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                               "eq",  "ne",  "lt",  "le",  "gt",  "ge",      "where(a > b, a, b)"};
inline double binary_formula(int k, double a, double b) {
  switch (k) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return std::pow(a, b);
    case 5: return nan_max(a, b);
    case 6: return nan_min(a, b);
    case 7: return double(a == b);
    case 8: return double(a != b);
    case 9: return double(a < b);
    case 10: return double(a <= b);
    case 11: return double(a > b);
    case 12: return double(a >= b);
    default: return a > b ? a : b;
  }
}
template <class S>
long long int_binary_formula(int k, long long a, long long b) {
  const auto ua = static_cast<unsigned long long>(a), ub = static_cast<unsigned long long>(b);
  switch (k) {
    case 0: return wrap<S>(ua + ub);
    case 1: return wrap<S>(ua - ub);
    case 2: return wrap<S>(ua * ub);
    case 3: return int_div<S>(a, b);
    case 4: return int_pow<S>(a, b);
    case 5: return std::max(a, b);
    case 6: return std::min(a, b);
    case 7: return a == b;
    case 8: return a != b;
    case 9: return a < b;
    case 10: return a <= b;
    case 11: return a > b;
    case 12: return a >= b;
    default: return a > b ? a : b;
  }
}

// Every pair of edge values: a along rows, b along columns.
template <class T>
std::pair<input<T>, input<T>> pair_inputs(layout how) {
  const auto e = edge_values<T>();
  const auto n = static_cast<fx::index_t>(e.size());
  return {make_input<T>(how, n, n, [&](fx::index_t i, fx::index_t) { return e[static_cast<std::size_t>(i)]; }),
          make_input<T>(how, n, n, [&](fx::index_t, fx::index_t j) { return e[static_cast<std::size_t>(j)]; })};
}

template <class T, class Runner>
void binary_case(const Runner& run, layout how) {
  const auto [a, b] = pair_inputs<T>(how);
  const auto out = run(binary_program<T>, a, b);
  for_each_index<std::tuple_size_v<std::decay_t<decltype(out)>>>([&](auto k) {
          constexpr std::size_t K = decltype(k)::value;
          const auto& o = std::get<K>(out);
          using Out = typename std::decay_t<decltype(o)>::value_type;
          auto describe = [&](const auto& i) {
            return std::string(binary_names[K]) + "(" + show<T>(a.at(i[0], i[1])) + ", " + show<T>(b.at(i[0], i[1])) + ")";
          };
          check_output(o, a.logical.extents(),
                       [&](const auto& i) {
                         const auto x = a.at(i[0], i[1]), y = b.at(i[0], i[1]);
                         if constexpr (is_float<T>) {
                           if constexpr (is_float<Out>) return std::pair{binary_formula(static_cast<int>(K), x, y), 0.0};
                           else return std::pair{static_cast<long long>(binary_formula(static_cast<int>(K), x, y)), 0.0};
                         } else {
                           return std::pair{int_binary_formula<T>(static_cast<int>(K), x, y), 0.0};
                         }
                       },
                       describe, std::string(binary_names[K]) + " on " + run.name + ", " + name(how));
  });
}

// bool operands: comparisons and where (arithmetic on bool does not compile).
constexpr auto bool_program = fx::trace([](fx::tensor<bool, 2> a, fx::tensor<bool, 2> b) {
  return std::tuple{a == b, a != b, a < b, a >= b, fx::where(a, b, a), fx::where(b, a, false)};
});
template <class Runner>
void bool_case(const Runner& run, layout how) {
  const auto [a, b] = pair_inputs<bool>(how);
  const auto out = run(bool_program, a, b);
  const char* names[] = {"eq", "ne", "lt", "ge", "where(a, b, a)", "where(b, a, false)"};
  auto formula = [](int k, long long x, long long y) -> long long {
    switch (k) {
      case 0: return x == y;
      case 1: return x != y;
      case 2: return x < y;
      case 3: return x >= y;
      case 4: return x ? y : x;
      default: return y ? x : 0;
    }
  };
  for_each_index<6>([&](auto k) {
    constexpr std::size_t K = decltype(k)::value;
    check_output(std::get<K>(out), a.logical.extents(),
                 [&](const auto& i) { return std::pair{formula(K, a.at(i[0], i[1]), b.at(i[0], i[1])), 0.0}; },
                 [&](const auto& i) { return show<bool>(a.at(i[0], i[1])) + ", " + show<bool>(b.at(i[0], i[1])); },
                 std::string(names[K]) + " on " + run.name + ", " + name(how));
  });
}

// ------------------------------------------------------------ conversions
template <class T>
constexpr auto convert_program = fx::trace([](fx::tensor<T, 2> x) {
  return std::tuple{fx::convert<float>(x),        fx::convert<double>(x),       fx::convert<fx::bf16>(x),
                    fx::convert<fx::f16>(x),      fx::convert<std::int32_t>(x), fx::convert<std::int64_t>(x),
                    fx::convert<bool>(x)};
});
inline constexpr const char* convert_names[] = {"convert<float>", "convert<double>", "convert<bf16>", "convert<f16>",
                                                "convert<int32>", "convert<int64>",  "convert<bool>"};

template <class T, class Runner>
void convert_case(const Runner& run, layout how) {
  const auto values = edge_values<T>(5 * 9);
  const auto x = make_input<T>(how, 5, 9, [&](fx::index_t i, fx::index_t j) { return values[static_cast<std::size_t>(i * 9 + j)]; });
  const auto out = run(convert_program<T>, x);
  for_each_index<7>([&](auto k) {
          constexpr std::size_t K = decltype(k)::value;
          const auto& o = std::get<K>(out);
          using D = typename std::decay_t<decltype(o)>::value_type;
          check_output(o, x.logical.extents(),
                       [&](const auto& i) {
                         const auto v = x.at(i[0], i[1]);
                         if constexpr (is_float<D>) {
                           return std::pair{static_cast<double>(v), 0.0};
                         } else if constexpr (std::is_same_v<D, bool>) {
                           return std::pair{static_cast<long long>(v != 0), 0.0};  // NaN != 0: true
                         } else if constexpr (is_float<T>) {
                           return std::pair{float_to_int<D>(v), 0.0};
                         } else {
                           return std::pair{wrap<D>(static_cast<unsigned long long>(v)), 0.0};
                         }
                       },
                       [&](const auto& i) { return show<T>(x.at(i[0], i[1])); },
                       std::string(convert_names[K]) + " on " + run.name + ", " + name(how));
  });
}

// ----------------------------------------------------------------- remaps
template <class T>
constexpr auto remap_program = fx::trace([](fx::tensor<T, 2> x) {
  return std::tuple{fx::slice<1>(x, 1, 8, 3),
                    fx::pad<1>(x, 2, 1),
                    fx::cat<1>(x, fx::slice<1>(x, 0, 2)),
                    fx::cat<0>(x, x),
                    fx::permute<1, 0>(x),
                    fx::reshape(x, {fx::extent<1>(x), fx::extent<0>(x)}),
                    fx::broadcast_in_dim<0, 2>(x, {fx::extent<0>(x), 3, fx::extent<1>(x)}),
                    fx::slice<0>(fx::pad<0>(x, 1, 1), 1, fx::extent<0>(x) + 1)};
});

template <class T, class Runner>
void remap_case(const Runner& run, layout how) {
  const fx::index_t R = 5, C = 9;
  const auto values = edge_values<T>(R * C);
  const auto x = make_input<T>(how, R, C, [&](fx::index_t i, fx::index_t j) { return values[static_cast<std::size_t>(i * C + j)]; });
  const fx::index_t r = x.rows();
  const auto out = run(remap_program<T>, x);
  const std::string on = std::string(" on ") + run.name + ", " + name(how);
  auto val = [&](fx::index_t i, fx::index_t j) { return std::pair{x.at(i, j), 0.0}; };
  auto zero = [&] { return std::pair{decltype(x.at(0, 0))(0), 0.0}; };
  auto where = [](const auto&) { return std::string(); };
  check_output(std::get<0>(out), {r, 3}, [&](const auto& i) { return val(i[0], 1 + 3 * i[1]); }, where, "slice<1>(x, 1, 8, 3)" + on);
  check_output(std::get<1>(out), {r, C + 3},
               [&](const auto& i) { return i[1] < 2 || i[1] >= C + 2 ? zero() : val(i[0], i[1] - 2); }, where, "pad<1>(x, 2, 1)" + on);
  check_output(std::get<2>(out), {r, C + 2}, [&](const auto& i) { return val(i[0], i[1] < C ? i[1] : i[1] - C); }, where,
               "cat<1>(x, x[:, 0:2])" + on);
  check_output(std::get<3>(out), {2 * r, C}, [&](const auto& i) { return val(i[0] % (r ? r : 1), i[1]); }, where, "cat<0>(x, x)" + on);
  check_output(std::get<4>(out), {C, r}, [&](const auto& i) { return val(i[1], i[0]); }, where, "permute<1, 0>" + on);
  check_output(std::get<5>(out), {C, r},
               [&](const auto& i) {
                 const fx::index_t flat = i[0] * r + i[1];
                 return val(flat / C, flat % C);
               },
               where, "reshape to (C, R)" + on);
  check_output(std::get<6>(out), {r, 3, C}, [&](const auto& i) { return val(i[0], i[2]); }, where, "broadcast_in_dim<0, 2>" + on);
  check_output(std::get<7>(out), {r, C}, [&](const auto& i) { return val(i[0], i[1]); }, where, "slice of pad" + on);
}

// ------------------------------------------------------------- reductions
// Values in [-4, 4) with a -0, a NaN, infinities of both signs, subnormals
// and a cancelling pair of huge values at fixed places.
template <class T>
std::vector<T> reduction_values(fx::index_t R, fx::index_t C) {
  auto v = edge_values<T>(0);
  std::vector<T> out;
  std::uniform_real_distribution<double> d(-4, 4);
  for (fx::index_t k = 0; k < R * C; ++k) out.push_back(make<T>(std::is_same_v<T, bool> ? d(rng()) > 0 : d(rng())));
  auto put = [&](fx::index_t i, fx::index_t j, std::size_t e) { out[static_cast<std::size_t>(i * C + j)] = v[e]; };
  if constexpr (is_float<T>) {
    put(0, 0, 1);                        // -0
    put(1, 0, 9);                        // NaN
    put(2, 1, 10);                       // +inf
    put(3, 2, 10), put(3, 3, 11);        // +inf, -inf
    put(4, 5, 12), put(4, 6, 13);        // subnormals
    put(5, 4, 20), put(5, 5, 21);        // huge, -huge
  } else if constexpr (!std::is_same_v<T, bool>) {
    for (std::size_t e = 0; e < v.size() && static_cast<fx::index_t>(e) < R * C; ++e) out[e * 2 % out.size()] = v[e];
  }
  return out;
}

template <class T>
constexpr auto reduce_program = fx::trace([](fx::tensor<T, 2> x) {
  return std::tuple{fx::sum<0>(x), fx::sum<1>(x), fx::amax<0>(x), fx::amax<1>(x, fx::keepdim)};
});
template <class T>
constexpr auto moments_program = fx::trace([](fx::tensor<T, 2> x) {
  auto [var, mean] = fx::var_mean<1>(x, 1.0);
  return std::tuple{var, mean, fx::mean<0>(x), fx::var_mean<0>(x, 0.0).var};
});

template <class T, class Runner>
void reduce_case(const Runner& run, layout how) {
  const fx::index_t R = 7, C = 9;
  const auto values = reduction_values<T>(R, C);
  const auto x = make_input<T>(how, R, C, [&](fx::index_t i, fx::index_t j) { return values[static_cast<std::size_t>(i * C + j)]; });
  const fx::index_t r = x.rows();
  const std::string on = std::string(" on ") + run.name + ", " + name(how);
  auto where = [](const auto&) { return std::string(); };
  using S = typename std::tuple_element_t<0, std::decay_t<decltype(run(reduce_program<T>, x))>>::value_type;
  const double sum_scale = is_float<S> ? 4 * tol<S>().rtol : 0;
  const auto out = run(reduce_program<T>, x);
  // sum along an axis: the exact sum (modulo 2^64 for integers), with a
  // tolerance that grows with sum |x| for floats.
  auto sum_of = [&](bool rows, fx::index_t k) {
    const fx::index_t n = rows ? C : r;
    if constexpr (is_float<T>) {
      double s = 0, a = 0;
      for (fx::index_t t = 0; t < n; ++t) {
        const double v = rows ? x.at(k, t) : x.at(t, k);
        s += v, a += std::fabs(v);
      }
      return std::pair{s, a};
    } else {
      unsigned long long s = 0;
      for (fx::index_t t = 0; t < n; ++t) s += static_cast<unsigned long long>(rows ? x.at(k, t) : x.at(t, k));
      return std::pair{static_cast<long long>(s), 0.0};
    }
  };
  auto max_of = [&](bool rows, fx::index_t k) {
    const fx::index_t n = rows ? C : r;
    if constexpr (is_float<T>) {
      double m = -INFINITY;
      for (fx::index_t t = 0; t < n; ++t) m = nan_max(m, rows ? x.at(k, t) : x.at(t, k));
      return std::pair{m, 0.0};
    } else {
      long long m = std::numeric_limits<T>::lowest();
      for (fx::index_t t = 0; t < n; ++t) m = std::max<long long>(m, rows ? x.at(k, t) : x.at(t, k));
      return std::pair{m, 0.0};
    }
  };
  check_output(std::get<0>(out), {C}, [&](const auto& i) { return sum_of(false, i[0]); }, where, "sum<0>" + on, sum_scale);
  check_output(std::get<1>(out), {r}, [&](const auto& i) { return sum_of(true, i[0]); }, where, "sum<1>" + on, sum_scale);
  check_output(std::get<2>(out), {C}, [&](const auto& i) { return max_of(false, i[0]); }, where, "amax<0>" + on);
  check_output(std::get<3>(out), {r, 1}, [&](const auto& i) { return max_of(true, i[0]); }, where, "amax<1>(keepdim)" + on);

  if constexpr (is_float<T>) {
    const auto m = run(moments_program<T>, x);
    auto moments = [&](bool rows, fx::index_t k, double correction) {
      const fx::index_t n = rows ? C : r;
      double s = 0, a = 0;
      for (fx::index_t t = 0; t < n; ++t) s += rows ? x.at(k, t) : x.at(t, k), a += std::fabs(rows ? x.at(k, t) : x.at(t, k));
      const double mean = s / static_cast<double>(n);
      double q = 0, q2 = 0;
      for (fx::index_t t = 0; t < n; ++t) {
        const double v = rows ? x.at(k, t) : x.at(t, k);
        q += (v - mean) * (v - mean), q2 += v * v;
      }
      const double dof = static_cast<double>(n) - correction;
      return std::array{std::pair{q / dof, q2 / dof}, std::pair{mean, a / static_cast<double>(n)}};
    };
    const double scale = 8 * tol<T>().rtol;
    check_output(std::get<0>(m), {r}, [&](const auto& i) { return moments(true, i[0], 1)[0]; }, where, "var_mean<1>(x, 1).var" + on, scale);
    check_output(std::get<1>(m), {r}, [&](const auto& i) { return moments(true, i[0], 1)[1]; }, where, "var_mean<1>(x, 1).mean" + on, scale);
    check_output(std::get<2>(m), {C}, [&](const auto& i) { return moments(false, i[0], 0)[1]; }, where, "mean<0>" + on, scale);
    check_output(std::get<3>(m), {C}, [&](const auto& i) { return moments(false, i[0], 0)[0]; }, where, "var_mean<0>(x, 0).var" + on, scale);
  }
}

// ----------------------------------------------------------------- matmul
template <class T>
constexpr auto matmul_program = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b) { return fx::matmul(a, b); });

template <class T, class Runner>
void matmul_case(const Runner& run, layout how) {
  const fx::index_t M = 6, K = 9, N = 7;
  std::uniform_real_distribution<double> d(-2, 2);
  std::vector<T> av, bv;
  for (fx::index_t k = 0; k < M * K; ++k) av.push_back(from_double<T>(d(rng())));
  for (fx::index_t k = 0; k < K * N; ++k) bv.push_back(from_double<T>(d(rng())));
  av[1 * K + 3] = from_double<T>(NAN);       // row 1 of the product: NaN
  av[2 * K + 4] = from_double<T>(INFINITY);  // row 2: +-inf by b's signs
  const auto a = make_input<T>(how, M, K, [&](fx::index_t i, fx::index_t j) { return av[static_cast<std::size_t>(i * K + j)]; });
  // b keeps its K rows: the layouts that change the values are a's alone.
  const layout bhow = how == layout::empty || how == layout::row_broadcast ? layout::padded_rows : how;
  const auto b = make_input<T>(bhow, K, N, [&](fx::index_t i, fx::index_t j) { return bv[static_cast<std::size_t>(i * N + j)]; });
  const auto out = std::get<0>(run(matmul_program<T>, a, b));
  check_output(out, {a.rows(), N},
               [&](const auto& i) {
                 double s = 0, mag = 0;
                 for (fx::index_t k = 0; k < K; ++k) {
                   s += a.at(i[0], k) * b.at(k, i[1]);
                   mag += std::fabs(a.at(i[0], k) * b.at(k, i[1]));
                 }
                 return std::pair{s, mag};
               },
               [](const auto&) { return std::string(); }, std::string("matmul on ") + run.name + ", " + name(how), 4 * tol<T>().rtol);
}

}  // namespace fxt::conf
