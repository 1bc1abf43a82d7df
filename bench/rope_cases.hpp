#pragma once
// The seed's benchmark: litgpt's qkv split + RoPE (and, in training, k and
// v expanded to n_head heads), forward and backward, in bf16, over the
// LitGPT configs of bench/data/rope_bench_configs.csv, at batch sizes 1
// and 2. This header holds what the host and CUDA drivers share: the
// configs, the programs, the fusex executors, the inputs of a case, and
// the float64 scalar reference every executor is checked against before it
// is timed.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bench_cases.hpp"

namespace bench::rope {

using bf = fx::bf16;

struct config {
  std::string name;
  int head_size = 0, n_head = 0, n_query_groups = 0, rope_n_elem = 0, block_size = 0;
  int q_per_kv() const { return n_head / n_query_groups; }
  int qkv_width() const { return (n_head + 2 * n_query_groups) * head_size; }
};

// name,in_default_set,head_size,n_head,n_query_groups,rope_n_elem,block_size,...
inline std::vector<config> read_configs(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("rope benchmark: cannot read the configs file " + path);
  std::string line;
  std::getline(in, line);
  if (line.rfind("name,in_default_set,head_size,n_head,n_query_groups,rope_n_elem,block_size", 0) != 0)
    throw std::runtime_error("rope benchmark: " + path + " does not start with the expected header");
  std::vector<config> out;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream s(line);
    std::string f[7];
    for (auto& x : f) std::getline(s, x, ',');
    config c{f[0], std::stoi(f[2]), std::stoi(f[3]), std::stoi(f[4]), std::stoi(f[5]), std::stoi(f[6])};
    if (c.n_query_groups <= 0 || c.n_head % c.n_query_groups != 0 || c.rope_n_elem % 2 != 0 ||
        c.rope_n_elem > c.head_size)
      throw std::runtime_error("rope benchmark: config " + c.name + " is not a valid RoPE config");
    out.push_back(c);
  }
  return out;
}

// A handful of configs covering multi-head, grouped and multi-query
// attention, full and partial rotary: the --quick run.
inline std::vector<config> quick_subset(const std::vector<config>& all) {
  std::vector<config> out;
  auto take = [&](auto pred) {
    for (const auto& c : all)
      if (pred(c)) {
        for (const auto& o : out)
          if (o.name == c.name) return;
        out.push_back(c);
        return;
      }
  };
  take([](const config& c) { return c.n_query_groups == c.n_head && c.rope_n_elem == c.head_size; });
  take([](const config& c) { return c.n_query_groups == c.n_head && c.rope_n_elem < c.head_size; });
  take([](const config& c) { return c.n_query_groups > 1 && c.n_query_groups < c.n_head; });
  take([](const config& c) { return c.n_query_groups == 1; });
  return out;
}

// litgpt >= 0.5.5 (q | k | v) or 0.5.0 - 0.5.4 (per query group).
template <fx::ops::qkv_layout L>
constexpr auto program = fx::trace([](fx::tensor<bf, 3> qkv, fx::tensor<bf, 2> cos, fx::tensor<bf, 2> sin,
                                      fx::index n_head, fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, groups, hs, n, L});
});
// cos and sin are buffers in litgpt: the backward is in qkv only.
inline constexpr fx::vjp_options hand{.wrt = fx::wrt({0})};
inline constexpr fx::vjp_options prims{.hand_derived = false, .wrt = fx::wrt({0})};
template <fx::ops::qkv_layout L>
using hand_vjp = decltype(fx::vjp<hand>(program<L>));
template <fx::ops::qkv_layout L>
using prim_vjp = decltype(fx::vjp<prims>(program<L>));

// The fusex executors. Greedy claim and unfused differentiate by prims, as
// Thunder does before its executors claim.
inline constexpr const char* executors[] = {"fusex_fused", "fusex_fused_prim_vjp", "fusex_greedy_cat", "fusex_unfused"};

