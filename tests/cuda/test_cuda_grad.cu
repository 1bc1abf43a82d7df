// The forward and backward plans of fx::vjp on the device against the
// reference executor: the composite ops' hand-derived backwards (one row
// kernel plus a column reduction for the norms, the dqkv writer for rope)
// and a user function with a matmul.
// Compiled wherever nvcc is; without a GPU it reports itself skipped.
#include "cuda_check.hpp"

namespace {

using namespace cuda_check;
using bf = fx::bf16;

template <class V, class Args, class Cots>
void check_vjp(const std::string& name, V, const Args& args, const Cots& cots) {
  std::apply([&](const auto&... a) { check(name + " forward", fx::partition(V::forward), V::forward, a...); }, args);
  const auto fwd = fx::detail::as_tuple(
      std::apply([&](const auto&... a) { return fx::evaluate(V::forward, fx::reference, a...); }, args));
  std::apply([&](const auto&... a) { check(name + " backward", fx::partition(V::backward), V::backward, a...); },
             std::tuple_cat(args, fwd, cots));
}

constexpr auto gelu = fx::trace([](fx::tensor<bf, 2> x) { return fx::ops::gelu(x); });
constexpr auto layer_norm = fx::trace([](fx::tensor<bf, 3> x, fx::tensor<bf, 1> w, fx::tensor<bf, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
constexpr auto rms_norm = fx::trace([](fx::tensor<bf, 3> x, fx::tensor<bf, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });
template <bool Expand>
constexpr auto qkv_rope = fx::trace([](fx::tensor<bf, 3> qkv, fx::tensor<bf, 2> cos, fx::tensor<bf, 2> sin,
                                       fx::index n_head, fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<Expand>(qkv, cos, sin, {n_head, groups, hs, n});
});
constexpr auto mlp = fx::trace([](fx::tensor<float, 2> x, fx::tensor<float, 1> b, fx::tensor<float, 2> w) {
  return fx::matmul(fx::ops::gelu(x + fx::broadcast_in_dim<1>(b, {x.extent<0>(), b.extent<0>()})), w);
});
constexpr fx::vjp_options only_qkv{.wrt = fx::wrt({0})};

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device here; the CUDA gradient plans compiled but were not run\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);

  check_vjp("gelu", fx::vjp(gelu), std::tuple{random_tensor<bf, 2>({37, 515}, -12, 12)},
            std::tuple{random_tensor<bf, 2>({37, 515})});
  const int B = 2, T = 33, C = 1000;
  check_vjp("layer_norm", fx::vjp(layer_norm),
            std::tuple{random_tensor<bf, 3>({B, T, C}), random_tensor<bf, 1>({C}), random_tensor<bf, 1>({C})},
            std::tuple{random_tensor<bf, 3>({B, T, C})});
  check_vjp("rms_norm", fx::vjp(rms_norm), std::tuple{random_tensor<bf, 3>({B, T, C}), random_tensor<bf, 1>({C})},
            std::tuple{random_tensor<bf, 3>({B, T, C})});
  const int nh = 8, g = 2, hs = 80, ne = 32, width = (nh + 2 * g) * hs;
  const auto cs = [&] { return random_tensor<bf, 2>({T, ne}); };
  const auto heads = [&](int h) { return random_tensor<bf, 4>({B, h, T, hs}); };
  check_vjp("qkv_rope", fx::vjp<only_qkv>(qkv_rope<false>),
            std::tuple{random_tensor<bf, 3>({B, T, width}), cs(), cs(), nh, g, hs, ne},
            std::tuple{heads(nh), heads(g), heads(g)});
  check_vjp("qkv_rope expanded", fx::vjp<only_qkv>(qkv_rope<true>),
            std::tuple{random_tensor<bf, 3>({B, T, width}), cs(), cs(), nh, g, hs, ne},
            std::tuple{heads(nh), heads(nh), heads(nh)});
  check_vjp("bias gelu matmul", fx::vjp(mlp),
            std::tuple{random_tensor<float, 2>({66, 96}), random_tensor<float, 1>({96}), random_tensor<float, 2>({96, 40})},
            std::tuple{random_tensor<float, 2>({66, 40})});
  std::printf("%d of %d checks failed\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
