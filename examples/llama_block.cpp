// A LLaMA block as litgpt builds it: RMSNorm, qkv projection, qkv split +
// full RoPE with grouped-query attention (n_query_groups < n_head), causal
// attention, output projection, and the SwiGLU MLP with sequential
// residuals, forward and backward through fx::vjp with the hand-derived
// backwards of rms_norm, swiglu and qkv_split_rope. Runs a TinyLlama-shaped
// block (32 heads in 4 groups of head_size 64), narrowed to n_embd 1024 and
// intermediate 2816 so that the demo takes seconds on a CPU.
#include <cstdio>
#include <cstring>

#include "blocks/block_demo.hpp"
#include "blocks/block_programs.hpp"

namespace fx = fusex;
using bf = fx::bf16;

namespace blocks {
void print_llama_plans(int B, int T, int nh, int G, int hs, int rot, int I);  // llama_block_plans.cpp
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int B = 1, T = quick ? 64 : 512, nh = 16, G = 4, hs = 64, rot = 64, C = nh * hs, I = 2816;
  const int Q = (nh + 2 * G) * hs;
  std::mt19937 g(11);
  using blocks::random_tensor;
  auto vec = [&](int n, double s, double o = 0) { return random_tensor<bf, 1>({n}, s, o, g); };
  auto mat = [&](int r, int c) { return random_tensor<bf, 2>({r, c}, 1.0 / std::sqrt(r), 0, g); };
  auto [cos, sin] = blocks::rope_cache<bf>(T, rot);
  const auto args = std::tuple{random_tensor<bf, 3>({B, T, C}, 1.0, 0, g), std::move(cos), std::move(sin),
                               vec(C, 0.2, 1), mat(C, Q), mat(nh * hs, C), vec(C, 0.2, 1), mat(C, I), mat(C, I),
                               mat(I, C), nh, G, hs, rot};
  const auto dy = random_tensor<bf, 3>({B, T, C}, 1.0, 0, g);
  std::printf("# A LLaMA block (GQA: %d heads in %d groups of head_size %d), bf16, B %d, T %d, n_embd %d, on the host "
              "executor\n", nh, G, hs, B, T, C);
  blocks::print_llama_plans(B, T, nh, G, hs, rot, I);
  return blocks::run_step<blocks::llama_grad<bf>>(args, dy, quick ? 2 : 5);
}