// Calls f(plan, vjp) for executor e in direction Dir (0 forward, 1 backward).
template <fx::ops::qkv_layout L, int Dir, class F>
void with_plan(int e, F&& f) {
  using H = hand_vjp<L>;
  using P = prim_vjp<L>;
  using cat = fx::policy::greedy_claim<seed::cat_executor>;
  if constexpr (Dir == 0) {
    switch (e) {
      case 0: return f(fx::partition(H::forward), H{});
      case 1: return f(fx::partition(P::forward), P{});
      case 2: return f(fx::partition(P::forward, cat{}), P{});
      default: return f(fx::partition(P::forward, fx::policy::unfused<>{}), P{});
    }
  } else {
    switch (e) {
      case 0: return f(fx::partition(H::backward), H{});
      case 1: return f(fx::partition(P::backward), P{});
      case 2: return f(fx::partition(P::backward, cat{}), P{});
      default: return f(fx::partition(P::backward, fx::policy::unfused<>{}), P{});
    }
  }
}

// The inputs of one (config, batch size, T): qkv, litgpt's rope cache, and
// the cotangents of q, k and v (k and v expanded to n_head heads).
struct inputs {
  config c;
  int B = 0, T = 0;
  fx::ops::qkv_layout layout = fx::ops::qkv_layout::blocks;
  fx::host_tensor<bf, 3> qkv;
  fx::host_tensor<bf, 2> cos, sin;
  fx::host_tensor<bf, 4> dq, dk, dv;
  inputs(const config& cf, int b, int t, fx::ops::qkv_layout l)
      : c(cf), B(b), T(t), layout(l), qkv(random_tensor<bf, 3>({b, t, cf.qkv_width()})),
        cos({t, cf.rope_n_elem}), sin({t, cf.rope_n_elem}),
        dq(random_tensor<bf, 4>({b, cf.n_head, t, cf.head_size})),
        dk(random_tensor<bf, 4>({b, cf.n_head, t, cf.head_size})),
        dv(random_tensor<bf, 4>({b, cf.n_head, t, cf.head_size})) {
    const int n = cf.rope_n_elem;
    for (int p = 0; p < t; ++p)  // litgpt's cache: theta_i = 10000^(-2i / n), both halves alike
      for (int i = 0; i < n; ++i) {
        const double th = std::pow(10000.0, -2.0 * (i % (n / 2)) / n) * p;
        cos(p, i) = bf(static_cast<float>(std::cos(th)));
        sin(p, i) = bf(static_cast<float>(std::sin(th)));
      }
  }
  auto forward_args() const {
    return std::tuple{qkv.as_view(), cos.as_view(), sin.as_view(), c.n_head, c.n_query_groups, c.head_size, c.rope_n_elem};
  }
  auto cotangents() const { return std::tuple{dq.as_view(), dk.as_view(), dv.as_view()}; }
  // column of head h's element d in a row of qkv, for q (part 0), k (1), v (2)
  long column(int part, int h, int d) const {
    const int hs = c.head_size, G = c.n_query_groups, qpk = c.q_per_kv();
    if (layout == fx::ops::qkv_layout::blocks) {
      if (part == 0) return static_cast<long>(h) * hs + d;
      return static_cast<long>(c.n_head + (part - 1) * G + h) * hs + d;
    }
    const int g = part == 0 ? h / qpk : h, j = part == 0 ? h % qpk : qpk + part - 1;
    return (static_cast<long>(g) * (qpk + 2) + j) * hs + d;
  }
};

// Bytes any executor must move: read qkv (or dq, dk, dv) and the rope cache
// once, write q, k, v (or dqkv) once; k and v at n_head heads, as litgpt
// returns them in training. The same both ways.
inline double minimum_bytes(const config& c, int B, int T) {
  const double heads = 3.0 * B * c.n_head * T * c.head_size, cache = 2.0 * T * c.rope_n_elem;
  const double qkv = static_cast<double>(B) * T * c.qkv_width();
  return 2.0 * (qkv + cache + heads);
}

// Largest violation of |got - ref| <= atol + rtol * scale, with torch.testing's
// bf16 tolerances and scale the sum of |terms| that make the value (at least
// |ref|): litgpt's own bf16 code rounds x*cos and rotated*sin before adding
// them, as fusex does, so a value that cancels to near zero carries the
// rounding of its terms. Reported as the worst |error| / tolerance; <= 1 passes.
struct check_result {
  double worst_ratio = 0, worst_abs = 0;
  long bad = 0;
  void add(double got, double ref, double scale) {
    constexpr double rtol = 1.6e-2, atol = 1e-5;
    const double e = std::fabs(got - ref), r = e / (atol + rtol * std::max(std::fabs(ref), scale));
    if (!(r <= 1)) ++bad;  // NaN counts as bad
    if (!(r <= worst_ratio)) worst_ratio = r;
    worst_abs = std::max(worst_abs, e);
  }
  void merge(const check_result& o) {
    worst_ratio = std::max(worst_ratio, o.worst_ratio);
    worst_abs = std::max(worst_abs, o.worst_abs);
    bad += o.bad;
  }
  bool ok() const { return bad == 0; }
  std::string text() const {
    char b[160];
    std::snprintf(b, sizeof b, "%ld elements outside bf16 tolerance, worst |error| %.3g (%.3g x the tolerance)", bad,
                  worst_abs, worst_ratio);
    return b;
  }
};

