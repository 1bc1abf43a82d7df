#pragma once
// Runs a program under the three policies on an executor and compares every
// output with the reference executor, element by element, within the
// tolerance of the output's dtype.

#include <cstring>
#include <tuple>

#include "support.hpp"

namespace fxt {

template <class T, int R>
void require_close(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref, const char* what) {
  REQUIRE(got.extents() == ref.extents());
  for (fx::index_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got.values()[i]), e = to_double(ref.values()[i]);
    INFO(what << ": element " << i << " is " << g << ", reference " << e);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, fx::bf16> ||
                  std::is_same_v<T, fx::f16>) {
      REQUIRE(close(g, e, tol<T>()));
    } else {
      REQUIRE(g == e);
    }
  }
}

template <class A, class B>
void require_all_close(const A& got, const B& ref, const char* what) {
  if constexpr (requires { got.values(); }) {
    require_close(got, ref, what);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (require_close(std::get<I>(got), std::get<I>(ref), what), ...);
    }(std::make_index_sequence<std::tuple_size_v<A>>{});
  }
}

// Every value of got equals ref's, bit for bit (a tensor or a tuple of them).
template <class A>
void require_same_bits(const A& got, const A& ref, const char* what) {
  const auto one = [&](const auto& g, const auto& r) {
    INFO(what);
    REQUIRE(g.size() == r.size());
    REQUIRE(std::memcmp(g.data(), r.data(), static_cast<std::size_t>(g.size()) * sizeof *g.data()) == 0);
  };
  if constexpr (requires { got.values(); }) {
    one(got, ref);
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (one(std::get<I>(got), std::get<I>(ref)), ...); }(
        std::make_index_sequence<std::tuple_size_v<A>>{});
  }
}
// A strided view's values, gathered into a dense tensor for the comparison.
template <class T, int R>
fx::host_tensor<T, R> gathered(fx::view<T, R> v) {
  fx::host_tensor<T, R> t(v.extents());
  fx::index_t i = 0;
  fx::extents_array<R> c{};
  for (; i < t.size(); ++i) {
    fx::index_t off = 0;
    for (int d = 0; d < R; ++d) off += c[d] * v.strides()[d];
    t.values()[static_cast<std::size_t>(i)] = v.data()[off];
    for (int d = R - 1; d >= 0 && ++c[d] == v.extents()[d]; --d) c[d] = 0;
  }
  return t;
}

// Checks program P on the host executor under every policy against the reference.
template <class... Claimants, class P, class... Args>
void check_policies(P prog, const char* name, const Args&... args) {
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  const auto fused = fx::evaluate(fx::partition(prog, fx::policy::fused<Claimants...>{}), fx::host{}, args...);
  require_all_close(fused, ref, name);
  const auto greedy = fx::evaluate(fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), fx::host{}, args...);
  require_all_close(greedy, ref, name);
  const auto unfused = fx::evaluate(fx::partition(prog, fx::policy::unfused<Claimants...>{}), fx::host{}, args...);
  require_all_close(unfused, ref, name);
}

}  // namespace fxt
