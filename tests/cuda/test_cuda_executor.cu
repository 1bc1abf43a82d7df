// The CUDA executor against the reference executor, for every group kind
// and the seed's cases; all three policies on the small cases (the unfused
// plans of large graphs instantiate dozens of kernels, which the host tests
// already cover).
// Compiled wherever nvcc is; without a GPU it reports itself skipped.
#include "../../examples/seed/seed_programs.hpp"
#include "cuda_check.hpp"

namespace {

using namespace cuda_check;

constexpr auto softmax = fx::trace([](fx::tensor<float, 3> x) {
  auto m = fx::amax<-1>(x, fx::keepdim);
  auto e = fx::exp(x - m);
  return e / fx::sum<-1>(e, fx::keepdim);
});
constexpr auto column_sums = fx::trace([](fx::tensor<float, 2> dy, fx::tensor<float, 2> x) {
  auto [var, mean] = fx::var_mean<0>(x, 1.0);
  return std::tuple{fx::sum<0>(dy * x), dy * 2.0f, var, mean};
});
constexpr auto mlp = fx::trace([](fx::tensor<fx::bf16, 3> x, fx::tensor<fx::bf16, 2> w1, fx::tensor<fx::bf16, 2> w2) {
  return fx::matmul(fx::ops::gelu(fx::matmul(x, w1)), w2);
});

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device here; the CUDA executor compiled but was not run\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);

  check_policies("dgelu", seed::dgelu, random_tensor<fx::bf16, 2>({33, 517}, -6, 6), random_tensor<fx::bf16, 2>({33, 517}));
  check_policies("layer_norm", seed::layer_norm, random_tensor<fx::bf16, 2>({64, 4096}), random_tensor<fx::bf16, 1>({4096}),
                 random_tensor<fx::bf16, 1>({4096}), 1e-5f);
  check("softmax", fx::partition(softmax), softmax, random_tensor<float, 3>({3, 5, 1031}, -8, 8));
  check("column_sums", fx::partition(column_sums), column_sums, random_tensor<float, 2>({700, 37}), random_tensor<float, 2>({700, 37}));
  const int B = 2, T = 33, nh = 8, g = 2, hs = 64, ne = 16;
  check("rope_forward", fx::partition(seed::rope_forward), seed::rope_forward, random_tensor<fx::bf16, 3>({B, T, (nh + 2 * g) * hs}),
                 random_tensor<fx::bf16, 2>({T, ne}), random_tensor<fx::bf16, 2>({T, ne}), nh, g, hs, ne);
  check("rope_backward", fx::partition(seed::rope_backward), seed::rope_backward, random_tensor<fx::bf16, 4>({B, nh, T, hs}),
        random_tensor<fx::bf16, 4>({B, g, T, hs}), random_tensor<fx::bf16, 4>({B, g, T, hs}), random_tensor<fx::bf16, 2>({T, ne}),
        random_tensor<fx::bf16, 2>({T, ne}), nh, g, hs, ne);
  check("mlp", fx::partition(mlp), mlp, random_tensor<fx::bf16, 3>({2, 33, 64}), random_tensor<fx::bf16, 2>({64, 96}),
        random_tensor<fx::bf16, 2>({96, 64}));
  const int N = B * T, E = 64, I = 128;
  // the claimed cat runs as the user's kernel; the greedy claim as a fused region
  check_two<seed::cat_executor>(
      "parallel_residual", seed::parallel_residual_backward, random_tensor<fx::bf16, 2>({N, E}),
      random_tensor<fx::bf16, 2>({N, I}), random_tensor<fx::bf16, 2>({E, I}), random_tensor<fx::bf16, 2>({I, E}),
      random_tensor<fx::bf16, 4>({B, nh, T, hs}), random_tensor<fx::bf16, 4>({B, g, T, hs}),
      random_tensor<fx::bf16, 4>({B, g, T, hs}), random_tensor<fx::bf16, 2>({T, ne}), random_tensor<fx::bf16, 2>({T, ne}),
      random_tensor<fx::bf16, 2>({(nh + 2 * g) * hs, E}), nh, g, hs, ne);
  std::printf("%d of %d checks failed\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
