// The host's vector math (core/math.hpp over simd::f32v) beside the SIMD
// libraries Debian packages, xsimd and Highway, and the C library's scalar
// functions: throughput of exp, erf, tanh and sigmoid over a buffer that stays
// in L1 (the math, not memory), and each one's largest error in ulp against
// double precision over the same inputs (counter max_ulp). The libraries that
// are not installed are left out; scripts/host_math.sh installs them.
//   bench_host_math --benchmark_out=F.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fusex/core/math.hpp>
#include <fusex/core/simd.hpp>

#if __has_include(<xsimd/xsimd.hpp>)
#include <xsimd/xsimd.hpp>
#define FUSEX_BENCH_XSIMD 1
#endif
#if __has_include(<hwy/highway.h>) && __has_include(<hwy/contrib/math/math-inl.h>)
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
#define FUSEX_BENCH_HWY 1
#endif

namespace {

constexpr std::size_t n_time = 4096;      // 16 KiB in, 16 KiB out: L1
constexpr std::size_t n_check = 1 << 20;  // inputs of the error measurement

enum class fn { exp, erf, tanh, sigmoid };
const char* name(fn f) {
  switch (f) {
    case fn::exp: return "exp";
    case fn::erf: return "erf";
    case fn::tanh: return "tanh";
    default: return "sigmoid";
  }
}
// Inputs where the function is neither constant nor overflowing.
std::vector<float> inputs(fn f, std::size_t n) {
  const float r = f == fn::exp ? 80.f : f == fn::erf ? 4.f : f == fn::tanh ? 9.f : 17.f;
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-r, r);
  std::vector<float> x(n);
  for (auto& v : x) v = u(g);
  return x;
}
double reference(fn f, double x) {
  switch (f) {
    case fn::exp: return std::exp(x);
    case fn::erf: return std::erf(x);
    case fn::tanh: return std::tanh(x);
    default: return 1.0 / (1.0 + std::exp(-x));
  }
}
// |y - ref| in units of the float spacing at ref.
double ulp_error(float y, double ref) {
  if (std::isnan(y) != std::isnan(ref)) return 1e30;
  if (std::isinf(ref) || std::isinf(y)) return y == static_cast<float>(ref) ? 0.0 : 1e30;
  const float rf = static_cast<float>(ref);
  const float a = std::fabs(rf);
  const double spacing = a < 1.1754944e-38f ? std::ldexp(1.0, -149)
                                             : static_cast<double>(std::nextafter(a, INFINITY) - a);
  return std::fabs(static_cast<double>(y) - ref) / spacing;
}

using kernel = void (*)(fn, const float*, float*, std::size_t);

void run_fusex(fn f, const float* x, float* y, std::size_t n) {
  namespace m = fusex::math;
  using fusex::simd::f32v;
  constexpr std::size_t W = fusex::simd::width;
  for (std::size_t i = 0; i < n; i += W) {
    f32v v;
    std::memcpy(&v, x + i, sizeof v);
    const f32v r = f == fn::exp ? m::exp(v) : f == fn::erf ? m::erf(v) : f == fn::tanh ? m::tanh(v) : m::sigmoid(v);
    std::memcpy(y + i, &r, sizeof r);
  }
}
void run_libm(fn f, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = f == fn::exp ? std::exp(x[i]) : f == fn::erf ? std::erf(x[i]) : f == fn::tanh ? std::tanh(x[i])
                                                                                 : 1.f / (1.f + std::exp(-x[i]));
}
#if FUSEX_BENCH_XSIMD
void run_xsimd(fn f, const float* x, float* y, std::size_t n) {
  using B = xsimd::batch<float>;
  for (std::size_t i = 0; i < n; i += B::size) {
    const B v = B::load_unaligned(x + i);
    const B r = f == fn::exp ? xsimd::exp(v) : f == fn::erf ? xsimd::erf(v) : f == fn::tanh ? xsimd::tanh(v)
                                                                                   : B(1.f) / (B(1.f) + xsimd::exp(-v));
    r.store_unaligned(y + i);
  }
}
#endif
#if FUSEX_BENCH_HWY
// Highway 1.0 has no erf: that row is missing.
void run_hwy(fn f, const float* x, float* y, std::size_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const std::size_t L = hn::Lanes(d);
  for (std::size_t i = 0; i < n; i += L) {
    const auto v = hn::LoadU(d, x + i);
    const auto one = hn::Set(d, 1.f);
    const auto r = f == fn::exp ? hn::Exp(d, v) : f == fn::tanh ? hn::Tanh(d, v) : hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(v))));
    hn::StoreU(r, d, y + i);
  }
}
#endif

void measure(benchmark::State& st, fn f, kernel k) {
  // the error first, over many inputs
  const auto xc = inputs(f, n_check);
  std::vector<float> yc(n_check);
  k(f, xc.data(), yc.data(), n_check);
  double worst = 0;
  for (std::size_t i = 0; i < n_check; ++i) worst = std::max(worst, ulp_error(yc[i], reference(f, xc[i])));
  if (worst > 64) {
    st.SkipWithError(("largest error " + std::to_string(worst) + " ulp: not a float " + name(f)).c_str());
    return;
  }
  const auto x = inputs(f, n_time);
  std::vector<float> y(n_time);
  for (auto _ : st) {
    k(f, x.data(), y.data(), n_time);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n_time));
  st.counters["max_ulp"] = worst;
  st.counters["ns_per_element"] =
      benchmark::Counter(static_cast<double>(st.iterations() * n_time), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  st.counters["verified"] = 1;
}

void register_all() {
  struct lib {
    const char* name;
    kernel k;
    bool has_erf;
  };
  std::vector<lib> libs{{"fusex", run_fusex, true}, {"libm", run_libm, true}};
#if FUSEX_BENCH_XSIMD
  libs.push_back({"xsimd", run_xsimd, true});
#endif
#if FUSEX_BENCH_HWY
  libs.push_back({"highway", run_hwy, false});
#endif
  for (fn f : {fn::exp, fn::erf, fn::tanh, fn::sigmoid})
    for (const lib& l : libs) {
      if (f == fn::erf && !l.has_erf) continue;
      const kernel k = l.k;
      benchmark::RegisterBenchmark((std::string("math/") + name(f) + "/" + l.name).c_str(),
                                   [f, k](benchmark::State& st) { measure(st, f, k); });
    }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::AddCustomContext("simd_width", std::to_string(fusex::simd::width));
#if FUSEX_BENCH_XSIMD
  benchmark::AddCustomContext("xsimd", std::to_string(XSIMD_VERSION_MAJOR) + "." + std::to_string(XSIMD_VERSION_MINOR) +
                                           "." + std::to_string(XSIMD_VERSION_PATCH) + " (" +
                                           xsimd::default_arch::name() + ")");
#endif
#if FUSEX_BENCH_HWY
  benchmark::AddCustomContext("highway", std::to_string(HWY_MAJOR) + "." + std::to_string(HWY_MINOR) + "." +
                                             std::to_string(HWY_PATCH) + " (" + hwy::TargetName(HWY_STATIC_TARGET) + ")");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
