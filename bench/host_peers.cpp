// The host executor beside its peers, in one run: fusex's fused plans of the
// forward and backward of GeLU, LayerNorm, RMSNorm and the qkv split + RoPE,
// the same computations in Eigen Tensor (written as a user of Eigen would:
// one expression per output, bf16 storage, f32 arithmetic, Eigen's thread
// pool), and a memcpy of the fused plan's minimum bytes, all at the same
// thread count. Every executor's outputs are checked against a float64
// scalar reference before they are timed; one that is wrong is reported as
// an error, not timed. The PyTorch rows (eager, torch.compile) come from
// tools/host_peers_torch.py in the same schema; tools/host_peers_report.py
// makes the table.
//
//   bench_host_peers [--quick] [--threads=N] [--stream-writes-from=BYTES] [--explain]
//                    [Google Benchmark flags]
//
// --stream-writes-from sets fx::host::stream_writes_from (0, the default:
// half the last-level cache; 1: always; 18446744073709551615: never), for
// an A/B of the streamed stores in one binary.
// --explain prints each fused plan (fx::explain: its groups, what each reads
// and writes) before the runs.
//
// Names: host/<op>/<forward|backward>/<fusex_fused|eigen|memcpy>. Times are
// wall-clock (UseRealTime): the work runs on N threads.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "grad_cases.hpp"
#include "rope_cases.hpp"