inline double f64(bf v) { return static_cast<double>(static_cast<float>(v)); }

// Forward in float64, scalar: q, k and v (B, n_head, T, hs), k and v of head h
// from group h / q_per_kv.
template <class Q, class K, class V>
check_result check_forward(const inputs& in, const Q& q, const K& k, const V& v) {
  const config& c = in.c;
  const int n = c.rope_n_elem, half = n / 2, qpk = c.q_per_kv();
  check_result all;
#pragma omp parallel
  {
  check_result r;
#pragma omp for schedule(static) nowait
  for (int bh = 0; bh < in.B * c.n_head; ++bh)
    for (int b = bh / c.n_head, h = bh % c.n_head, t = 0; t < in.T; ++t)
        for (int d = 0; d < c.head_size; ++d)
          for (int part = 0; part < 3; ++part) {
            const int src = part == 0 ? h : h / qpk;
            auto x = [&](int e) { return f64(in.qkv(b, t, in.column(part, src, e))); };
            double ref = x(d), scale = 0;
            if (part < 2 && d < n) {
              const double a = x(d) * f64(in.cos(t, d)), s = (d < half ? -x(d + half) : x(d - half)) * f64(in.sin(t, d));
              ref = a + s;
              scale = std::fabs(a) + std::fabs(s);
            }
            const auto& out = part == 0 ? q : part == 1 ? k : v;
            r.add(f64(out(b, h, t, d)), ref, scale);
          }
#pragma omp critical
  all.merge(r);
  }
  return all;
}

// Backward in float64, scalar: dqkv from dq, dk, dv; a group's k and v sum
// the cotangents of its q_per_kv heads.
template <class D>
check_result check_backward(const inputs& in, const D& dqkv) {
  const config& c = in.c;
  const int n = c.rope_n_elem, half = n / 2, qpk = c.q_per_kv();
  struct value {
    double v = 0, scale = 0;  // the value and the sum of |terms| in it
  };
  auto rope_t = [&](const fx::host_tensor<bf, 4>& dy, int b, int h, int t, int d) {  // the transposed rotation
    if (d >= n) return value{f64(dy(b, h, t, d)), std::fabs(f64(dy(b, h, t, d)))};
    const double rot = d < half ? f64(dy(b, h, t, d + half)) * f64(in.sin(t, d + half))
                                : -f64(dy(b, h, t, d - half)) * f64(in.sin(t, d - half));
    const double direct = f64(dy(b, h, t, d)) * f64(in.cos(t, d));
    return value{direct + rot, std::fabs(direct) + std::fabs(rot)};
  };
  check_result all;
#pragma omp parallel
  {
  check_result r;
#pragma omp for schedule(static) nowait
  for (int bt = 0; bt < in.B * in.T; ++bt)
    for (int b = bt / in.T, t = bt % in.T, d = 0; d < c.head_size; ++d) {
        for (int h = 0; h < c.n_head; ++h) {
          const value q = rope_t(in.dq, b, h, t, d);
          r.add(f64(dqkv(b, t, in.column(0, h, d))), q.v, q.scale);
        }
        for (int g = 0; g < c.n_query_groups; ++g) {
          value rk, rv;
          for (int j = 0; j < qpk; ++j) {
            const value k = rope_t(in.dk, b, g * qpk + j, t, d);
            rk.v += k.v;
            rk.scale += k.scale;
            const double v = f64(in.dv(b, g * qpk + j, t, d));
            rv.v += v;
            rv.scale += std::fabs(v);
          }
          r.add(f64(dqkv(b, t, in.column(1, g, d))), rk.v, rk.scale);
          r.add(f64(dqkv(b, t, in.column(2, g, d))), rv.v, rv.scale);
        }
      }
#pragma omp critical
  all.merge(r);
  }
  return all;
}

}  // namespace bench::rope
