// The VJP of every differentiable prim against central finite differences
// in f64, through the reference executor, and the fused host plan of each
// backward against the reference.

#include "../grad_check.hpp"

namespace {

using fxt::fx::host_tensor;
namespace fx = fusex;
using T = double;

template <int R>
host_tensor<T, R> rnd(const fx::extents_array<R>& e, double lo = -2, double hi = 2) {
  return fxt::random_tensor<T, R>(e, lo, hi);
}

constexpr auto unary = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> p) {
  // a: any sign; p: positive (log, sqrt, rsqrt, reciprocal)
  return std::tuple{fx::neg(a), fx::abs(a), fx::exp(a), fx::exp2(a), fx::log(p), fx::log1p(p), fx::sqrt(p),
                    fx::rsqrt(p), fx::reciprocal(p), fx::erf(a), fx::tanh(a), fx::sin(a), fx::cos(a), fx::sigmoid(a),
                    fx::dgelu(a)};
});

TEST_CASE("unary prim VJPs match finite differences", "[grad][prims]") {
  auto a = rnd<2>({3, 4});
  for (auto& v : a.values())
    if (std::fabs(v) < 0.05) v = 0.3;  // abs is not differentiable at 0
  auto p = rnd<2>({3, 4}, 0.3, 3);
  std::tuple<host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>,
             host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>,
             host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>, host_tensor<T, 2>>
      cots{rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}),
           rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4}), rnd<2>({3, 4})};
  fxt::check_gradients(unary, fx::vjp(unary), std::tuple{a, p}, cots);
}

// Binary ops with broadcasting: b has a statically-1 axis, s is rank 0.
constexpr auto binary = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b, fx::tensor<T, 0> s, fx::tensor<T, 2> pos) {
  auto b1 = fx::broadcast_in_dim<0, 1>(fx::sum<1>(b, fx::keepdim), {b.extent<0>(), fx::index(1)});
  return std::tuple{a + b1 * s, a - b1, a * b1, a / (b1 * b1 + 1.0), fx::pow(pos, a), fx::maximum(a, b1),
                    fx::minimum(a, s), fx::where(a > b1, a * a, b1 * s)};
});

TEST_CASE("binary prim VJPs match finite differences, with broadcasting", "[grad][prims]") {
  auto a = rnd<2>({4, 5});
  auto b = rnd<2>({4, 3});
  host_tensor<T, 0> s({}, {0.75});
  auto pos = rnd<2>({4, 5}, 0.5, 2);
  auto c = [] { return rnd<2>({4, 5}); };
  fxt::check_gradients(binary, fx::vjp(binary), std::tuple{a, b, s, pos},
                       std::tuple{c(), c(), c(), c(), c(), c(), c(), c()});
}

constexpr auto remaps = fx::trace([](fx::tensor<T, 3> x, fx::tensor<T, 2> y, fx::tensor<T, 1> v) {
  auto b = fx::broadcast_in_dim<1>(v, {x.extent<0>(), v.extent<0>(), fx::index(2)});  // new axes 0 and 2
  auto e = fx::expand(fx::unsqueeze<0>(y), {fx::index(3), y.extent<0>(), y.extent<1>()});
  auto r = fx::reshape(x, {x.extent<2>(), -1});
  auto t = fx::transpose<0, 2>(x);
  auto s1 = fx::slice<1>(x, 1, 4);
  auto s2 = fx::slice<2>(x, 1, 6, 2);      // step 2: 1, 3, 5
  auto s3 = fx::slice<1>(x, 0, 5, 3);      // step 3: 0, 3
  auto p = fx::pad<0>(x, 2, 1, 0.5);
  auto c = fx::cat<2>(x, fx::slice<2>(x, 0, 2), x * x);
  return std::tuple{b, e, r, t, s1, s2, s3, p, c};
});

TEST_CASE("index remap VJPs (broadcast, reshape, transpose, slice with steps, pad, cat)", "[grad][prims]") {
  auto x = rnd<3>({2, 5, 6});
  auto y = rnd<2>({2, 7});
  auto v = rnd<1>({5});
  fxt::check_gradients(remaps, fx::vjp(remaps), std::tuple{x, y, v},
                       std::tuple{rnd<3>({2, 5, 2}), rnd<3>({3, 2, 7}), rnd<2>({6, 10}), rnd<3>({6, 5, 2}),
                                  rnd<3>({2, 3, 6}), rnd<3>({2, 5, 3}), rnd<3>({2, 2, 6}), rnd<3>({5, 5, 6}),
                                  rnd<3>({2, 5, 14})});
}