namespace {

namespace fx = fusex;
namespace rb = bench::rope;
using bf = fx::bf16;
using be = Eigen::bfloat16;
using Ix = Eigen::Index;
template <int R>
using emap = Eigen::TensorMap<Eigen::Tensor<be, R, Eigen::RowMajor>>;
template <int R>
using cmap = Eigen::TensorMap<Eigen::Tensor<const be, R, Eigen::RowMajor>>;
template <int R>
using fmap = Eigen::TensorMap<Eigen::Tensor<float, R, Eigen::RowMajor>>;
template <int R>
using cfmap = Eigen::TensorMap<Eigen::Tensor<const float, R, Eigen::RowMajor>>;
template <int R>
using arr = Eigen::array<Ix, R>;

static_assert(sizeof(be) == sizeof(bf), "Eigen's bfloat16 and fusex's share the layout");
template <int R>
emap<R> eig(fx::host_tensor<bf, R>& t) {
  arr<R> e;
  for (int i = 0; i < R; ++i) e[i] = t.extent(i);
  return emap<R>(reinterpret_cast<be*>(t.data()), e);
}
template <int R>
cmap<R> ein(const fx::host_tensor<bf, R>& t) {
  arr<R> e;
  for (int i = 0; i < R; ++i) e[i] = t.extent(i);
  return cmap<R>(reinterpret_cast<const be*>(t.data()), e);
}

struct options {
  bool quick = false;
  bool explain = false;
  int threads = 2;
  std::size_t stream_writes_from = 0;
};

// ---- the float64 reference and its tolerance --------------------------------
// |got - ref| <= atol + rtol * max(|ref|, terms), with torch.testing's bf16
// tolerances (2e-2 for the norms' backward, as apex and QuACK test them)
// and `terms` the sum of |terms| that make the value: an executor may round
// intermediates (and partial sums) to bf16, as PyTorch's bf16 kernels do,
// so a value that cancels carries the rounding of its terms. A wrong
// formula misses by about |terms|, 50 times the tolerance.
struct check {
  double rtol = 1.6e-2, atol = 1e-5;
  rb::check_result r;
  void add(double got, double ref, double terms = 0) {
    const double e = std::fabs(got - ref), q = e / (atol + rtol * std::max(std::fabs(ref), terms));
    if (!(q <= 1)) ++r.bad;
    if (!(q <= r.worst_ratio)) r.worst_ratio = q;
    r.worst_abs = std::max(r.worst_abs, e);
  }
};
double f64(bf v) { return static_cast<double>(static_cast<float>(v)); }
double f64(float v) { return v; }

// The inputs of the norm cases, and the statistics of x in float64.
struct norm_case {
  int R, C;
  fx::host_tensor<bf, 2> x, dy;
  fx::host_tensor<bf, 1> w, b;
  std::vector<double> mean, rstd, rms_rstd;  // layer norm's, rms norm's (eps 1e-5)
  norm_case(int r, int c)
      : R(r), C(c), x(bench::random_tensor<bf, 2>({r, c})), dy(bench::random_tensor<bf, 2>({r, c})),
        w(bench::random_tensor<bf, 1>({c})), b(bench::random_tensor<bf, 1>({c})), mean(r), rstd(r), rms_rstd(r) {
    for (int i = 0; i < R; ++i) {
      double s = 0, s2 = 0;
      for (int j = 0; j < C; ++j) s += f64(x(i, j)), s2 += f64(x(i, j)) * f64(x(i, j));
      mean[i] = s / C;
      double v = 0;
      for (int j = 0; j < C; ++j) v += (f64(x(i, j)) - mean[i]) * (f64(x(i, j)) - mean[i]);
      rstd[i] = 1 / std::sqrt(v / C + 1e-5);
      rms_rstd[i] = 1 / std::sqrt(s2 / C + 1e-5);
    }
  }
};

// y (and the statistics) of layer norm, or of rms norm (rms), against float64.
template <class Y, class S1, class S2>
rb::check_result check_norm_forward(const norm_case& n, bool rms, const Y& y, const S1& s1, const S2* s2) {
  check c;
  for (int i = 0; i < n.R; ++i) {
    const double m = rms ? 0 : n.mean[i], s = rms ? n.rms_rstd[i] : n.rstd[i];
    for (int j = 0; j < n.C; ++j) {
      const double h = (f64(n.x(i, j)) - m) * s * f64(n.w(j)), bias = rms ? 0 : f64(n.b(j));
      c.add(f64(y[static_cast<std::size_t>(i) * n.C + j]), h + bias, std::fabs(h) + std::fabs(bias));
    }
    // layer norm saves (mean, rstd), rms norm (rstd)
    if (rms) {
      c.add(f64(s1[i]), s);
    } else {
      c.add(f64(s1[i]), m, std::fabs(m) + 1 / s);
      c.add(f64((*s2)[i]), s);
    }
  }
  return c.r;
}

// dx, dw (and db) of layer norm or rms norm against float64.
template <class DX, class DW, class DB>
rb::check_result check_norm_backward(const norm_case& n, bool rms, const DX& dx, const DW& dw, const DB* db) {
  check c;
  c.rtol = 2e-2;
  std::vector<double> rw(n.C), rwt(n.C), rb_(n.C), rbt(n.C);
  for (int i = 0; i < n.R; ++i) {
    const double m = rms ? 0 : n.mean[i], s = rms ? n.rms_rstd[i] : n.rstd[i];
    double ga = 0, gb = 0, gat = 0, gbt = 0;
    for (int j = 0; j < n.C; ++j) {
      const double xh = (f64(n.x(i, j)) - m) * s, g = f64(n.dy(i, j)) * f64(n.w(j));
      ga += g, gb += g * xh, gat += std::fabs(g), gbt += std::fabs(g * xh);
      rw[j] += f64(n.dy(i, j)) * xh, rwt[j] += std::fabs(f64(n.dy(i, j)) * xh);
      rb_[j] += f64(n.dy(i, j)), rbt[j] += std::fabs(f64(n.dy(i, j)));
    }
    ga /= n.C, gb /= n.C, gat /= n.C, gbt /= n.C;
    for (int j = 0; j < n.C; ++j) {
      const double xh = (f64(n.x(i, j)) - m) * s, g = f64(n.dy(i, j)) * f64(n.w(j));
      const double a = rms ? 0 : ga, at = rms ? 0 : gat;
      const double ref = s * (g - a - xh * gb), terms = s * (std::fabs(g) + at + std::fabs(xh) * gbt);
      c.add(f64(dx[static_cast<std::size_t>(i) * n.C + j]), ref, terms);
    }
  }
  for (int j = 0; j < n.C; ++j) {
    c.add(f64(dw[j]), rw[j], rwt[j]);
    if (db) c.add(f64((*db)[j]), rb_[j], rbt[j]);
  }
  return c.r;
}

double gelu64(double x) { return 0.5 * x * (1 + std::erf(x * M_SQRT1_2)); }
// dy * (cdf + x * pdf); terms: |dy| * (cdf + |x * pdf|)
double dgelu64(double x, double dy, double* terms = nullptr) {
  const double cdf = 0.5 * (1 + std::erf(x * M_SQRT1_2)), xpdf = x * std::exp(-0.5 * x * x) * 0.3989422804014327;
  if (terms) *terms = std::fabs(dy) * (cdf + std::fabs(xpdf));
  return dy * (cdf + xpdf);
}

// ---- Eigen ------------------------------------------------------------------
struct eigen_pool {
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice dev;
  explicit eigen_pool(int n) : pool(n), dev(&pool, n) {}
};

void eigen_gelu_forward(const Eigen::ThreadPoolDevice& d, cmap<2> x, emap<2> y) {
  const auto xf = x.cast<float>();
  y.device(d) = (xf * 0.5f * ((xf * float(M_SQRT1_2)).erf() + 1.0f)).cast<be>();
}
void eigen_gelu_backward(const Eigen::ThreadPoolDevice& d, cmap<2> x, cmap<2> dy, emap<2> dx) {
  const auto xf = x.cast<float>();
  const auto cdf = ((xf * float(M_SQRT1_2)).erf() + 1.0f) * 0.5f;
  const auto pdf = (xf.square() * -0.5f).exp() * 0.3989422804f;
  dx.device(d) = (dy.cast<float>() * (cdf + xf * pdf)).cast<be>();
}

// Broadcasts of a row statistic (R) along the columns and of a weight (C)
// along the rows.
struct norm_shapes {
  Ix R, C;
  arr<1> cols{1}, rows{0};
  arr<2> col_shape, across, row_shape, down;
  norm_shapes(Ix r, Ix c) : R(r), C(c), col_shape{r, 1}, across{1, c}, row_shape{1, c}, down{r, 1} {}
  template <class S>
  auto per_row(const S& s) const { return s.reshape(col_shape).broadcast(across); }
  template <class S>
  auto per_col(const S& s) const { return s.reshape(row_shape).broadcast(down); }
};

void eigen_layer_norm_forward(const Eigen::ThreadPoolDevice& d, cmap<2> x, cmap<1> w, cmap<1> b, emap<2> y, fmap<1> mean,
                              fmap<1> rstd) {
  const norm_shapes s(x.dimension(0), x.dimension(1));
  const auto xf = x.cast<float>();
  mean.device(d) = xf.mean(s.cols);
  const auto centred = xf - s.per_row(mean);
  rstd.device(d) = (centred.square().mean(s.cols) + 1e-5f).rsqrt();
  y.device(d) = (centred * s.per_row(rstd) * s.per_col(w.cast<float>()) + s.per_col(b.cast<float>())).cast<be>();
}
void eigen_layer_norm_backward(const Eigen::ThreadPoolDevice& d, cmap<2> x, cmap<1> w, cfmap<1> mean, cfmap<1> rstd,
                               cmap<2> dy, emap<2> dx, emap<1> dw, emap<1> db, Eigen::Tensor<float, 1, Eigen::RowMajor>& ga,
                               Eigen::Tensor<float, 1, Eigen::RowMajor>& gb) {
  const norm_shapes s(x.dimension(0), x.dimension(1));
  const auto dyf = dy.cast<float>();
  const auto xhat = (x.cast<float>() - s.per_row(mean)) * s.per_row(rstd);
  const auto g = dyf * s.per_col(w.cast<float>());
  ga.device(d) = g.mean(s.cols);
  gb.device(d) = (g * xhat).mean(s.cols);
  dx.device(d) = (s.per_row(rstd) * (g - s.per_row(ga) - xhat * s.per_row(gb))).cast<be>();
  dw.device(d) = (dyf * xhat).sum(s.rows).cast<be>();
  db.device(d) = dyf.sum(s.rows).cast<be>();
}
void eigen_rms_norm_forward(const Eigen::ThreadPoolDevice& d, cmap<2> x, cmap<1> w, emap<2> y, fmap<1> rstd) {
  const norm_shapes s(x.dimension(0), x.dimension(1));
  const auto xf = x.cast<float>();
  rstd.device(d) = (xf.square().mean(s.cols) + 1e-5f).rsqrt();
  y.device(d) = (xf * s.per_row(rstd) * s.per_col(w.cast<float>())).cast<be>();
}
void eigen_rms_norm_backward(const Eigen::ThreadPoolDevice& d, cmap<2> x, cmap<1> w, cfmap<1> rstd, cmap<2> dy,
                             emap<2> dx, emap<1> dw, Eigen::Tensor<float, 1, Eigen::RowMajor>& gb) {
  const norm_shapes s(x.dimension(0), x.dimension(1));
  const auto dyf = dy.cast<float>();
  const auto xhat = x.cast<float>() * s.per_row(rstd);
  const auto g = dyf * s.per_col(w.cast<float>());
  gb.device(d) = (g * xhat).mean(s.cols);
  dx.device(d) = (s.per_row(rstd) * (g - xhat * s.per_row(gb))).cast<be>();
  dw.device(d) = (dyf * xhat).sum(s.rows).cast<be>();
}

using d4 = Eigen::DSizes<Ix, 4>;
// litgpt's qkv split + RoPE (blocks layout), k and v expanded to n_head heads.
struct rope_dims {
  Ix B, T, nh, G, hs, n, h, qpk;
  explicit rope_dims(const rb::inputs& in)
      : B(in.B), T(in.T), nh(in.c.n_head), G(in.c.n_query_groups), hs(in.c.head_size), n(in.c.rope_n_elem),
        h(in.c.rope_n_elem / 2), qpk(in.c.q_per_kv()) {}
};
// x (B, H, T, hs) in f32 -> rope on the first n dims, the rest as it is
template <class X, class CS>
auto eigen_rope(const rope_dims& r, Ix H, const X& x, const CS& cos, const CS& sin) {
  const d4 bc{r.B, H, 1, 1}, cs_shape{1, 1, r.T, r.n};
  const auto rot = x.slice(d4(0, 0, 0, 0), d4(r.B, H, r.T, r.n));
  const auto x1 = rot.slice(d4(0, 0, 0, 0), d4(r.B, H, r.T, r.h));
  const auto x2 = rot.slice(d4(0, 0, 0, r.h), d4(r.B, H, r.T, r.n - r.h));
  const auto roped = rot * cos.reshape(cs_shape).broadcast(bc) + (-x2).concatenate(x1, 3) * sin.reshape(cs_shape).broadcast(bc);
  return roped.concatenate(x.slice(d4(0, 0, 0, r.n), d4(r.B, H, r.T, r.hs - r.n)), 3);
}
// The transposed rotation of src (B, H, T, hs; f32) into heads [first,
// first + H) of D (B, T, heads, hs): dx = dy * cos + cat(z[h:n], -z[:h]) with
// z = dy * sin, written as three slices (Eigen cannot shuffle a
// concatenation).
template <class S, class CS, class DT>
void eigen_rope_t_into(const Eigen::ThreadPoolDevice& d, const rope_dims& r, Ix H, Ix first, const S& src, const CS& cos,
                       const CS& sin, DT& D) {
  const arr<4> to_rows{0, 2, 1, 3};
  const d4 bc(r.B, H, 1, 1), cs_shape(1, 1, r.T, r.h);
  const auto cs = [&](const CS& t, Ix from) {
    return t.slice(Eigen::DSizes<Ix, 2>(0, from), Eigen::DSizes<Ix, 2>(r.T, r.h)).reshape(cs_shape).broadcast(bc);
  };
  const auto part = [&](Ix from, Ix len) { return src.slice(d4(0, 0, 0, from), d4(r.B, H, r.T, len)); };
  const auto lo = part(0, r.h), hi = part(r.h, r.h);
  D.slice(d4(0, 0, first, 0), d4(r.B, r.T, H, r.h)).device(d) = (lo * cs(cos, 0) + hi * cs(sin, r.h)).shuffle(to_rows).template cast<be>();
  D.slice(d4(0, 0, first, r.h), d4(r.B, r.T, H, r.h)).device(d) = (hi * cs(cos, r.h) - lo * cs(sin, 0)).shuffle(to_rows).template cast<be>();
  if (r.hs > r.n)
    D.slice(d4(0, 0, first, r.n), d4(r.B, r.T, H, r.hs - r.n)).device(d) = part(r.n, r.hs - r.n).shuffle(to_rows).template cast<be>();
}

void eigen_rope_forward(const Eigen::ThreadPoolDevice& d, const rb::inputs& in, emap<4> q, emap<4> k, emap<4> v,
                        Eigen::Tensor<be, 4, Eigen::RowMajor>& kg) {
  const rope_dims r(in);
  const auto X = ein(in.qkv).reshape(d4(r.B, r.T, r.nh + 2 * r.G, r.hs));
  const auto cos = ein(in.cos).cast<float>(), sin = ein(in.sin).cast<float>();
  const arr<4> to_heads{0, 2, 1, 3};
  const auto heads = [&](Ix first, Ix H) {
    return X.slice(d4(0, 0, first, 0), d4(r.B, r.T, H, r.hs)).shuffle(to_heads).cast<float>();
  };
  // each group's k is roped once, then expanded (as litgpt does)
  const Eigen::DSizes<Ix, 5> grouped{r.B, r.G, 1, r.T, r.hs}, expand{1, 1, r.qpk, 1, 1};
  const d4 full{r.B, r.nh, r.T, r.hs};
  q.device(d) = eigen_rope(r, r.nh, heads(0, r.nh), cos, sin).cast<be>();
  kg.device(d) = eigen_rope(r, r.G, heads(r.nh, r.G), cos, sin).cast<be>();
  k.device(d) = kg.reshape(grouped).broadcast(expand).reshape(full);
  v.device(d) = X.slice(d4(0, 0, r.nh + r.G, 0), d4(r.B, r.T, r.G, r.hs)).shuffle(to_heads).reshape(grouped).broadcast(expand).reshape(full);
}
void eigen_rope_backward(const Eigen::ThreadPoolDevice& d, const rb::inputs& in, emap<3> dqkv) {
  const rope_dims r(in);
  auto D = dqkv.reshape(d4(r.B, r.T, r.nh + 2 * r.G, r.hs));
  const auto cos = ein(in.cos).cast<float>(), sin = ein(in.sin).cast<float>();
  const arr<4> to_rows{0, 2, 1, 3};
  const Eigen::DSizes<Ix, 5> per_group(r.B, r.G, r.qpk, r.T, r.hs);
  const arr<1> over_q{2};
  // k and v: the cotangents of a group's q_per_kv heads summed
  const auto dkg = ein(in.dk).cast<float>().reshape(per_group).sum(over_q);
  const auto dvg = ein(in.dv).cast<float>().reshape(per_group).sum(over_q);
  eigen_rope_t_into(d, r, r.nh, 0, ein(in.dq).cast<float>(), cos, sin, D);
  eigen_rope_t_into(d, r, r.G, r.nh, dkg, cos, sin, D);
  D.slice(d4(0, 0, r.nh + r.G, 0), d4(r.B, r.T, r.G, r.hs)).device(d) = dvg.shuffle(to_rows).cast<be>();
}

// ---- the runs ---------------------------------------------------------------
// A parallel memcpy: each thread copies its share.
void parallel_copy(char* dst, const char* src, std::size_t n, int threads) {
#pragma omp parallel num_threads(threads)
  {
#if defined(_OPENMP)
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num()), k = static_cast<std::size_t>(omp_get_num_threads());
#else
    const std::size_t t = 0, k = 1;
#endif
    const std::size_t b = n * t / k, e = n * (t + 1) / k;
    std::memcpy(dst + b, src + b, e - b);
  }
}

