// The CUDA executor against the reference executor, for every group kind,
// the seed's cases under each policy, and the forward and backward plans of
// fx::vjp (the composite ops' hand-derived backwards: one row kernel plus a
// column reduction for the norms, the dqkv writer for rope).
#include "../../examples/seed/seed_programs.hpp"
#include "device_support.hpp"
#include "../shared_programs.hpp"

namespace {

using namespace fxt;
using fxt::cuda::check_device;
using bf = fx::bf16;

template <class... Claimants, class Prog, class... Args>
void check_policies_device(const char* what, Prog prog, const Args&... args) {
  check_device(what, fx::partition(prog, fx::policy::fused<Claimants...>{}), prog, args...);
  check_device(what, fx::partition(prog, fx::policy::greedy_claim<Claimants...>{}), prog, args...);
  check_device(what, fx::partition(prog, fx::policy::unfused<Claimants...>{}), prog, args...);
}

constexpr auto softmax = fx::trace([](fx::tensor<float, 3> x) {
  auto m = fx::amax<-1>(x, fx::keepdim);
  auto e = fx::exp(x - m);
  return e / fx::sum<-1>(e, fx::keepdim);
});
constexpr auto softmax_bf16 = fx::trace([](fx::tensor<bf, 2> x) {
  auto xf = fx::convert<float>(x);
  auto e = fx::exp(xf - fx::amax<-1>(xf, fx::keepdim));
  return fx::convert<bf>(e / fx::sum<-1>(e, fx::keepdim));
});
constexpr auto column_sums = fx::trace([](fx::tensor<float, 2> dy, fx::tensor<float, 2> x) {
  auto [var, mean] = fx::var_mean<0>(x, 1.0);
  return std::tuple{fx::sum<0>(dy * x), dy * 2.0f, var, mean};
});
// Over the middle axis, with a second reduction reading the first.
constexpr auto middle_axis = fx::trace([](fx::tensor<float, 3> x) {
  auto m = fx::sum<1>(x, fx::keepdim) / fx::convert<float>(fx::index_value<std::int64_t>(x.extent<1>(), x));
  auto c = x - m;
  return std::tuple{fx::sum<1>(c * c), fx::amax<1>(x), m};
});
constexpr auto mlp = fx::trace([](fx::tensor<bf, 3> x, fx::tensor<bf, 2> w1, fx::tensor<bf, 2> w2) {
  return fx::matmul(fx::ops::gelu(fx::matmul(x, w1)), w2);
});
using fxt::programs::remaps;

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
constexpr fx::vjp_options only_qkv{.wrt = fx::wrt({0})};

template <class V, class Args, class Cots>
void check_vjp(const char* what, V, const Args& args, const Cots& cots) {
  std::apply([&](const auto&... a) { check_device(what, fx::partition(V::forward), V::forward, a...); }, args);
  const auto fwd = fx::detail::as_tuple(
      std::apply([&](const auto&... a) { return fx::evaluate(V::forward, fx::reference, a...); }, args));
  std::apply([&](const auto&... a) { check_device(what, fx::partition(V::backward), V::backward, a...); },
             std::tuple_cat(args, fwd, cots));
}

}  // namespace

TEST_CASE("cuda: pointwise, row and column groups, matmul, remaps", "[cuda]") {
  check_policies_device("dgelu", seed::dgelu, random_tensor<bf, 2>({33, 517}, -6, 6), random_tensor<bf, 2>({33, 517}));
  check_policies_device("layer_norm", seed::layer_norm, random_tensor<bf, 2>({64, 4096}), random_tensor<bf, 1>({4096}),
                        random_tensor<bf, 1>({4096}), 1e-5f);
  check_device("softmax f32", fx::partition(softmax), softmax, random_tensor<float, 3>({3, 5, 1031}, -8, 8));
  check_device("softmax bf16 (online max and sum)", fx::partition(softmax_bf16), softmax_bf16,
               random_tensor<bf, 2>({300, 4096}, -8, 8));
  check_device("column sums", fx::partition(column_sums), column_sums, random_tensor<float, 2>({700, 37}),
               random_tensor<float, 2>({700, 37}));
  check_device("column sums, many row blocks", fx::partition(column_sums), column_sums, random_tensor<float, 2>({20000, 300}),
               random_tensor<float, 2>({20000, 300}));
  check_device("middle axis, dependent reductions", fx::partition(middle_axis), middle_axis,
               random_tensor<float, 3>({6, 900, 70}));
  check_device("remaps", fx::partition(remaps), remaps, random_tensor<float, 3>({4, 6, 5}), fx::index_t{2});
  check_device("mlp", fx::partition(mlp), mlp, random_tensor<bf, 3>({2, 33, 64}), random_tensor<bf, 2>({64, 96}),
               random_tensor<bf, 2>({96, 64}));
}

