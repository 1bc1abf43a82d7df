#pragma once
// Gradient checks. A program's arguments are given as a std::tuple of
// host tensors and integers (index arguments); its cotangents as a tuple of
// host tensors, one per output. The oracle is central finite differences of
//   L(args) = sum over outputs o of <f(args)_o, cotangent_o>
// evaluated prim by prim (reference executor) in f64.

#include <tuple>
#include <utility>
#include <vector>

#include "support.hpp"

namespace fxt {

template <class X>
struct is_host_tensor : std::false_type {};
template <class T, int R>
struct is_host_tensor<fx::host_tensor<T, R>> : std::true_type {};

template <class T, int R>
double dot(const fx::host_tensor<T, R>& a, const fx::host_tensor<T, R>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.values().size(); ++i) s += to_double(a.values()[i]) * to_double(b.values()[i]);
  return s;
}

// Evaluates a program or a plan with the arguments of a tuple; always a tuple back.
template <class Runnable, class Exec, class Args>
auto run_tuple(Runnable r, Exec exec, const Args& args) {
  return fx::detail::as_tuple(std::apply([&](const auto&... a) { return fx::evaluate(r, exec, a...); }, args));
}

template <class P, class Args, class Cots>
double loss(P p, const Args& args, const Cots& cots) {
  const auto outs = run_tuple(p, fx::reference, args);
  double l = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((l += dot(std::get<I>(outs), std::get<I>(cots))), ...);
  }(std::make_index_sequence<std::tuple_size_v<Cots>>{});
  return l;
}

// The gradients of vjp program V on executor `exec` (unplanned for the
// reference, planned with the default policy otherwise).
template <class V, class Exec, class Args, class Cots>
auto gradients(V, Exec exec, const Args& args, const Cots& cots) {
  if constexpr (std::is_same_v<Exec, fx::reference_executor>) {
    const auto fwd = run_tuple(V::forward, exec, args);
    return run_tuple(V::backward, exec, std::tuple_cat(args, fwd, cots));
  } else {
    const auto fwd = run_tuple(fx::partition(V::forward), exec, args);
    return run_tuple(fx::partition(V::backward), exec, std::tuple_cat(args, fwd, cots));
  }
}

// Position of argument I's gradient among V's gradients.
template <class P, class V>
constexpr int gradient_index(int arg) {
  int k = 0;
  for (int p = 0; p < arg; ++p) {
    const auto& a = P::graph.params[p];
    k += a.kind == fx::arg_kind::tensor && fx::is_floating(a.dt) && ((V::options.wrt >> p) & 1);
  }
  return k;
}
template <class P, class V>
constexpr bool differentiated(int arg) {
  const auto& a = P::graph.params[arg];
  return a.kind == fx::arg_kind::tensor && fx::is_floating(a.dt) && ((V::options.wrt >> arg) & 1);
}

// Element-wise comparison of two tensors of the same extents.
template <class T, class U, int R>
void require_close(const fx::host_tensor<T, R>& got, const fx::host_tensor<U, R>& want, double rtol, double atol,
                   const std::string& what) {
  for (int i = 0; i < R; ++i) REQUIRE(got.extent(i) == want.extent(i));
  int bad = 0;
  for (std::size_t i = 0; i < got.values().size(); ++i) {
    const double g = to_double(got.values()[i]), w = to_double(want.values()[i]);
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      if (bad++ < 5) UNSCOPED_INFO(what << " element " << i << ": got " << g << ", expected " << w);
    }
  }
  CHECK(bad == 0);
}

// The largest magnitude in a tensor (a scale for absolute tolerances).
template <class T, int R>
double max_abs(const fx::host_tensor<T, R>& t) {
  double m = 0;
  for (const auto& v : t.values()) m = std::max(m, std::fabs(to_double(v)));
  return m;
}

// Reference-executor gradients of V against central differences of P in
// f64, and the fused host executor's gradients against the reference's.
template <class P, class V, class Args, class Cots>
void check_gradients(P p, V v, Args args, const Cots& cots, double h = 1e-6, double rtol = 1e-6) {
  const auto ref = gradients(v, fx::reference, args, cots);
  const auto host = gradients(v, fx::host{}, args, cots);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto check_arg = [&]<std::size_t A>(std::integral_constant<std::size_t, A>) {
      if constexpr (is_host_tensor<std::tuple_element_t<A, Args>>::value) {
        if constexpr (differentiated<P, V>(A)) {
          constexpr int k = gradient_index<P, V>(A);
          const auto& g = std::get<k>(ref);
          auto& x = std::get<A>(args);
          const double scale = std::max(1.0, max_abs(g));
          int bad = 0;
          for (std::size_t i = 0; i < x.values().size(); ++i) {
            const auto x0 = x.values()[i];
            x.values()[i] = from_double<std::remove_cvref_t<decltype(x0)>>(to_double(x0) + h);
            const double lp = loss(p, args, cots);
            x.values()[i] = from_double<std::remove_cvref_t<decltype(x0)>>(to_double(x0) - h);
            const double lm = loss(p, args, cots);
            x.values()[i] = x0;
            const double fd = (lp - lm) / (2 * h);
            const double an = to_double(g.values()[i]);
            if (!(std::fabs(an - fd) <= rtol * scale + rtol * std::fabs(fd))) {
              if (bad++ < 5)
                UNSCOPED_INFO("argument " << A << " element " << i << ": vjp " << an << ", finite differences " << fd);
            }
          }
          CHECK(bad == 0);
          require_close(std::get<k>(host), g, 1e-9, 1e-9 * scale, "host vs reference, argument " + std::to_string(A));
        }
      }
    };
    (check_arg(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<std::tuple_size_v<Args>>{});
}

}  // namespace fxt