struct registry {
  options o;
  std::shared_ptr<eigen_pool> pool;
  void timed(const std::string& name, double min_bytes, std::function<rb::check_result()> verify, std::function<void()> body) {
    const int threads = o.threads;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      const rb::check_result r = verify();
      if (!r.ok()) {
        st.SkipWithError(("wrong against the float64 reference: " + r.text()).c_str());
        return;
      }
      for (auto _ : st) {
        body();
        benchmark::ClobberMemory();
      }
      st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(min_bytes));
      st.counters["verified"] = 1;
      st.counters["worst_error_over_tolerance"] = r.worst_ratio;
      st.counters["min_bytes"] = min_bytes;
      st.counters["threads"] = threads;
    })->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  void copy(const std::string& name, double bytes) {
    const int threads = o.threads;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      const std::size_t n = static_cast<std::size_t>(bytes / 2);
      std::unique_ptr<char[]> a(new char[n]), b(new char[n]);
      std::memset(a.get(), 1, n);
      std::memset(b.get(), 0, n);
      for (auto _ : st) {
        parallel_copy(b.get(), a.get(), n, threads);
        benchmark::ClobberMemory();
      }
      st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(2 * n));
      st.counters["verified"] = 1;  // a copy has nothing to check
      st.counters["min_bytes"] = bytes;
      st.counters["threads"] = threads;
    })->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  // fusex: the plan run into preallocated outputs (fx::run), checked first
  template <class Plan, class Args, class Verify>
  void fusex(const std::string& name, Plan plan, std::shared_ptr<Args> args, Verify verify) {
    const fx::host h{o.threads, o.stream_writes_from};
    if (o.explain) std::printf("%s\n%s\n", name.c_str(), fx::explain(plan).c_str());
    auto outs = std::make_shared<decltype(fx::detail::as_tuple(
        std::apply([&](const auto&... a) { return fx::evaluate(plan, fx::host{}, a...); }, *args)))>();
    const double mb = bench::min_bytes(plan, *args);
    timed(name, mb,
          [=] {
            *outs = fx::detail::as_tuple(std::apply([&](const auto&... a) { return fx::evaluate(plan, h, a...); }, *args));
            return verify(*outs);
          },
          [=] {
            std::apply([&](const auto&... a) {
              std::apply([&](auto&... out) { fx::run(plan, h, fx::inputs(a...), fx::outputs(out...)); }, *outs);
            }, *args);
          });
  }
};

