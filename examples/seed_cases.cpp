// The seed's cases under each policy: kernel count, modelled bytes (at the
// extents used here) against the minimum, and the largest relative error
// against the reference executor, run on the host executor; the
// parallel-residual backward is planned at its extents (hints), here and at
// Pythia-6.9b shapes (plans only). One line per case and policy:
//   seed-case <name> policy=<fused|greedy|unfused> kernels=<k> bytes=<b> min-bytes=<m> max-rel-err=<e>
// It exits 1 when an error passes max_rel_err_allowed (the tests run it).
#include <cmath>
#include <cstdio>
#include <random>
#include <tuple>

#include "seed/seed_programs.hpp"

namespace fx = fusex;

namespace {

std::mt19937 rng(2026);

// bf16 results, each policy rounding where its kernels store: a few bf16
// ulps (2^-8 each) apart from the reference, relative to max(|r|, 1e-3).
constexpr double max_rel_err_allowed = 0.05;
bool all_within = true;

template <class T, int R>
fx::host_tensor<T, R> random_tensor(const fx::extents_array<R>& e) {
  fx::host_tensor<T, R> t(e);
  std::uniform_real_distribution<float> d(-2, 2);
  for (auto& v : t.values()) v = T(d(rng));
  return t;
}

template <class T, int R>
double max_rel_err(const fx::host_tensor<T, R>& got, const fx::host_tensor<T, R>& ref) {
  double worst = 0;
  for (fx::index_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<float>(got.values()[i]), r = static_cast<float>(ref.values()[i]);
    worst = std::max(worst, std::fabs(g - r) / std::max(std::fabs(r), 1e-3));
  }
  return worst;
}
template <class A>
double max_rel_err_all(const A& got, const A& ref) {
  if constexpr (requires { got.values(); }) {
    return max_rel_err(got, ref);
  } else {
    double w = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((w = std::max(w, max_rel_err(std::get<I>(got), std::get<I>(ref)))), ...);
    }(std::make_index_sequence<std::tuple_size_v<A>>{});
    return w;
  }
}

template <class Plan, class Prog, class... Args>
void report(const char* name, const char* policy, Plan plan, Prog prog, const Args&... args) {
  const auto ref = fx::evaluate(prog, fx::reference, args...);
  const auto got = fx::evaluate(plan, fx::host{}, args...);
  const fx::traffic t = fx::modelled_traffic(plan, fx::inputs(args...));
  const double err = max_rel_err_all(got, ref);
  std::printf("seed-case %s policy=%s kernels=%d bytes=%.0f min-bytes=%.0f max-rel-err=%.3g\n", name, policy,
              plan.kernels(), t.bytes, t.min_bytes, err);
  if (!(err <= max_rel_err_allowed)) {
    std::printf("seed-case %s policy=%s: max-rel-err %.3g is past %.3g\n", name, policy, err, max_rel_err_allowed);
    all_within = false;
  }
}

template <class... Claimants, class Prog, class... Args>
void all_policies(const char* name, Prog prog, const Args&... args) {
  report(name, "fused", fx::partition(prog, fx::policy::fused<Claimants...>{}), prog, args...);
  report(name, "greedy", fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), prog, args...);
  report(name, "unfused", fx::partition(prog, fx::policy::unfused<Claimants...>{}), prog, args...);
}
// The same, planned at the arguments' extents (hints H).
template <fx::extent_hints H, class... Claimants, class Prog, class... Args>
void all_policies_at(const char* name, Prog prog, const Args&... args) {
  report(name, "fused", fx::partition(prog, fx::policy::fused<Claimants...>{}, fx::hints<H>), prog, args...);
  report(name, "greedy", fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}, fx::hints<H>), prog, args...);
  report(name, "unfused", fx::partition(prog, fx::policy::unfused<Claimants...>{}, fx::hints<H>), prog, args...);
}

