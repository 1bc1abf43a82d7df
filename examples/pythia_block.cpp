// A Pythia (GPT-NeoX) block as litgpt builds it: LayerNorm, qkv projection,
// qkv split + partial RoPE, causal attention, output projection, and the
// parallel-residual exact-GeLU MLP, forward and backward through fx::vjp
// with the hand-derived backwards of layer_norm, gelu and qkv_split_rope.
//
// First the seed's comparison at Pythia-6.9b shapes (plans only): the
// parallel-residual backward where the RoPE backward's cat meets the dGeLU,
// under fusex's policy and under greedy claim with a cat claimant, Thunder's
// torchcompile_cat rule that split it into four kernels in Lightning Thunder
// #256. Then a pythia-70m-sized block runs forward and backward on the host.
#include <cstdio>
#include <cstring>

#include "blocks/block_demo.hpp"
#include "blocks/block_programs.hpp"

namespace fx = fusex;
using bf = fx::bf16;

namespace blocks {
void print_pythia_plans(int B, int T, int C, int nh, int hs, int rot, int I);  // pythia_block_plans.cpp
}

static_assert(fx::partition(seed::parallel_residual_backward).kernels() <=
                  fx::partition(seed::parallel_residual_backward, fx::policy::unfused<>{}).kernels(),
              "never more kernels than unfused");

// The seed's parallel-residual backward at Pythia-6.9b shapes: the plans
// and their bytes at those extents (views of extents only: nothing is read).
template <class Policy>
void seed_plan(const char* label, Policy policy) {
  constexpr long B = 1, T = 2048, C = 4096, I = 16384, nh = 32, hs = 128, rot = 32;
  constexpr long N = B * T;
  alignas(64) static const bf nothing[64] = {};
  auto v2 = [&](long a, long b) { return fx::view<const bf, 2>(nothing, {a, b}); };
  auto v4 = [&](long a, long b, long c, long d) { return fx::view<const bf, 4>(nothing, {a, b, c, d}); };
  const auto in = fx::inputs(v2(N, C), v2(N, I), v2(C, I), v2(I, C), v4(B, nh, T, hs), v4(B, nh, T, hs),
                             v4(B, nh, T, hs), v2(T, rot), v2(T, rot), v2(3 * C, C), nh, nh, hs, rot);
  // planned at these extents (hints), as a user who knows the model's shapes would
  blocks::summary(label, fx::partition(seed::parallel_residual_backward, policy, fx::hints<seed::residual_hints(seed::pythia_6_9b)>),
                  in, false, I);
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("# The seed at Pythia-6.9b shapes (B 1, T 2048, n_embd 4096, intermediate 16384, 32 heads, head_size 128,"
              " rotary 32): the parallel-residual backward, bf16\n");
  seed_plan("fusex", fx::policy::fused<seed::cat_executor>{});
  seed_plan("greedy claim + cat (Thunder)", fx::policy::greedy_claim<seed::cat_executor>{});
  seed_plan("unfused", fx::policy::unfused<seed::cat_executor>{});

  // pythia-70m: n_embd 512, 8 heads of 64, rotary 16 of 64, intermediate 2048
  const int B = 1, T = quick ? 64 : 512, C = 512, nh = 8, hs = 64, rot = 16, I = 2048, Q = (nh + 2 * nh) * hs;
  std::mt19937 g(70);
  using blocks::random_tensor;
  auto vec = [&](int n, double s, double o = 0) { return random_tensor<bf, 1>({n}, s, o, g); };
  auto mat = [&](int r, int c) { return random_tensor<bf, 2>({r, c}, 1.0 / std::sqrt(r), 0, g); };
  auto [cos, sin] = blocks::rope_cache<bf>(T, rot);
  const auto args = std::tuple{random_tensor<bf, 3>({B, T, C}, 1.0, 0, g), std::move(cos), std::move(sin),
                               vec(C, 0.2, 1), vec(C, 0.1), mat(C, Q), vec(Q, 0.1), mat(nh * hs, C), vec(C, 0.1),
                               vec(C, 0.2, 1), vec(C, 0.1), mat(C, I), vec(I, 0.1), mat(I, C), vec(C, 0.1),
                               nh, nh, hs, rot};
  const auto dy = random_tensor<bf, 3>({B, T, C}, 1.0, 0, g);
  std::printf("\n# A pythia-70m-sized block, bf16, B %d, T %d, on the host executor\n", B, T);
  blocks::print_pythia_plans(B, T, C, nh, hs, rot, I);
  return blocks::run_step<blocks::pythia_grad<bf>>(args, dy, quick ? 2 : 5);
}