template <class T>
std::shared_ptr<T> share(T v) { return std::make_shared<T>(std::move(v)); }

void gelu_cases(registry& reg, int R, int C) {
  using V = decltype(fx::vjp<bench::all_args>(bench::gelu_prog<bf>));
  const std::string base = "host/gelu_bf16_" + std::to_string(R) + "x" + std::to_string(C);
  auto x = share(bench::random_tensor<bf, 2>({R, C})), dy = share(bench::random_tensor<bf, 2>({R, C}));
  auto fwd_args = share(std::tuple{x->as_view()});
  auto bwd_args = share(bench::backward_args(V{}, std::tuple{x->as_view()}, std::tuple{dy->as_view()}));
  const auto check_y = [x](const auto& y) {
    check c;
    for (fx::index_t i = 0; i < x->size(); ++i) c.add(f64(y.data()[i]), gelu64(f64(x->data()[i])), std::fabs(gelu64(f64(x->data()[i]))));
    return c.r;
  };
  const auto check_dx = [x, dy](const auto& dx) {
    check c;
    for (fx::index_t i = 0; i < x->size(); ++i) {
      double terms = 0;
      const double ref = dgelu64(f64(x->data()[i]), f64(dy->data()[i]), &terms);
      c.add(f64(dx.data()[i]), ref, terms);
    }
    return c.r;
  };
  const auto fwd = fx::partition(V::forward);
  const auto bwd = fx::partition(V::backward);
  const double mf = bench::min_bytes(fwd, *fwd_args), mbw = bench::min_bytes(bwd, *bwd_args);
  reg.copy(base + "/forward/memcpy", mf);
  reg.fusex(base + "/forward/fusex_fused", fwd, fwd_args, [=](const auto& o) { return check_y(std::get<0>(o)); });
  auto y = share(fx::host_tensor<bf, 2>({R, C})), dx = share(fx::host_tensor<bf, 2>({R, C}));
  auto& dev = reg.pool->dev;
  reg.timed(base + "/forward/eigen", mf, [=, &dev] { eigen_gelu_forward(dev, ein(*x), eig(*y)); return check_y(*y); },
            [=, &dev] { eigen_gelu_forward(dev, ein(*x), eig(*y)); });
  reg.copy(base + "/backward/memcpy", mbw);
  reg.fusex(base + "/backward/fusex_fused", bwd, bwd_args, [=](const auto& o) { return check_dx(std::get<0>(o)); });
  reg.timed(base + "/backward/eigen", mbw,
            [=, &dev] { eigen_gelu_backward(dev, ein(*x), ein(*dy), eig(*dx)); return check_dx(*dx); },
            [=, &dev] { eigen_gelu_backward(dev, ein(*x), ein(*dy), eig(*dx)); });
}

