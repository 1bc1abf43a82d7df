// libFuzzer target over run-time binding: the input chooses one of a few
// fixed plans and every view it is run with (extents, strides, stride 0,
// base offsets, outputs placed over inputs or over each other, run-time
// index arguments). All views lie in one arena of known values. fx::run must
// then either
//   - throw fusex::shape_error or fusex::argument_error, leaving the arena
//     (inputs and outputs) byte for byte as it was, or
//   - succeed, with every output equal to the reference executor's result
//     on a copy of the inputs and no byte outside the outputs changed.
// Anything else (another exception, a wrong value, a stray write, a
// sanitizer report) is a finding: the target traps.
#include <fusex/fusex.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

namespace fx = fusex;

namespace {

constexpr auto pointwise = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> w) {
  return fx::ops::gelu(x) * fx::unsqueeze<0>(w) + 0.5f;
});
constexpr auto row_norm = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });
constexpr auto remaps = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 2> y, fx::index lo, fx::index hi) {
  return fx::cat<1>(fx::slice<1>(x, lo, hi), fx::pad<1>(y, 1, 0, 2.0));
});
constexpr auto integers = fx::trace([](fx::tensor<std::int32_t, 2> a, fx::tensor<std::int32_t, 2> b) {
  return std::tuple{fx::sum<0>(a * b), fx::where(a > b, a, b)};
});
constexpr auto product = fx::trace([](fx::tensor<float, 2> a, fx::tensor<float, 2> b) { return fx::matmul(a, b); });

// The fuzz input, read a byte at a time (zeros past its end).
struct reader {
  const std::uint8_t* p;
  std::size_t n, i = 0;
  std::uint8_t byte() { return i < n ? p[i++] : 0; }
  int small(int mod) { return byte() % mod; }
};

// Outcomes, printed at exit when FUSEX_FUZZ_STATS is set (so a run can show
// that both the error paths and the success paths were reached).
struct outcome_counts {
  long ran = 0, threw = 0, skipped = 0;
  ~outcome_counts() {
    if (std::getenv("FUSEX_FUZZ_STATS"))
      std::fprintf(stderr, "fuzz_run: %ld runs checked against the reference, %ld named errors, %ld inputs outside the arena\n",
                   ran, threw, skipped);
  }
} counts;

constexpr std::size_t arena_bytes = 1 << 14;
alignas(64) std::uint8_t arena[arena_bytes];
alignas(64) std::uint8_t before[arena_bytes];

// A view of T into the arena, shaped by the input; false when it would
// reach outside the arena (the caller's contract, not fusex's to check).
template <class T, int R>
bool make_view(reader& in, fx::view<T, R>& v) {
  fx::extents_array<R> ext{}, str{};
  for (int i = 0; i < R; ++i) ext[i] = in.small(7);
  const int mode = in.small(5);
  fx::index_t run = 1;
  for (int i = R - 1; i >= 0; --i) {
    switch (mode) {
      case 0: str[i] = run; break;                        // contiguous
      case 1: str[i] = run + (i == 0 ? in.small(3) : 0); break;  // padded rows
      case 2: str[i] = R - 1 - i == 0 ? 1 : run; break;   // as contiguous, recomputed below when transposed
      case 3: str[i] = i == 0 ? 0 : run; break;           // stride-0 rows
      default: str[i] = in.small(6); break;               // anything, overlaps included
    }
    run *= ext[i] > 0 ? ext[i] : 1;
  }
  if constexpr (R == 2)
    if (mode == 2) str = {1, ext[0] > 0 ? ext[0] : 1};  // column-major
  const fx::index_t offset = in.small(96);
  fx::index_t last = 0;
  for (int i = 0; i < R; ++i)
    if (ext[i] > 0) last += (ext[i] - 1) * str[i];
  if (static_cast<std::size_t>(offset + last + 1) * sizeof(std::remove_const_t<T>) > arena_bytes) {
    ++counts.skipped;
    return false;
  }
  // Base offsets are in elements of T, placed so that views of different
  // arguments can land on one another.
  auto* base = reinterpret_cast<std::remove_const_t<T>*>(arena) + offset;
  v = fx::view<T, R>(base, ext, str);
  return true;
}

// The arena's bytes that an output view covers.
template <class T, int R>
void mark(const fx::view<T, R>& v, std::vector<char>& covered) {
  fx::index_t n = 1;
  for (int i = 0; i < R; ++i) n *= v.extent(i);
  for (fx::index_t e = 0; e < n; ++e) {
    fx::index_t rem = e, off = 0;
    for (int i = R - 1; i >= 0; --i) {
      off += (rem % v.extent(i)) * v.stride(i);
      rem /= v.extent(i);
    }
    const auto at = reinterpret_cast<const std::uint8_t*>(v.data() + off) - arena;
    for (std::size_t b = 0; b < sizeof(T); ++b) covered[static_cast<std::size_t>(at) + b] = 1;
  }
}

double as_double(double v) { return v; }
double as_double(float v) { return v; }
double as_double(fx::bf16 v) { return static_cast<float>(v); }
double as_double(std::int32_t v) { return v; }
double as_double(std::int64_t v) { return static_cast<double>(v); }

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_run: %s\n", what);
  __builtin_trap();
}

