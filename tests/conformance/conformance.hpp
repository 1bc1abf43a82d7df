#pragma once
// The conformance suite: every prim, in every dtype, over edge values and
// input layouts, through any executor, against formulas in double precision
// (or exact integer arithmetic) written here from docs/prims.md.
//
// An executor enters the suite as a `runner`: a callable that takes a
// program and its inputs (values plus the layout to store them in) and
// returns the program's outputs as host tensors. The host suite
// (test_conformance_*.cpp) runs the reference executor and the host executor
// under the fused and unfused policies; the CUDA suite (tests/cuda) runs the
// same cases on the device. Only the public API is used.

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "../support.hpp"

namespace fxt::conf {

// ---------------------------------------------------------------- layouts
// How a rank-2 input is stored. Every layout holds the same logical values,
// except row_broadcast (every row is row 0, stored once with stride 0) and
// empty (no rows).
enum class layout { contiguous, padded_rows, column_major, row_broadcast, misaligned, empty };
inline constexpr std::array all_layouts = {layout::contiguous, layout::padded_rows,   layout::column_major,
                                           layout::row_broadcast, layout::misaligned, layout::empty};
inline const char* name(layout l) {
  switch (l) {
    case layout::contiguous: return "contiguous";
    case layout::padded_rows: return "padded rows";
    case layout::column_major: return "column-major";
    case layout::row_broadcast: return "stride-0 rows";
    case layout::misaligned: return "misaligned base";
    case layout::empty: return "zero rows";
  }
  return "?";
}

template <class T>
inline constexpr bool is_float = std::is_floating_point_v<T> || std::is_same_v<T, fx::bf16> || std::is_same_v<T, fx::f16>;

// A value as the formulas see it: exact integers, doubles for floats.
template <class T>
auto num(T v) {
  if constexpr (is_float<T>) return to_double(v);
  else return static_cast<long long>(v);
}
template <class T>
T make(double v) {
  if constexpr (is_float<T>) return from_double<T>(v);
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(static_cast<long long>(v));
}

// A rank-2 input: its logical values and a copy of them stored in a layout
// (the storage around the elements holds a poison value that is never read).
template <class T>
struct input {
  fx::host_tensor<T, 2> logical;
  fx::extents_array<2> strides{};
  int offset = 0;
  std::size_t span = 0;
  std::unique_ptr<T[]> storage;
  layout how{};

