#pragma once
// What the block examples print for a traced block and its vjp: the forward
// and backward plans under fusex's policy and under greedy claim with a cat
// claimant (Thunder's torchcompile_cat rule), at the extents they run at;
// the time of a training step on the host, and on a GPU when the example is
// compiled by nvcc (its _cuda target) and one is present; the largest error
// against the reference executor (prim by prim, no fusion).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../seed/seed_programs.hpp"
#if defined(__CUDACC__)
#include "block_cuda.hpp"
#endif

namespace blocks {

namespace fx = fusex;

template <class T, int R>
fx::host_tensor<T, R> random_tensor(const fx::extents_array<R>& e, double scale, double offset, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  fx::host_tensor<T, R> t(e);
  for (auto& v : t.values()) v = T(static_cast<float>(offset + scale * u(g)));
  return t;
}

// litgpt's RoPE cache for positions 0..T-1 and `rot` rotary channels:
// theta_i = 10000^(-2i / rot), both halves of the channels alike.
template <class T>
std::pair<fx::host_tensor<T, 2>, fx::host_tensor<T, 2>> rope_cache(int n_pos, int rot) {
  fx::host_tensor<T, 2> cos({n_pos, rot}), sin({n_pos, rot});
  for (int t = 0; t < n_pos; ++t)
    for (int i = 0; i < rot; ++i) {
      const double theta = std::pow(10000.0, -2.0 * (i % (rot / 2)) / rot) * t;
      cos(t, i) = T(static_cast<float>(std::cos(theta)));
      sin(t, i) = T(static_cast<float>(std::sin(theta)));
    }
  return {std::move(cos), std::move(sin)};
}

// Whether node v is one of the GeLU's (or its backward's) transcendentals:
// an erf or exp over rows of the MLP's width.
template <class P, class Env>
bool gelu_node(int v, const Env& env, int mlp_width) {
  const fx::node& n = P::graph.nodes[v];
  return mlp_width > 0 && (n.op == fx::op_kind::erf || n.op == fx::op_kind::exp) && n.rank >= 2 &&
         env.extent(v, n.rank - 1) == mlp_width;
}

// Kernels and bytes of a plan at these arguments' extents, one line per group
// (kind, executor, op count, its distinct ops), and how many groups the GeLU
// or its backward (its erf and exp over the MLP's width) is split into.
template <class P, class Policy, class... A>
void summary(const char* label, fx::plan<P, Policy> pl, const fx::inputs_t<A...>& in, bool list_groups,
             int mlp_width) {
  const auto t = fx::modelled_traffic(pl, in);
  const auto env = fx::check_inputs(P::graph, fx::bind_args(P{}, in).data());
  const auto& d = pl.data;
  int matmuls = 0, claimed = 0, gelu_groups = 0;
  std::string lines;
  for (int i = 0; i < d.ngroups; ++i) {
    const fx::plan_group& grp = d.groups[i];
    matmuls += grp.kind == fx::group_kind::matmul;
    claimed += grp.executor >= 0;
    std::set<std::string> ops;
    bool gelu = false;
    for (int k = 0; k < grp.nmembers; ++k) {
      const int v = d.members[grp.member0 + k];
      gelu = gelu || gelu_node<P>(v, env, mlp_width);
      ops.insert(fx::name(P::graph.nodes[v].op));
    }
    gelu_groups += gelu;
    std::string list;
    for (const auto& o : ops) list += (list.empty() ? "" : " ") + o;
    const std::string exec = grp.executor >= 0 ? std::string(fx::plan<P, Policy>::claimants::name(grp.executor))
                             : grp.kind == fx::group_kind::matmul ? "blas" : "fusex";
    char head[96];
    std::snprintf(head, sizeof head, "    %2d %-16s %-8s %3d ops ", i, fx::name(grp.kind), exec.c_str(), grp.nmembers);
    lines += head + std::string(gelu ? "[GeLU] " : "") + "{" + list + "}\n";
  }
  std::printf("  %-30s %3d kernels (%2d matmul, %d claimed), %8.2f MB moved, minimum %7.2f MB (x%.2f)", label,
              t.launches, matmuls, claimed, t.bytes / 1e6, t.min_bytes / 1e6, t.min_bytes > 0 ? t.bytes / t.min_bytes : 1.0);
  if (mlp_width > 0) std::printf("; GeLU in %d group%s", gelu_groups, gelu_groups == 1 ? "" : "s");
  std::printf("\n%s", list_groups ? lines.c_str() : "");
}

template <class H>
double scale_of(const H& h) {
  double m = 0;
  for (const auto& v : h.values()) m = std::max(m, std::fabs(static_cast<double>(static_cast<float>(v))));
  return m;
}
// max |a - b| / max |b| over the tensors of two tuples.
template <class A, class B>
double largest_error(const A& a, const B& b) {
  double worst = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&](const auto& x, const auto& y) {
      double e = 0;
      const auto xv = x.values();
      const auto yv = y.values();
      for (std::size_t k = 0; k < xv.size(); ++k)
        e = std::max(e, std::fabs(static_cast<double>(static_cast<float>(xv[k])) - static_cast<double>(static_cast<float>(yv[k]))));
      worst = std::max(worst, e / std::max(scale_of(y), 1e-30));
    };
    (one(std::get<I>(a), std::get<I>(b)), ...);
  }(std::make_index_sequence<std::tuple_size_v<A>>{});
  return worst;
}

