// 16-bit and f32 gradients of the composite ops, from the fused host plans,
// against the f64 gradients of the same programs on the same (rounded)
// inputs. Tolerances per dtype (the brief's), with an absolute part scaled to
// the largest gradient, since dx of a norm is a difference of terms.

#include "../grad_check.hpp"

namespace {

namespace fx = fusex;
using fx::host_tensor;

template <class T>
fxt::tolerance grad_tol() {
  if constexpr (std::is_same_v<T, float>) return {1e-5, 1e-5};
  else return fxt::tol<T>();
}

template <int R, class T>
host_tensor<double, R> widen(const host_tensor<T, R>& x) {
  fx::extents_array<R> e{};
  for (int i = 0; i < R; ++i) e[i] = x.extent(i);
  host_tensor<double, R> y(e);
  for (std::size_t i = 0; i < x.values().size(); ++i) y.values()[i] = fxt::to_double(x.values()[i]);
  return y;
}
template <class X>
auto widen_arg(const X& x) {
  if constexpr (fxt::is_host_tensor<X>::value) return widen(x);
  else return x;
}

// Gradients of vjp program VT (dtype T, fused host plans) against VD (f64,
// reference executor) for the same arguments and cotangents.
template <class T, class VT, class VD, class Args, class Cots>
void check_against_f64(VT vt, VD vd, const Args& args, const Cots& cots, fxt::tolerance t = grad_tol<T>()) {
  const auto got = fxt::gradients(vt, fx::host{}, args, cots);
  const auto wide = [](const auto& t) { return std::apply([](const auto&... x) { return std::tuple{widen_arg(x)...}; }, t); };
  const auto want = fxt::gradients(vd, fx::reference, wide(args), wide(cots));
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((fxt::require_close(std::get<I>(got), std::get<I>(want), t.rtol, t.rtol * fxt::max_abs(std::get<I>(want)),
                         "gradient " + std::to_string(I))),
     ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(want)>>{});
}

template <class T>
constexpr auto gelus = fx::trace([](fx::tensor<T, 2> x) { return std::tuple{fx::ops::gelu(x), fx::ops::gelu_tanh(x)}; });
template <class T>
constexpr auto norms = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  return std::tuple{fx::ops::layer_norm(x, w, b, 1e-5).y, fx::ops::rms_norm(x, w, 1e-5)};
});
template <class T>
constexpr auto swiglu = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b) { return fx::ops::swiglu(a, b); });
template <class T>
constexpr auto qkv = fx::trace([](fx::tensor<T, 3> qkv, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::index n_head,
                                  fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, groups, hs, n});
});
constexpr fx::vjp_options only_x{.wrt = fx::wrt({0})};

TEMPLATE_TEST_CASE("gelu gradients in 16-bit and f32, including |x| > 10", "[grad][dtype]", float, fx::bf16, fx::f16) {
  using T = TestType;
  auto x = fxt::random_tensor<T, 2>({4, 33}, -5, 5);
  const double big[] = {-30, -12, -10.5, 10.5, 12, 30};
  for (int i = 0; i < 6; ++i) x.values()[i] = fxt::from_double<T>(big[i]);
  check_against_f64<T>(fx::vjp(gelus<T>), fx::vjp(gelus<double>), std::tuple{x},
                       std::tuple{fxt::random_tensor<T, 2>({4, 33}), fxt::random_tensor<T, 2>({4, 33})});
}

TEMPLATE_TEST_CASE("layer_norm and rms_norm gradients: large means, small variances, constant rows", "[grad][dtype]",
                   float, fx::bf16, fx::f16) {
  using T = TestType;
  const int C = 40;
  auto x = fxt::random_tensor<T, 2>({6, C});
  // std 1 around 1e4 (f32), std 100 around 1e4 (16-bit keeps ~3 digits there)
  const double spread = std::is_same_v<T, float> ? 1.0 : 100.0;
  for (int j = 0; j < C; ++j) {
    x(0, j) = fxt::from_double<T>(1e4 + spread * std::sin(1.7 * j));
    x(1, j) = fxt::from_double<T>(-1e4 + spread * std::cos(0.3 * j));
    x(2, j) = fxt::from_double<T>(0.5);  // constant rows
    x(3, j) = fxt::from_double<T>(-1e4);
  }
  // In f32 the rows around 1e4 with std 1 have condition |mean|/std = 1e4:
  // x - mean keeps only eps(f32) * 1e4 ~ 1.2e-3 relative accuracy in any
  // f32 algorithm, so that, not the f32 default, bounds the error of x-hat.
  const fxt::tolerance t = std::is_same_v<T, float> ? fxt::tolerance{1.2e-3, 1e-5} : grad_tol<T>();
  check_against_f64<T>(fx::vjp(norms<T>), fx::vjp(norms<double>),
                       std::tuple{x, fxt::random_tensor<T, 1>({C}), fxt::random_tensor<T, 1>({C})},
                       std::tuple{fxt::random_tensor<T, 2>({6, C}), fxt::random_tensor<T, 2>({6, C})}, t);
}

TEMPLATE_TEST_CASE("swiglu gradients in 16-bit and f32", "[grad][dtype]", float, fx::bf16, fx::f16) {
  using T = TestType;
  check_against_f64<T>(fx::vjp(swiglu<T>), fx::vjp(swiglu<double>),
                       std::tuple{fxt::random_tensor<T, 2>({5, 24}, -6, 6), fxt::random_tensor<T, 2>({5, 24})},
                       std::tuple{fxt::random_tensor<T, 2>({5, 24})});
}

TEMPLATE_TEST_CASE("qkv split + rope gradients in 16-bit and f32 (GQA, expanded, partial rotary)", "[grad][dtype]",
                   float, fx::bf16, fx::f16) {
  using T = TestType;
  const int B = 2, Tn = 5, n_head = 4, groups = 2, hs = 16, n = 8, C = (n_head + 2 * groups) * hs;
  check_against_f64<T>(fx::vjp<only_x>(qkv<T>), fx::vjp<only_x>(qkv<double>),
                       std::tuple{fxt::random_tensor<T, 3>({B, Tn, C}), fxt::random_tensor<T, 2>({Tn, n}, -1, 1),
                                  fxt::random_tensor<T, 2>({Tn, n}, -1, 1), n_head, groups, hs, n},
                       std::tuple{fxt::random_tensor<T, 4>({B, n_head, Tn, hs}), fxt::random_tensor<T, 4>({B, n_head, Tn, hs}),
                                  fxt::random_tensor<T, 4>({B, n_head, Tn, hs})});
}

}  // namespace
