// The plans of the Pythia block (pythia_block.cpp), in a unit of their own.
#include "blocks/block_demo.hpp"
#include "blocks/block_programs.hpp"

namespace blocks {
void print_pythia_plans(int B, int T, int C, int nh, int hs, int rot, int I) {
  using bf = fx::bf16;
  const int Q = 3 * nh * hs;
  auto v1 = [](int n) { return extents_only<bf, 1>({n}); };
  auto v2 = [](int a, int b) { return extents_only<bf, 2>({a, b}); };
  print_plans<pythia_grad<bf>>(std::tuple{extents_only<bf, 3>({B, T, C}), v2(T, rot), v2(T, rot), v1(C), v1(C),
                                          v2(C, Q), v1(Q), v2(nh * hs, C), v1(C), v1(C), v1(C), v2(C, I), v1(I),
                                          v2(I, C), v1(C), nh, nh, hs, rot},
                               I);
}
}  // namespace blocks