  fx::view<const T, 2> view() const { return fx::view<const T, 2>(storage.get() + offset, logical.extents(), strides); }
  auto at(fx::index_t i, fx::index_t j) const { return num(logical(i, j)); }
  fx::index_t rows() const { return logical.extent(0); }
  fx::index_t cols() const { return logical.extent(1); }
};

// value(i, j) gives the logical element (row_broadcast uses row 0 only).
template <class T>
input<T> make_input(layout how, fx::index_t rows, fx::index_t cols, const std::function<T(fx::index_t, fx::index_t)>& value) {
  input<T> in;
  in.how = how;
  if (how == layout::empty) rows = 0;
  in.logical = fx::host_tensor<T, 2>({rows, cols});
  for (fx::index_t i = 0; i < rows; ++i)
    for (fx::index_t j = 0; j < cols; ++j) in.logical(i, j) = value(how == layout::row_broadcast ? 0 : i, j);
  switch (how) {
    case layout::padded_rows: in.strides = {cols + 3, 1}; break;
    case layout::column_major: in.strides = {1, rows}; break;
    case layout::row_broadcast: in.strides = {0, 1}; break;
    default: in.strides = {cols, 1}; break;
  }
  in.offset = how == layout::misaligned ? 1 : 0;
  fx::index_t last = 0;
  for (int d = 0; d < 2; ++d)
    if (in.logical.extent(d) > 0) last += (in.logical.extent(d) - 1) * in.strides[d];
  in.span = static_cast<std::size_t>(in.offset + last + 2);
  in.storage = std::make_unique<T[]>(in.span);
  for (std::size_t k = 0; k < in.span; ++k) in.storage[k] = make<T>(-77);
  for (fx::index_t i = 0; i < rows; ++i)
    for (fx::index_t j = 0; j < cols; ++j) in.storage[static_cast<std::size_t>(in.offset + i * in.strides[0] + j * in.strides[1])] = in.logical(i, j);
  return in;
}

// ------------------------------------------------------------ edge values
template <class T>
std::vector<double> float_edges() {
  double denorm_min, min_normal, max, tiny, huge;
  if constexpr (std::is_same_v<T, fx::f16>) {
    denorm_min = std::ldexp(1.0, -24), min_normal = std::ldexp(1.0, -14), max = 65504, tiny = 1e-6, huge = 3e4;
  } else if constexpr (std::is_same_v<T, fx::bf16>) {
    denorm_min = std::ldexp(1.0, -133), min_normal = std::ldexp(1.0, -126), max = 3.3895313892515355e38, tiny = 1e-30,
    huge = 1e30;
  } else if constexpr (std::is_same_v<T, float>) {
    denorm_min = std::numeric_limits<float>::denorm_min(), min_normal = std::numeric_limits<float>::min(),
    max = std::numeric_limits<float>::max(), tiny = 1e-30, huge = 1e30;
  } else {
    denorm_min = std::numeric_limits<double>::denorm_min(), min_normal = std::numeric_limits<double>::min(),
    max = std::numeric_limits<double>::max(), tiny = 1e-300, huge = 1e300;
  }
  return {0.0,        -0.0,        1.0,     -1.0,       0.5,         -2.5,  3.75, 10.0,    -10.0,
          NAN,        INFINITY,    -INFINITY, denorm_min, -denorm_min, min_normal, -min_normal, max, -max,
          tiny,       -tiny,       huge,    -huge,      88.5,        -104.0, 0.70710678, 3.14159265, 1e4,
          3e9,        -2.5e9,      1e19,    -1e-3,      0.999,       -0.999};
}
template <class T>
std::vector<long long> int_edges() {
  const long long lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return {0, 1, -1, 2, -2, 3, 7, -7, 31, 63, 100, -100, 46341, -46341, 65536, lo, lo + 1, hi, hi - 1};
}

// The edge values of T, then values from [lo, hi) to fill n.
template <class T>
std::vector<T> edge_values(std::size_t n = 0, double lo = -4, double hi = 4) {
  std::vector<T> v;
  if constexpr (std::is_same_v<T, bool>) v = {false, true};
  else if constexpr (is_float<T>)
    for (double d : float_edges<T>()) v.push_back(from_double<T>(d));
  else
    for (long long i : int_edges<T>()) v.push_back(static_cast<T>(i));
  std::uniform_real_distribution<double> d(lo, hi);
  while (v.size() < n) v.push_back(make<T>(std::is_same_v<T, bool> ? (d(rng()) > 0) : d(rng())));
  return v;
}

// ---------------------------------------------------------------- runners
template <class X>
auto as_tuple(X&& x) {
  if constexpr (requires { x.values(); }) return std::tuple<std::decay_t<X>>(std::forward<X>(x));
  else return std::forward<X>(x);
}

struct reference_runner {
  static constexpr const char* name = "reference";
  template <class Prog, class... T>
  auto operator()(Prog prog, const input<T>&... in) const {
    return as_tuple(fx::evaluate(prog, fx::reference, in.view()...));
  }
};

template <class Policy>
struct host_runner {
  const char* name;
  template <class Prog, class... T>
  auto operator()(Prog, const input<T>&... in) const {
    return as_tuple(fx::evaluate(fx::partition(Prog{}, Policy{}), fx::host{}, in.view()...));
  }
};

// ---------------------------------------------------------------- checking
// Tolerances: the dtype's (torch.testing's) for one rounding of a float
// result; exact for integers and bool.
template <class Out>
bool matches(double got, double expected) {
  return close_as<Out>(got, expected);
}

// Compares every element of `got` with expected(index) and reports the first
// mismatches with their index, inputs and values.
template <class Out, int R, class Expected, class Describe>
void check_output(const fx::host_tensor<Out, R>& got, const std::type_identity_t<fx::extents_array<R>>& extents, Expected expected,
                  Describe describe, const std::string& what, double sum_tol_scale = 0) {
  INFO(what);
  REQUIRE(got.extents() == extents);
  int bad = 0;
  std::array<fx::index_t, R> idx{};
  for (fx::index_t e = 0; e < got.size(); ++e) {
    fx::index_t rem = e;
    for (int d = R - 1; d >= 0; --d) {
      idx[d] = rem % extents[d];
      rem /= extents[d];
    }
    const Out g = got.values()[static_cast<std::size_t>(e)];
    bool ok;
    std::ostringstream os;
    if constexpr (is_float<Out>) {
      const auto [want, scale] = expected(idx);
      double gd = to_double(g);
      ok = matches<Out>(gd, want);
      // Reductions: rounding error grows with the magnitudes summed.
      if (!ok && sum_tol_scale > 0 && std::isfinite(want)) ok = std::fabs(gd - want) <= sum_tol_scale * scale + tol<Out>().atol;
      os << gd << ", expected " << want;
    } else {
      const long long want = expected(idx).first;
      ok = static_cast<long long>(g) == want;
      os << static_cast<long long>(g) << ", expected " << want;
    }
    if (!ok && ++bad <= 4) {
      std::ostringstream at;
      at << "[";
      for (int d = 0; d < R; ++d) at << (d ? ", " : "") << idx[d];
      at << "]";
      FAIL_CHECK(what << " at " << at.str() << " (" << describe(idx) << "): got " << os.str());
    }
  }
  REQUIRE(bad == 0);
}

// Runs `cases(runner, layout)` for every runner, one Catch2 section each.
template <class Cases>
void for_each_runner(layout, Cases) {}
template <class Cases, class Runner, class... Rest>
void for_each_runner(layout how, Cases cases, const Runner& run, const Rest&... rest) {
  DYNAMIC_SECTION(run.name << ", " << name(how)) { cases(run, how); }
  for_each_runner(how, cases, rest...);
}

}  // namespace fxt::conf