// Plans only, at Pythia-6.9b shapes: bytes at those extents (the arguments
// are views of extents that large over one small buffer; nothing runs).
template <class Plan>
void plan_only(const char* policy, Plan plan) {
  using bf = fx::bf16;
  constexpr seed::residual_shape s = seed::pythia_6_9b;
  constexpr long N = s.B * s.T, Cqkv = (s.n_head + 2 * s.groups) * s.hs;
  alignas(64) static const bf nothing[64] = {};
  auto v2 = [&](long a, long b) { return fx::view<const bf, 2>(nothing, {a, b}); };
  auto v4 = [&](long a, long b, long c, long d) { return fx::view<const bf, 4>(nothing, {a, b, c, d}); };
  const auto in = fx::inputs(v2(N, s.C), v2(N, s.I), v2(s.C, s.I), v2(s.I, s.C), v4(s.B, s.n_head, s.T, s.hs),
                             v4(s.B, s.groups, s.T, s.hs), v4(s.B, s.groups, s.T, s.hs), v2(s.T, s.n_elem),
                             v2(s.T, s.n_elem), v2(Cqkv, s.C), static_cast<int>(s.n_head), static_cast<int>(s.groups),
                             static_cast<int>(s.hs), static_cast<int>(s.n_elem));
  const fx::traffic t = fx::modelled_traffic(plan, in);
  std::printf("seed-case parallel-residual-backward@pythia-6.9b policy=%s kernels=%d bytes=%.0f min-bytes=%.0f "
              "max-rel-err=not-run\n",
              policy, plan.kernels(), t.bytes, t.min_bytes);
}

}  // namespace

int main() {
  {
    auto x = random_tensor<fx::bf16, 2>({256, 1024}), dy = random_tensor<fx::bf16, 2>({256, 1024});
    all_policies("dgelu", seed::dgelu, x, dy);
  }
  const int B = 2, T = 64, n_head = 8, groups = 2, hs = 64, n_elem = 16, C = (n_head + 2 * groups) * hs;
  {
    auto qkv = random_tensor<fx::bf16, 3>({B, T, C});
    auto cos = random_tensor<fx::bf16, 2>({T, n_elem}), sin = random_tensor<fx::bf16, 2>({T, n_elem});
    all_policies("rope-forward", seed::rope_forward, qkv, cos, sin, n_head, groups, hs, n_elem);
  }
  {
    auto dq = random_tensor<fx::bf16, 4>({B, n_head, T, hs});
    auto dk = random_tensor<fx::bf16, 4>({B, groups, T, hs}), dv = random_tensor<fx::bf16, 4>({B, groups, T, hs});
    auto cos = random_tensor<fx::bf16, 2>({T, n_elem}), sin = random_tensor<fx::bf16, 2>({T, n_elem});
    all_policies("rope-backward", seed::rope_backward, dq, dk, dv, cos, sin, n_head, groups, hs, n_elem);
  }
  {
    auto x = random_tensor<fx::bf16, 2>({256, 1024});
    auto w = random_tensor<fx::bf16, 1>({1024}), b = random_tensor<fx::bf16, 1>({1024});
    all_policies("layer-norm", seed::layer_norm, x, w, b, 1e-5f);
  }
  {
    const int N = B * T, E = 128, I = 512;
    auto dy = random_tensor<fx::bf16, 2>({N, E}), fc = random_tensor<fx::bf16, 2>({N, I});
    auto w_proj = random_tensor<fx::bf16, 2>({E, I}), w_fc = random_tensor<fx::bf16, 2>({I, E});
    auto dq = random_tensor<fx::bf16, 4>({B, n_head, T, hs});
    auto dk = random_tensor<fx::bf16, 4>({B, groups, T, hs}), dv = random_tensor<fx::bf16, 4>({B, groups, T, hs});
    auto cos = random_tensor<fx::bf16, 2>({T, n_elem}), sin = random_tensor<fx::bf16, 2>({T, n_elem});
    auto w_attn = random_tensor<fx::bf16, 2>({C, E});
    static_assert(seed::seed_case_shape.B == B && seed::seed_case_shape.T == T && seed::seed_case_shape.C == E &&
                  seed::seed_case_shape.I == I && seed::seed_case_shape.n_head == n_head &&
                  seed::seed_case_shape.groups == groups && seed::seed_case_shape.hs == hs &&
                  seed::seed_case_shape.n_elem == n_elem);
    all_policies_at<seed::residual_hints(seed::seed_case_shape), seed::cat_executor>(
        "parallel-residual-backward", seed::parallel_residual_backward, dy, fc, w_proj, w_fc, dq, dk, dv, cos, sin,
        w_attn, n_head, groups, hs, n_elem);
  }
  constexpr auto pythia = fx::hints<seed::residual_hints(seed::pythia_6_9b)>;
  plan_only("fused", fx::partition(seed::parallel_residual_backward, fx::policy::fused<seed::cat_executor>{}, pythia));
  plan_only("greedy",
            fx::partition(seed::parallel_residual_backward, fx::policy::greedy_claim<seed::cat_executor>{}, pythia));
  plan_only("unfused", fx::partition(seed::parallel_residual_backward, fx::policy::unfused<seed::cat_executor>{}, pythia));
  return all_within ? 0 : 1;
}