constexpr auto reductions = fx::trace([](fx::tensor<T, 3> x) {
  auto [var0, mean0] = fx::var_mean<1>(x);
  auto [var1, mean1] = fx::var_mean<2>(x, 1.0, fx::keepdim);
  return std::tuple{fx::sum<0>(x), fx::sum<2>(x, fx::keepdim), fx::amax<1>(x), fx::amax<2>(x, fx::keepdim), var0,
                    mean0, var1, fx::mean<-1>(x * x), fx::sum<2>(x) / fx::index_value<T>(x.extent<2>(), x)};
});

TEST_CASE("reduction VJPs (sum, amax, var_mean with correction, mean)", "[grad][prims]") {
  auto x = rnd<3>({3, 4, 5});
  fxt::check_gradients(reductions, fx::vjp(reductions), std::tuple{x},
                       std::tuple{rnd<2>({4, 5}), rnd<3>({3, 4, 1}), rnd<2>({3, 5}), rnd<3>({3, 4, 1}), rnd<2>({3, 5}),
                                  rnd<2>({3, 5}), rnd<3>({3, 4, 1}), rnd<2>({3, 4}), rnd<2>({3, 4})});
}

TEST_CASE("amax shares the cotangent among tied maxima", "[grad][prims]") {
  constexpr auto f = fx::trace([](fx::tensor<T, 2> x) { return fx::amax<1>(x); });
  host_tensor<T, 2> x({2, 4}, {1, 3, 3, 2, -1, -1, -1, -1});
  host_tensor<T, 1> dy({2}, {2.0, 4.0});
  const auto g = fxt::gradients(fx::vjp(f), fx::reference, std::tuple{x}, std::tuple{dy});
  const double want[8] = {0, 1, 1, 0, 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) CHECK(std::get<0>(g).values()[i] == want[i]);
}

constexpr auto matmuls = fx::trace([](fx::tensor<T, 3> a, fx::tensor<T, 3> b, fx::tensor<T, 2> w, fx::tensor<T, 2> a1) {
  // batched, shared rank-2 right operand, and a batch extent of 1 broadcast
  return std::tuple{fx::matmul(a, b), fx::matmul(a, w), fx::matmul(fx::unsqueeze<0>(a1), b)};
});

TEST_CASE("matmul VJPs: batched, shared right operand, broadcast batch", "[grad][prims]") {
  auto a = rnd<3>({2, 3, 4});
  auto b = rnd<3>({2, 4, 5});
  auto w = rnd<2>({4, 5});
  auto a1 = rnd<2>({3, 4});
  fxt::check_gradients(matmuls, fx::vjp(matmuls), std::tuple{a, b, w, a1},
                       std::tuple{rnd<3>({2, 3, 5}), rnd<3>({2, 3, 5}), rnd<3>({2, 3, 5})});
}

// Softmax over the last axis, with a value used twice (shared subexpression)
// and a dtype round trip.
constexpr auto softmax = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 2> z) {
  auto m = fx::amax<1>(x, fx::keepdim);
  auto e = fx::exp(x - m);
  auto s = e / fx::sum<1>(e, fx::keepdim);
  auto zf = fx::convert<T>(fx::convert<float>(z) * 2.0f);
  return std::tuple{s * s + s, zf};
});

TEST_CASE("softmax and shared subexpressions", "[grad][prims]") {
  auto x = rnd<2>({3, 6});
  auto z = rnd<2>({3, 6});
  const auto dz = rnd<2>({3, 6});
  const auto v = fx::vjp(softmax);
  // convert: the cotangent converts back, exactly 2 * dz through f32
  const auto g = fxt::gradients(v, fx::reference, std::tuple{x, z}, std::tuple{rnd<2>({3, 6}), dz});
  for (std::size_t i = 0; i < dz.values().size(); ++i)
    CHECK(std::get<1>(g).values()[i] == static_cast<double>(static_cast<float>(static_cast<float>(dz.values()[i]) * 2.0f)));
  // finite differences on x only (the f32 round trip makes z's too coarse)
  constexpr auto only_x = fx::vjp<fx::vjp_options{.wrt = fx::wrt({0})}>(softmax);
  fxt::check_gradients(softmax, only_x, std::tuple{x, z}, std::tuple{rnd<2>({3, 6}), dz});
}

TEST_CASE("arguments that no output depends on get zero gradients", "[grad][prims]") {
  constexpr auto f = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 2> /*unused*/) { return x * 3.0; });
  const auto g = fxt::gradients(fx::vjp(f), fx::reference, std::tuple{rnd<2>({2, 3}), rnd<2>({4, 1})},
                                std::tuple{rnd<2>({2, 3})});
  REQUIRE(std::get<1>(g).extent(0) == 4);
  for (double v : std::get<1>(g).values()) CHECK(v == 0.0);
}

}  // namespace
