// The plans of the LLaMA block (llama_block.cpp), in a unit of their own.
#include "blocks/block_demo.hpp"
#include "blocks/block_programs.hpp"

namespace blocks {
void print_llama_plans(int B, int T, int nh, int G, int hs, int rot, int I) {
  using bf = fx::bf16;
  const int C = nh * hs, Q = (nh + 2 * G) * hs;
  auto v1 = [](int n) { return extents_only<bf, 1>({n}); };
  auto v2 = [](int a, int b) { return extents_only<bf, 2>({a, b}); };
  print_plans<llama_grad<bf>>(std::tuple{extents_only<bf, 3>({B, T, C}), v2(T, rot), v2(T, rot), v1(C), v2(C, Q),
                                         v2(nh * hs, C), v1(C), v2(C, I), v2(C, I), v2(I, C), nh, G, hs, rot},
                              0);
}
}  // namespace blocks