// Output o (a view into the arena) against the reference's host tensor.
template <class T, int R, class H>
void compare(const fx::view<T, R>& got, const H& ref, double rtol) {
  for (int i = 0; i < R; ++i)
    if (got.extent(i) != ref.extent(i)) finding("output extents differ from the reference's");
  for (fx::index_t e = 0; e < ref.size(); ++e) {
    fx::index_t rem = e, off = 0;
    for (int i = R - 1; i >= 0; --i) {
      off += (rem % ref.extent(i)) * got.stride(i);
      rem /= ref.extent(i);
    }
    const double g = as_double(got.data()[off]), r = as_double(ref.values()[static_cast<std::size_t>(e)]);
    if (std::isnan(r) ? !std::isnan(g) : std::fabs(g - r) > 1e-5 + rtol * std::fabs(r)) finding("output differs from the reference");
  }
}

template <class T, int R>
fx::view<const T, R> in_copy(const fx::view<T, R>& v) {  // the same view over the copy taken before the run
  const auto at = reinterpret_cast<const std::uint8_t*>(v.data()) - arena;
  fx::extents_array<R> ext{}, str{};
  for (int i = 0; i < R; ++i) ext[i] = v.extent(i), str[i] = v.stride(i);
  return fx::view<const T, R>(reinterpret_cast<const T*>(before + at), ext, str);
}

// Runs plan `pl` of `prog` on the bound views and checks the outcome.
template <class Prog, class Plan, class In, class Out>
void run_case(Prog prog, Plan pl, const In& ins, const Out& outs, double rtol) {
  std::memcpy(before, arena, arena_bytes);
  bool threw = false;
  try {
    std::apply([&](const auto&... i) {
      std::apply([&](const auto&... o) { fx::run(pl, fx::host{}, fx::inputs(i...), fx::outputs(o...)); }, outs);
    }, ins);
  } catch (const fx::shape_error&) {
    threw = true;
  } catch (const fx::argument_error&) {
    threw = true;
  } catch (...) {
    finding("fx::run threw something other than shape_error or argument_error");
  }
  if (threw) {
    ++counts.threw;
    if (std::memcmp(before, arena, arena_bytes) != 0) finding("a failed run changed memory");
    return;
  }
  ++counts.ran;
  std::vector<char> covered(arena_bytes, 0);
  std::apply([&](const auto&... o) { (mark(o, covered), ...); }, outs);
  for (std::size_t b = 0; b < arena_bytes; ++b)
    if (!covered[b] && arena[b] != before[b]) finding("a run wrote outside its outputs");
  auto args_of_copy = [&](const auto& x) {
    if constexpr (requires { x.data(); }) return in_copy(x);
    else return x;
  };
  const auto ref = std::apply([&](const auto&... i) { return fx::evaluate(prog, fx::reference, args_of_copy(i)...); }, ins);
  if constexpr (requires { ref.values(); }) {
    compare(std::get<0>(outs), ref, rtol);
  } else {
    [&]<std::size_t... K>(std::index_sequence<K...>) { (compare(std::get<K>(outs), std::get<K>(ref), rtol), ...); }(
        std::make_index_sequence<std::tuple_size_v<std::decay_t<decltype(ref)>>>{});
  }
}

// Known values everywhere (the plans' results depend on the views only).
void fill_arena(int kind) {
  for (std::size_t i = 0; i < arena_bytes / 4; ++i) {
    const float f = static_cast<float>(static_cast<int>(i * 37 % 97) - 48) / 24.0f;
    std::uint32_t bits;
    if (kind == 1) {  // bf16 pairs
      const fx::bf16 h(f);
      std::uint16_t u;
      std::memcpy(&u, &h, 2);
      bits = u | (static_cast<std::uint32_t>(u) << 16);
    } else if (kind == 2) {
      bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(i * 7 % 23) - 11);
    } else {
      std::memcpy(&bits, &f, 4);
    }
    std::memcpy(arena + 4 * i, &bits, 4);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader in{data, size};
  switch (in.small(5)) {
    case 0: {
      fill_arena(0);
      fx::view<const float, 2> x;
      fx::view<const float, 1> w;
      fx::view<float, 2> y;
      if (!make_view(in, x) || !make_view(in, w) || !make_view(in, y)) return 0;
      run_case(pointwise, fx::partition(pointwise), std::tuple{x, w}, std::tuple{y}, 1e-5);
      break;
    }
    case 1: {
      fill_arena(1);
      fx::view<const fx::bf16, 2> x;
      fx::view<const fx::bf16, 1> w;
      fx::view<fx::bf16, 2> y;
      if (!make_view(in, x) || !make_view(in, w) || !make_view(in, y)) return 0;
      run_case(row_norm, fx::partition(row_norm), std::tuple{x, w}, std::tuple{y}, 1.6e-2);
      break;
    }
    case 2: {
      fill_arena(0);
      fx::view<const float, 2> x, y;
      fx::view<float, 2> z;
      if (!make_view(in, x) || !make_view(in, y) || !make_view(in, z)) return 0;
      const fx::index_t lo = in.small(9) - 2, hi = in.small(9) - 2;
      run_case(remaps, fx::partition(remaps), std::tuple{x, y, lo, hi}, std::tuple{z}, 0);
      break;
    }
    case 3: {
      fill_arena(2);
      fx::view<const std::int32_t, 2> a, b;
      fx::view<std::int64_t, 1> s;
      fx::view<std::int32_t, 2> m;
      if (!make_view(in, a) || !make_view(in, b) || !make_view(in, s) || !make_view(in, m)) return 0;
      run_case(integers, fx::partition(integers), std::tuple{a, b}, std::tuple{s, m}, 0);
      break;
    }
    default: {
      fill_arena(0);
      fx::view<const float, 2> a, b;
      fx::view<float, 2> c;
      if (!make_view(in, a) || !make_view(in, b) || !make_view(in, c)) return 0;
      run_case(product, fx::partition(product), std::tuple{a, b}, std::tuple{c}, 1e-5);
      break;
    }
  }
  return 0;
}