template <class T>
struct flat {  // a host tensor's values by flat index, for the checks
  const T* p;
  const T& operator[](std::size_t i) const { return p[i]; }
};
template <class H>
auto flat_of(const H& t) { return flat<std::remove_cv_t<std::remove_pointer_t<decltype(t.data())>>>{t.data()}; }

void norm_cases(registry& reg, int R, int C) {
  auto n = share(norm_case(R, C));
  auto& dev = reg.pool->dev;
  const std::string dims = std::to_string(R) + "x" + std::to_string(C);
  using F1 = Eigen::Tensor<float, 1, Eigen::RowMajor>;
  // buffers of the Eigen runs: outputs, statistics, per-row scratch
  struct bufs {
    fx::host_tensor<bf, 2> y, dx;
    fx::host_tensor<bf, 1> dw, db;
    std::vector<float> mean, rstd;
    F1 ga, gb;
    bufs(int r, int c) : y({r, c}), dx({r, c}), dw({c}), db({c}), mean(r), rstd(r), ga(r), gb(r) {}
  };
  auto e = share(bufs(R, C));
  const auto fm = [](std::vector<float>& v) { return fmap<1>(v.data(), static_cast<Ix>(v.size())); };
  const auto cfm = [](const std::vector<float>& v) { return cfmap<1>(v.data(), static_cast<Ix>(v.size())); };
  // the backward's statistics: float64 ones rounded to f32, for every executor
  auto stats = share(std::pair<std::vector<float>, std::vector<float>>{});
  for (int i = 0; i < R; ++i) stats->first.push_back(static_cast<float>(n->mean[i]));
  for (int i = 0; i < R; ++i) stats->second.push_back(static_cast<float>(n->rstd[i]));
  auto rms_stats = share(std::vector<float>{});
  for (int i = 0; i < R; ++i) rms_stats->push_back(static_cast<float>(n->rms_rstd[i]));
  {
    using V = decltype(fx::vjp<bench::all_args>(bench::layer_norm_prog<bf>));
    const std::string base = "host/layer_norm_bf16_" + dims;
    auto fa = share(std::tuple{n->x.as_view(), n->w.as_view(), n->b.as_view()});
    auto ba = share(bench::backward_args(V{}, *fa, std::tuple{n->dy.as_view()}));
    const auto fwd = fx::partition(V::forward);
  const auto bwd = fx::partition(V::backward);
    const double mf = bench::min_bytes(fwd, *fa), mbw = bench::min_bytes(bwd, *ba);
    reg.copy(base + "/forward/memcpy", mf);
    reg.fusex(base + "/forward/fusex_fused", fwd, fa, [=](const auto& o) {
      // (y, mean, rstd): mean and rstd of shape (R, 1)
      const auto s2 = flat_of(std::get<2>(o));
      return check_norm_forward(*n, false, flat_of(std::get<0>(o)), flat_of(std::get<1>(o)), &s2);
    });
    reg.timed(base + "/forward/eigen", mf,
              [=, &dev] {
                eigen_layer_norm_forward(dev, ein(n->x), ein(n->w), ein(n->b), eig(e->y), fm(e->mean), fm(e->rstd));
                return check_norm_forward(*n, false, flat_of(e->y), e->mean, &e->rstd);
              },
              [=, &dev] { eigen_layer_norm_forward(dev, ein(n->x), ein(n->w), ein(n->b), eig(e->y), fm(e->mean), fm(e->rstd)); });
    reg.copy(base + "/backward/memcpy", mbw);
    reg.fusex(base + "/backward/fusex_fused", bwd, ba, [=](const auto& o) {
      const auto db = flat_of(std::get<2>(o));
      return check_norm_backward(*n, false, flat_of(std::get<0>(o)), flat_of(std::get<1>(o)), &db);
    });
    const auto run_bwd = [=, &dev] {
      eigen_layer_norm_backward(dev, ein(n->x), ein(n->w), cfm(stats->first), cfm(stats->second), ein(n->dy), eig(e->dx),
                                eig(e->dw), eig(e->db), e->ga, e->gb);
    };
    reg.timed(base + "/backward/eigen", mbw,
              [=] {
                run_bwd();
                const auto db = flat_of(e->db);
                return check_norm_backward(*n, false, flat_of(e->dx), flat_of(e->dw), &db);
              },
              run_bwd);
  }
  {
    using V = decltype(fx::vjp<bench::all_args>(bench::rms_norm_prog<bf>));
    const std::string base = "host/rms_norm_bf16_" + dims;
    auto fa = share(std::tuple{n->x.as_view(), n->w.as_view()});
    auto ba = share(bench::backward_args(V{}, *fa, std::tuple{n->dy.as_view()}));
    const auto fwd = fx::partition(V::forward);
  const auto bwd = fx::partition(V::backward);
    const double mf = bench::min_bytes(fwd, *fa), mbw = bench::min_bytes(bwd, *ba);
    const std::vector<float>* none = nullptr;
    reg.copy(base + "/forward/memcpy", mf);
    reg.fusex(base + "/forward/fusex_fused", fwd, fa, [=](const auto& o) {
      return check_norm_forward(*n, true, flat_of(std::get<0>(o)), flat_of(std::get<1>(o)), none);
    });
    reg.timed(base + "/forward/eigen", mf,
              [=, &dev] {
                eigen_rms_norm_forward(dev, ein(n->x), ein(n->w), eig(e->y), fm(e->rstd));
                return check_norm_forward(*n, true, flat_of(e->y), e->rstd, none);
              },
              [=, &dev] { eigen_rms_norm_forward(dev, ein(n->x), ein(n->w), eig(e->y), fm(e->rstd)); });
    reg.copy(base + "/backward/memcpy", mbw);
    reg.fusex(base + "/backward/fusex_fused", bwd, ba, [=](const auto& o) {
      return check_norm_backward(*n, true, flat_of(std::get<0>(o)), flat_of(std::get<1>(o)), none);
    });
    const auto run_bwd = [=, &dev] {
      eigen_rms_norm_backward(dev, ein(n->x), ein(n->w), cfm(*rms_stats), ein(n->dy), eig(e->dx), eig(e->dw), e->gb);
    };
    reg.timed(base + "/backward/eigen", mbw,
              [=] {
                run_bwd();
                return check_norm_backward(*n, true, flat_of(e->dx), flat_of(e->dw), none);
              },
              run_bwd);
  }
}