TEST_CASE("cuda: the seed's rope and parallel-residual cases", "[cuda]") {
  const int B = 2, T = 33, nh = 8, g = 2, hs = 64, ne = 16;
  check_device("rope forward", fx::partition(seed::rope_forward), seed::rope_forward,
               random_tensor<bf, 3>({B, T, (nh + 2 * g) * hs}), random_tensor<bf, 2>({T, ne}), random_tensor<bf, 2>({T, ne}),
               fx::index_t{nh}, fx::index_t{g}, fx::index_t{hs}, fx::index_t{ne});
  check_device("rope backward", fx::partition(seed::rope_backward), seed::rope_backward,
               random_tensor<bf, 4>({B, nh, T, hs}), random_tensor<bf, 4>({B, g, T, hs}), random_tensor<bf, 4>({B, g, T, hs}),
               random_tensor<bf, 2>({T, ne}), random_tensor<bf, 2>({T, ne}), fx::index_t{nh}, fx::index_t{g},
               fx::index_t{hs}, fx::index_t{ne});
  const int N = B * T, E = 64, I = 128;
  const auto args = std::tuple{random_tensor<bf, 2>({N, E}), random_tensor<bf, 2>({N, I}), random_tensor<bf, 2>({E, I}),
                               random_tensor<bf, 2>({I, E}), random_tensor<bf, 4>({B, nh, T, hs}),
                               random_tensor<bf, 4>({B, g, T, hs}), random_tensor<bf, 4>({B, g, T, hs}),
                               random_tensor<bf, 2>({T, ne}), random_tensor<bf, 2>({T, ne}),
                               random_tensor<bf, 2>({(nh + 2 * g) * hs, E}), fx::index_t{nh}, fx::index_t{g},
                               fx::index_t{hs}, fx::index_t{ne}};
  // the claimed cat runs as the user's kernel; the greedy claim as a fused region
  std::apply([](const auto&... a) {
    const auto prog = seed::parallel_residual_backward;
    check_device("parallel residual [fused]", fx::partition(prog, fx::policy::fused<seed::cat_executor>{}), prog, a...);
    check_device("parallel residual [greedy]", fx::partition(prog, fx::policy::greedy_claim<seed::cat_executor>{}), prog, a...);
  }, args);
}

TEST_CASE("cuda: vjp forward and backward plans", "[cuda]") {
  check_vjp("gelu", fx::vjp(gelu), std::tuple{random_tensor<bf, 2>({37, 515}, -12, 12)}, std::tuple{random_tensor<bf, 2>({37, 515})});
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
            std::tuple{random_tensor<bf, 3>({B, T, width}), cs(), cs(), fx::index_t{nh}, fx::index_t{g}, fx::index_t{hs},
                       fx::index_t{ne}},
            std::tuple{heads(nh), heads(g), heads(g)});
  check_vjp("qkv_rope expanded", fx::vjp<only_qkv>(qkv_rope<true>),
            std::tuple{random_tensor<bf, 3>({B, T, width}), cs(), cs(), fx::index_t{nh}, fx::index_t{g}, fx::index_t{hs},
                       fx::index_t{ne}},
            std::tuple{heads(nh), heads(nh), heads(nh)});
}
