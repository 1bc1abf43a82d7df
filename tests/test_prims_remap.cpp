// Index remaps on the reference executor against direct index formulas:
// broadcast_in_dim, reshape (with an inferred extent), permute, slice with
// step, pad, cat; odd and zero extents; non-contiguous inputs.
#include "support.hpp"

using namespace fxt;
namespace fx = fusex;

namespace {

template <class T>
struct input3 {
  int a, b, c;
  std::vector<T> storage;  // stored transposed as (c, b, a): a non-contiguous view
  fx::view<const T, 3> view;
  input3(int a_, int b_, int c_) : a(a_), b(b_), c(c_), storage(static_cast<std::size_t>(a_ * b_ * c_) + 1) {
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < b; ++j)
        for (int k = 0; k < c; ++k) storage[static_cast<std::size_t>((k * b + j) * a + i)] = from_double<T>(value(i, j, k));
    view = fx::view<const T, 3>(storage.data(), {a, b, c}, {1, a, a * b});
  }
  static double value(int i, int j, int k) { return i * 100 + j * 10 + k + 0.5; }
};

template <class T>
constexpr auto p_bcast = fx::trace([](fx::tensor<T, 2> x, fx::index n) {
  return fx::broadcast_in_dim<0, 2>(x, {fx::extent<0>(x), n, fx::extent<1>(x)});
});
template <class T>
constexpr auto p_reshape = fx::trace([](fx::tensor<T, 3> x) {
  return fx::reshape(x, {fx::extent<2>(x), -1});
});
template <class T>
constexpr auto p_permute = fx::trace([](fx::tensor<T, 3> x) { return fx::permute<2, 0, 1>(x); });
template <class T>
constexpr auto p_slice = fx::trace([](fx::tensor<T, 3> x, fx::index start, fx::index stop, fx::index step) {
  return fx::slice<1>(x, start, stop, step);
});
template <class T>
constexpr auto p_pad = fx::trace([](fx::tensor<T, 3> x, fx::index lo, fx::index hi) {
  return fx::pad<-1>(x, lo, hi, -1.5);
});
template <class T>
constexpr auto p_cat = fx::trace([](fx::tensor<T, 3> x, fx::tensor<T, 3> y) { return fx::cat<1>(x, y, x); });
template <class T>
constexpr auto p_transpose = fx::trace([](fx::tensor<T, 3> x) { return fx::transpose<0, -1>(x); });

}  // namespace

TEMPLATE_TEST_CASE("broadcast_in_dim adds axes and grows extents of 1", "[prims][remap]", float, fx::bf16, fx::f16) {
  using T = TestType;
  std::vector<T> x(3 * 1);
  for (int i = 0; i < 3; ++i) x[i] = from_double<T>(i + 0.25);
  auto out = fx::evaluate(p_bcast<T>, fx::reference, fx::view<const T, 2>(x.data(), {3, 1}), 4);
  REQUIRE(out.extent(0) == 3);
  REQUIRE(out.extent(1) == 4);
  REQUIRE(out.extent(2) == 1);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(to_double(out(i, j, 0)) == i + 0.25);
  // Zero-size output along the new axis.
  std::vector<T> y(5);
  for (int k = 0; k < 5; ++k) y[k] = from_double<T>(k);
  auto out2 = fx::evaluate(p_bcast<T>, fx::reference, fx::view<const T, 2>(y.data(), {1, 5}), 0);
  REQUIRE(out2.extent(1) == 0);
  REQUIRE(out2.size() == 0);
}

TEMPLATE_TEST_CASE("reshape, permute and transpose follow row-major index formulas", "[prims][remap]", float, fx::bf16, fx::f16) {
  using T = TestType;
  input3<T> in(3, 5, 2);
  auto r = fx::evaluate(p_reshape<T>, fx::reference, in.view);
  REQUIRE(r.extent(0) == 2);
  REQUIRE(r.extent(1) == 15);
  for (int lin = 0; lin < 30; ++lin) {
    const int i = lin / 10, j = (lin / 2) % 5, k = lin % 2;
    REQUIRE(to_double(r(lin / 15, lin % 15)) == to_double(from_double<T>(input3<T>::value(i, j, k))));
  }
  auto p = fx::evaluate(p_permute<T>, fx::reference, in.view);
  REQUIRE(p.extent(0) == 2);
  REQUIRE(p.extent(1) == 3);
  REQUIRE(p.extent(2) == 5);
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) REQUIRE(to_double(p(k, i, j)) == to_double(from_double<T>(input3<T>::value(i, j, k))));
  auto t = fx::evaluate(p_transpose<T>, fx::reference, in.view);
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 5; ++j)
      for (int i = 0; i < 3; ++i) REQUIRE(to_double(t(k, j, i)) == to_double(from_double<T>(input3<T>::value(i, j, k))));
}

TEMPLATE_TEST_CASE("slice with run-time bounds and step", "[prims][remap]", float, fx::bf16, fx::f16) {
  using T = TestType;
  input3<T> in(2, 9, 3);
  struct bounds {
    int start, stop, step;
  };
  for (bounds bd : {bounds{0, 9, 1}, bounds{1, 8, 3}, bounds{2, 2, 1}, bounds{4, 9, 2}, bounds{0, 9, 4}}) {
    auto s = fx::evaluate(p_slice<T>, fx::reference, in.view, bd.start, bd.stop, bd.step);
    const int n = (bd.stop - bd.start + bd.step - 1) / bd.step;
    INFO("slice " << bd.start << ":" << bd.stop << ":" << bd.step);
    REQUIRE(s.extent(1) == n);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < 3; ++k)
          REQUIRE(to_double(s(i, j, k)) == to_double(from_double<T>(input3<T>::value(i, bd.start + j * bd.step, k))));
  }
}

TEMPLATE_TEST_CASE("pad fills with the value on both sides", "[prims][remap]", float, fx::bf16, fx::f16) {
  using T = TestType;
  input3<T> in(2, 3, 3);
  auto p = fx::evaluate(p_pad<T>, fx::reference, in.view, 2, 1);
  REQUIRE(p.extent(2) == 6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 6; ++k) {
        const double expect = (k < 2 || k >= 5) ? -1.5 : to_double(from_double<T>(input3<T>::value(i, j, k - 2)));
        REQUIRE(to_double(p(i, j, k)) == expect);
      }
  auto z = fx::evaluate(p_pad<T>, fx::reference, fx::view<const T, 3>(nullptr, {2, 3, 0}), 0, 2);
  REQUIRE(z.extent(2) == 2);
  for (int k = 0; k < 12; ++k) REQUIRE(to_double(z.values()[k]) == -1.5);
}

TEMPLATE_TEST_CASE("cat joins operands along an axis", "[prims][remap]", float, fx::bf16, fx::f16) {
  using T = TestType;
  input3<T> x(2, 3, 4);
  std::vector<T> y(2 * 0 * 4);  // a zero-extent operand in the middle
  auto c = fx::evaluate(p_cat<T>, fx::reference, x.view, fx::view<const T, 3>(y.data(), {2, 0, 4}));
  REQUIRE(c.extent(1) == 6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 4; ++k)
        REQUIRE(to_double(c(i, j, k)) == to_double(from_double<T>(input3<T>::value(i, j % 3, k))));
}