void rope_cases(registry& reg, const rb::config& c, int T) {
  using L = std::integral_constant<fx::ops::qkv_layout, fx::ops::qkv_layout::blocks>;
  auto in = share(rb::inputs(c, 1, T, L::value));
  auto& dev = reg.pool->dev;
  const std::string base = "host/qkv_rope_bf16_T" + std::to_string(T) + "_h" + std::to_string(c.n_head) + "_g" +
                           std::to_string(c.n_query_groups) + "_hs" + std::to_string(c.head_size) + "_n" +
                           std::to_string(c.rope_n_elem);
  const double mb = rb::minimum_bytes(c, 1, T);
  using H = rb::hand_vjp<L::value>;
  auto fa = share(in->forward_args());
  auto ba = share(bench::backward_args(H{}, *fa, in->cotangents()));
  reg.copy(base + "/forward/memcpy", mb);
  reg.fusex(base + "/forward/fusex_fused", fx::partition(H::forward), fa,
            [=](const auto& o) { return rb::check_forward(*in, std::get<0>(o), std::get<1>(o), std::get<2>(o)); });
  struct bufs {
    fx::host_tensor<bf, 4> q, k, v;
    fx::host_tensor<bf, 3> dqkv;
    Eigen::Tensor<be, 4, Eigen::RowMajor> kg;
  };
  const fx::extents_array<4> heads{1, c.n_head, T, c.head_size};
  auto e = share(bufs{fx::host_tensor<bf, 4>(heads), fx::host_tensor<bf, 4>(heads), fx::host_tensor<bf, 4>(heads),
                      fx::host_tensor<bf, 3>({1, T, c.qkv_width()}), {}});
  e->kg.resize(1, c.n_query_groups, T, c.head_size);
  const auto run_fwd = [=, &dev] { eigen_rope_forward(dev, *in, eig(e->q), eig(e->k), eig(e->v), e->kg); };
  reg.timed(base + "/forward/eigen", mb, [=] { run_fwd(); return rb::check_forward(*in, e->q, e->k, e->v); }, run_fwd);
  reg.copy(base + "/backward/memcpy", mb);
  // the backward reads the cotangents (and cos, sin) only
  reg.fusex(base + "/backward/fusex_fused", fx::partition(H::backward), ba,
            [=](const auto& o) { return rb::check_backward(*in, std::get<0>(o)); });
  const auto run_bwd = [=, &dev] { eigen_rope_backward(dev, *in, eig(e->dqkv)); };
  reg.timed(base + "/backward/eigen", mb, [=] { run_bwd(); return rb::check_backward(*in, e->dqkv); }, run_bwd);
}

}  // namespace