// Views of the extents the arguments have, over no data: the cost model at
// real extents reads extents only.
template <class T, int R>
fx::view<const T, R> extents_only(const fx::extents_array<R>& e) {
  alignas(64) static const unsigned char nothing[64] = {};
  return fx::view<const T, R>(reinterpret_cast<const T*>(nothing), e);
}

// The forward and backward plans of block vjp G under fusex's policy and
// under greedy claim with a cat claimant, with their bytes at the extents of
// the arguments (a std::tuple of extents_only views and extents). Kept in a
// translation unit of its own, which instantiates no kernel: g++ takes
// minutes over a unit that both runs a block and plans it under a second
// policy.
template <const auto& G, class Args>
void print_plans(const Args& fwd_views, int mlp_width) {
  using V = std::remove_cvref_t<decltype(G)>;
  using F = typename V::forward_program;
  const auto in = std::apply([](const auto&... a) { return fx::inputs(a...); }, fwd_views);
  const auto bound = fx::bind_args(V::forward, in);
  const auto env = fx::check_inputs(F::graph, bound.data());
  // the backward reads the forward's arguments, its results (outputs, then
  // what it saved) and the output's cotangent
  auto result_view = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    using H = std::tuple_element_t<K, typename F::result_type>;
    fx::extents_array<H::rank> e{};
    for (int i = 0; i < H::rank; ++i) e[i] = env.extent(F::graph.outputs[K], i);
    return extents_only<typename H::value_type, H::rank>(e);
  };
  const auto bwd_in = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::apply([&](const auto&... a) {
      return fx::inputs(a..., result_view(std::integral_constant<std::size_t, K>{})...,
                        result_view(std::integral_constant<std::size_t, 0>{}));
    }, fwd_views);
  }(std::make_index_sequence<std::tuple_size_v<typename F::result_type>>{});

  std::printf("forward (%d ops) and backward (%d ops; %d composite ops differentiated by hand, %d values saved):\n",
              V::forward_program::sizes.nodes, V::backward_program::sizes.nodes, V::composites_applied, V::num_saved);
  summary("forward, fusex", fx::partition(V::forward), in, true, mlp_width);
  summary("forward, greedy claim + cat", fx::partition(V::forward, fx::policy::greedy_claim<seed::cat_executor>{}), in, false, mlp_width);
  summary("backward, fusex", fx::partition(V::backward), bwd_in, true, mlp_width);
  summary("backward, greedy claim + cat", fx::partition(V::backward, fx::policy::greedy_claim<seed::cat_executor>{}), bwd_in, true, mlp_width);
}

// A training step of block vjp G (forward, then backward, on the host
// executor, and on CUDA in an nvcc build) at `args` with output cotangent
// dy: its median time, and its largest error against the reference executor
// (prim by prim, no fusion).
template <const auto& G, class Args, class Dy>
int run_step(const Args& args, const Dy& dy, int steps) {
  using V = std::remove_cvref_t<decltype(G)>;
  constexpr auto fwd_plan = fx::partition(V::forward);
  constexpr auto bwd_plan = fx::partition(V::backward);
  auto forward = [&] { return fx::detail::as_tuple(std::apply([&](const auto&... a) { return fx::evaluate(fwd_plan, fx::host{}, a...); }, args)); };
  auto backward = [&](const auto& fwd) {
    return fx::detail::as_tuple(std::apply(
        [&](const auto&... a) {
          return std::apply([&](const auto&... r) { return fx::evaluate(bwd_plan, fx::host{}, a..., r..., dy); }, fwd);
        },
        args));
  };
  const auto fwd = forward();
  const auto grads = backward(fwd);
  std::vector<double> ms;
  for (int s = 0; s < steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto gr = backward(forward());
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    (void)gr;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("  host step (forward + backward): median %.1f ms over %d steps\n", ms[ms.size() / 2], steps);

  const auto ref_fwd = fx::detail::as_tuple(
      std::apply([&](const auto&... a) { return fx::evaluate(V::forward, fx::reference, a...); }, args));
  const auto ref_grads = fx::detail::as_tuple(std::apply(
      [&](const auto&... a) {
        return std::apply([&](const auto&... r) { return fx::evaluate(V::backward, fx::reference, a..., r..., dy); },
                          ref_fwd);
      },
      args));
  const double e_out = largest_error(fwd, ref_fwd);
  const double e_grad = largest_error(grads, ref_grads);
  std::printf("  largest error against the reference executor (relative to each tensor's largest value): output and "
              "saved values %.2e, gradients %.2e\n", e_out, e_grad);
  bool ok = e_out < 5e-2 && e_grad < 5e-2;
#if defined(__CUDACC__)
  auto dev_fwd = forward();  // host results whose shapes size the device outputs; overwritten by the GPU's
  auto dev_grads = backward(dev_fwd);
  if (cuda_step<G>(args, dy, dev_fwd, dev_grads, steps)) {
    const double d_out = largest_error(dev_fwd, ref_fwd), d_grad = largest_error(dev_grads, ref_grads);
    std::printf("  CUDA: largest error against the reference executor: output and saved values %.2e, gradients %.2e\n",
                d_out, d_grad);
    ok = ok && d_out < 5e-2 && d_grad < 5e-2;
  }
#else
  std::printf("  CUDA step: not in this host-only build (the example's _cuda target, built by nvcc, runs it on a GPU)\n");
#endif
  return ok ? 0 : 1;
}

}  // namespace blocks
