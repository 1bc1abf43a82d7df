#pragma once
// Inputs of the seed benchmarks at transformer sizes, shared by the host and
// CUDA benchmarks. Shapes follow LitGPT configs: Llama-3-8B's RoPE (32 heads,
// 8 query groups, head size 128, full rotary) and Pythia's partial rotary
// (rotary_percentage 0.25), Pythia-1B's hidden size 2048 for LayerNorm.

#include <random>

#include "../examples/seed/seed_programs.hpp"

namespace bench {

namespace fx = fusex;

inline std::mt19937& rng() {
  static std::mt19937 g(12345);
  return g;
}

template <class T, int R>
fx::host_tensor<T, R> random_tensor(const fx::extents_array<R>& e) {
  fx::host_tensor<T, R> t(e);
  std::uniform_real_distribution<float> d(-2, 2);
  for (auto& v : t.values()) v = T(d(rng()));
  return t;
}

struct rope_shape {
  int B, T, n_head, groups, head_size, n_elem;
  int C() const { return (n_head + 2 * groups) * head_size; }
};
// Llama-3-8B, batch 1: the seed's RoPE reference point (about 103 MB moved).
inline constexpr rope_shape llama3_8b{1, 4096, 32, 8, 128, 128};
// Pythia-style partial rotary with GQA, n_elem < head_size.
inline constexpr rope_shape partial{1, 2048, 16, 4, 128, 32};

}  // namespace bench