int main(int argc, char** argv) {
  registry reg;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) reg.o.quick = true;
    else if (std::strcmp(argv[i], "--explain") == 0) reg.o.explain = true;
    else if (std::strncmp(argv[i], "--threads=", 10) == 0) reg.o.threads = std::atoi(argv[i] + 10);
    else if (std::strncmp(argv[i], "--stream-writes-from=", 21) == 0)
      reg.o.stream_writes_from = std::strtoull(argv[i] + 21, nullptr, 10);
    else rest.push_back(argv[i]);
  }
  if (reg.o.threads < 1) reg.o.threads = 1;
  reg.pool = std::make_shared<eigen_pool>(reg.o.threads);
  // The shapes of the issue that set the host executor's bar; --quick: small
  // ones, for the pipeline test.
  const bool q = reg.o.quick;
  gelu_cases(reg, q ? 64 : 2048, q ? 256 : 4096);
  norm_cases(reg, q ? 96 : 4096, q ? 256 : 2048);
  rope_cases(reg, rb::config{"h16_g4_hs128_n32", 128, 16, 4, 32, 2048}, q ? 64 : 2048);
  benchmark::AddCustomContext("threads", std::to_string(reg.o.threads));
  benchmark::AddCustomContext("eigen", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
                                           "." + std::to_string(EIGEN_MINOR_VERSION));
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
