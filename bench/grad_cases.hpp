#pragma once
// The forward and backward of the composite ops (gelu, layer_norm, rms_norm,
// qkv split + rope), shared by the host and CUDA benchmarks. Each case
// registers, through the caller's `run` (name, plan, argument tuple) and
// `copy` (name, bytes):
//   <op>/forward/{fused,unfused}        the vjp forward (outputs + saved values)
//   <op>/backward/{fused,unfused}       the hand-derived backward
//   <op>/backward_prim_vjp/fused        the backward of the op's decomposition
//   <op>/{forward,backward}/copy_limit  a copy of the fused plan's minimum bytes

#include <string>
#include <tuple>

#include "bench_cases.hpp"

namespace bench {

template <class T>
constexpr auto gelu_prog = fx::trace([](fx::tensor<T, 2> x) { return fx::ops::gelu(x); });
template <class T>
constexpr auto layer_norm_prog = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
template <class T>
constexpr auto rms_norm_prog =
    fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });
// LitGPT expands k and v for GQA (1 < n_query_groups < n_head).
template <class T>
constexpr auto qkv_rope_prog = fx::trace([](fx::tensor<T, 3> qkv, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin,
                                           fx::index n_head, fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, groups, hs, n});
});

// cos and sin are buffers in LitGPT: rope is differentiated in qkv only.
inline constexpr fx::vjp_options all_args{};
inline constexpr fx::vjp_options only_first{.wrt = fx::wrt({0})};

template <class Plan, class Args>
double min_bytes(Plan plan, const Args& args) {
  return std::apply([&](const auto&... a) { return fx::modelled_traffic(plan, fx::inputs(a...)).min_bytes; }, args);
}

// Arguments of V's backward: the forward's arguments, the forward plan's
// results (outputs, then saved values), then the cotangents.
template <class V, class Args, class Cots>
auto backward_args(V, const Args& args, const Cots& cots) {
  auto fwd = fx::detail::as_tuple(
      std::apply([&](const auto&... a) { return fx::evaluate(fx::partition(V::forward), fx::host{}, a...); }, args));
  return std::tuple_cat(args, std::move(fwd), cots);
}

template <fx::vjp_options O, class P, class Args, class Cots, class Run, class Copy>
void grad_case(const std::string& name, P prog, const Args& args, const Cots& cots, Run&& run, Copy&& copy) {
  using V = decltype(fx::vjp<O>(prog));
  constexpr fx::vjp_options prims{.hand_derived = false, .wrt = O.wrt};
  using Vp = decltype(fx::vjp<prims>(prog));
  const auto bargs = backward_args(V{}, args, cots);
  const auto bargs_prim = backward_args(Vp{}, args, cots);
  copy(name + "/forward/copy_limit", min_bytes(fx::partition(V::forward), args));
  run(name + "/forward/fused", fx::partition(V::forward), args);
  run(name + "/forward/unfused", fx::partition(V::forward, fx::policy::unfused<>{}), args);
  copy(name + "/backward/copy_limit", min_bytes(fx::partition(V::backward), bargs));
  run(name + "/backward/fused", fx::partition(V::backward), bargs);
  run(name + "/backward/unfused", fx::partition(V::backward, fx::policy::unfused<>{}), bargs);
  run(name + "/backward_prim_vjp/fused", fx::partition(Vp::backward), bargs_prim);
}

struct grad_sizes {
  int gelu_rows, gelu_cols;  // gelu
  int norm_rows, norm_cols;  // layer_norm, rms_norm
  rope_shape rope;           // qkv split + rope
};

template <class Run, class Copy>
void grad_cases(const grad_sizes& s, Run&& run, Copy&& copy) {
  using T = fx::bf16;
  const auto dims = [](int a, int b) { return std::to_string(a) + "x" + std::to_string(b); };
  {
    const auto x = random_tensor<T, 2>({s.gelu_rows, s.gelu_cols}), dy = random_tensor<T, 2>({s.gelu_rows, s.gelu_cols});
    grad_case<bench::all_args>("gelu_bf16_" + dims(s.gelu_rows, s.gelu_cols), gelu_prog<T>, std::tuple{x}, std::tuple{dy}, run, copy);
  }
  {
    const int R = s.norm_rows, C = s.norm_cols;
    const auto x = random_tensor<T, 2>({R, C}), dy = random_tensor<T, 2>({R, C});
    const auto w = random_tensor<T, 1>({C}), b = random_tensor<T, 1>({C});
    grad_case<bench::all_args>("layer_norm_bf16_" + dims(R, C), layer_norm_prog<T>, std::tuple{x, w, b}, std::tuple{dy}, run, copy);
    grad_case<bench::all_args>("rms_norm_bf16_" + dims(R, C), rms_norm_prog<T>, std::tuple{x, w}, std::tuple{dy}, run, copy);
  }
  {
    const rope_shape r = s.rope;
    const auto qkv = random_tensor<T, 3>({r.B, r.T, r.C()});
    const auto cos = random_tensor<T, 2>({r.T, r.n_elem}), sin = random_tensor<T, 2>({r.T, r.n_elem});
    const auto heads = [&] { return random_tensor<T, 4>({r.B, r.n_head, r.T, r.head_size}); };
    grad_case<bench::only_first>("qkv_rope_bf16_T" + std::to_string(r.T) + "_h" + std::to_string(r.n_head) + "_g" +
                  std::to_string(r.groups) + "_n" + std::to_string(r.n_elem),
              qkv_rope_prog<T>, std::tuple{qkv, cos, sin, r.n_head, r.groups, r.head_size, r.n_elem},
              std::tuple{heads(), heads(), heads()}, run, copy);
  }
}

}  // namespace bench
