// Hand-derived backward of the composite ops against the prim-VJP backward
// of their decomposition and against central finite differences, in f64;
// the hard inputs the issue lists; and the kernel counts of each backward,
// asserted at compile time.

#include "../grad_check.hpp"

namespace {

namespace fx = fusex;
using fx::host_tensor;
using T = double;

template <int R>
host_tensor<T, R> rnd(const fx::extents_array<R>& e, double lo = -2, double hi = 2) {
  return fxt::random_tensor<T, R>(e, lo, hi);
}

constexpr fx::vjp_options prims{.hand_derived = false};

// Hand-derived against prim VJPs (both on the reference executor), then
// hand-derived against finite differences.
template <class P, class VH, class VP, class Args, class Cots>
void check_composite(P p, VH hand, VP prim, const Args& args, const Cots& cots, double h = 1e-6, double rtol = 1e-6) {
  static_assert(VH::composites_applied > 0, "the hand-derived formula must apply");
  static_assert(VP::composites_applied == 0);
  const auto gh = fxt::gradients(hand, fx::reference, args, cots);
  const auto gp = fxt::gradients(prim, fx::reference, args, cots);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((fxt::require_close(std::get<I>(gh), std::get<I>(gp), 1e-9, 1e-9 * std::max(1.0, fxt::max_abs(std::get<I>(gp))),
                         "hand vs prim gradient " + std::to_string(I))),
     ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(gh)>>{});
  fxt::check_gradients(p, hand, args, cots, h, rtol);
}

constexpr auto gelus = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 2> z) {
  return std::tuple{fx::ops::gelu(x), fx::ops::gelu_tanh(z)};
});

TEST_CASE("gelu: hand-derived backward, including |x| > 10", "[grad][composite]") {
  auto x = rnd<2>({3, 8}, -4, 4);
  auto z = rnd<2>({3, 8}, -4, 4);
  const double big[] = {-30, -12.5, -10.5, 10.5, 12.5, 30};
  for (int i = 0; i < 6; ++i) x.values()[i] = z.values()[i] = big[i];
  check_composite(gelus, fx::vjp(gelus), fx::vjp<prims>(gelus), std::tuple{x, z}, std::tuple{rnd<2>({3, 8}), rnd<2>({3, 8})});
}

constexpr auto swiglus = fx::trace([](fx::tensor<T, 2> a, fx::tensor<T, 2> b, fx::tensor<T, 2> c) {
  return std::tuple{fx::ops::swiglu(a, b), fx::ops::silu(c)};
});

TEST_CASE("silu and swiglu: hand-derived backward", "[grad][composite]") {
  check_composite(swiglus, fx::vjp(swiglus), fx::vjp<prims>(swiglus), std::tuple{rnd<2>({4, 6}), rnd<2>({4, 6}), rnd<2>({4, 6})},
                  std::tuple{rnd<2>({4, 6}), rnd<2>({4, 6})});
}

constexpr auto layer_norm = fx::trace([](fx::tensor<T, 3> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
// mean and rstd returned too: their cotangents flow into dx as well
constexpr auto layer_norm_stats = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  auto r = fx::ops::layer_norm(x, w, b, 1e-5);
  return std::tuple{r.y, r.mean, r.rstd};
});

TEST_CASE("layer_norm: hand-derived backward (dx, dweight, dbias)", "[grad][composite]") {
  auto x = rnd<3>({2, 3, 7});
  check_composite(layer_norm, fx::vjp(layer_norm), fx::vjp<prims>(layer_norm), std::tuple{x, rnd<1>({7}), rnd<1>({7})},
                  std::tuple{rnd<3>({2, 3, 7})});
  SECTION("with mean and rstd as outputs") {
    check_composite(layer_norm_stats, fx::vjp(layer_norm_stats), fx::vjp<prims>(layer_norm_stats),
                    std::tuple{rnd<2>({4, 9}), rnd<1>({9}), rnd<1>({9})},
                    std::tuple{rnd<2>({4, 9}), rnd<2>({4, 1}), rnd<2>({4, 1})});
  }
  SECTION("rows with a large mean and a small variance, and constant rows") {
    auto xh = rnd<3>({1, 4, 16});
    for (int j = 0; j < 16; ++j) {
      xh(0, 0, j) = 1e4 + 1e-2 * std::sin(j);
      xh(0, 1, j) = -1e4 + 1e-3 * std::cos(3.0 * j);
      xh(0, 2, j) = 0.75;  // constant row
      xh(0, 3, j) = -1e4;  // constant row, large magnitude
    }
    check_composite(layer_norm, fx::vjp(layer_norm), fx::vjp<prims>(layer_norm), std::tuple{xh, rnd<1>({16}), rnd<1>({16})},
                    std::tuple{rnd<3>({1, 4, 16})}, 1e-7, 1e-4);
  }
}

// Pythia's parallel residual: norm_1 and norm_2 of one x share its var_mean
// after capture merges them; each formula still applies.
constexpr auto two_norms = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w1, fx::tensor<T, 1> b1,
                                        fx::tensor<T, 1> w2, fx::tensor<T, 1> b2) {
  return std::tuple{fx::ops::layer_norm(x, w1, b1, 1e-5).y, fx::ops::layer_norm(x, w2, b2, 1e-5).y};
});
static_assert(decltype(fx::vjp(two_norms))::composites_applied == 2, "both LayerNorms apply their formula");
// A statistic the caller also returns needs its own cotangent: prims then.
constexpr auto norm_and_var = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  return std::tuple{fx::ops::layer_norm(x, w, b, 1e-5).y, fx::var_mean<-1>(x, 0.0, fx::keepdim).var};
});
static_assert(decltype(fx::vjp(norm_and_var))::composites_applied == 0, "the shared var is a graph output");

TEST_CASE("layer_norm: two norms sharing their statistics (parallel residual)", "[grad][composite]") {
  check_composite(two_norms, fx::vjp(two_norms), fx::vjp<prims>(two_norms),
                  std::tuple{rnd<2>({5, 8}), rnd<1>({8}), rnd<1>({8}), rnd<1>({8}), rnd<1>({8})},
                  std::tuple{rnd<2>({5, 8}), rnd<2>({5, 8})});
  fxt::check_gradients(norm_and_var, fx::vjp(norm_and_var), std::tuple{rnd<2>({4, 6}), rnd<1>({6}), rnd<1>({6})},
                       std::tuple{rnd<2>({4, 6}), rnd<2>({4, 1})}, 1e-6, 1e-6);
}

constexpr auto rms_norm = fx::trace([](fx::tensor<T, 3> x, fx::tensor<T, 1> w) { return fx::ops::rms_norm(x, w, 1e-6); });

TEST_CASE("rms_norm: hand-derived backward (dx, dweight)", "[grad][composite]") {
  check_composite(rms_norm, fx::vjp(rms_norm), fx::vjp<prims>(rms_norm), std::tuple{rnd<3>({2, 3, 8}), rnd<1>({8})},
                  std::tuple{rnd<3>({2, 3, 8})});
}

constexpr auto rope = fx::trace([](fx::tensor<T, 4> x, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::index n) {
  return fx::ops::apply_rope(x, cos, sin, n);
});
constexpr fx::vjp_options only_x{.wrt = fx::wrt({0})};
constexpr fx::vjp_options only_x_prims{.hand_derived = false, .wrt = fx::wrt({0})};

TEST_CASE("rope: hand-derived backward, rope_n_elem = head_size and < head_size", "[grad][composite]") {
  for (int n : {8, 4}) {  // head_size 8
    CAPTURE(n);
    check_composite(rope, fx::vjp<only_x>(rope), fx::vjp<only_x_prims>(rope),
                    std::tuple{rnd<4>({2, 2, 3, 8}), rnd<2>({3, n}), rnd<2>({3, n}), n}, std::tuple{rnd<4>({2, 2, 3, 8})});
  }
  // phi-2: head_size 80, rope_n_elem 32
  check_composite(rope, fx::vjp<only_x>(rope), fx::vjp<only_x_prims>(rope),
                  std::tuple{rnd<4>({1, 1, 2, 80}), rnd<2>({2, 32}), rnd<2>({2, 32}), 32}, std::tuple{rnd<4>({1, 1, 2, 80})});
}

template <bool Expand, fx::ops::qkv_layout L>
constexpr auto qkv = fx::trace([](fx::tensor<T, 3> qkv, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::index n_head,
                                  fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<Expand>(qkv, cos, sin, {n_head, groups, hs, n, L});
});

template <bool Expand, fx::ops::qkv_layout L = fx::ops::qkv_layout::blocks>
void check_qkv(int B, int Tn, int n_head, int groups, int hs, int n) {
  CAPTURE(Expand, L == fx::ops::qkv_layout::grouped, B, Tn, n_head, groups, hs, n);
  const int C = (n_head + 2 * groups) * hs, kv = Expand ? n_head : groups;
  constexpr auto& f = qkv<Expand, L>;
  check_composite(f, fx::vjp<only_x>(f), fx::vjp<only_x_prims>(f),
                  std::tuple{rnd<3>({B, Tn, C}), rnd<2>({Tn, n}), rnd<2>({Tn, n}), n_head, groups, hs, n},
                  std::tuple{rnd<4>({B, n_head, Tn, hs}), rnd<4>({B, kv, Tn, hs}), rnd<4>({B, kv, Tn, hs})});
}

TEST_CASE("qkv split + rope: hand-derived backward for MHA, GQA and MQA", "[grad][composite]") {
  check_qkv<false>(2, 3, 4, 4, 6, 6);  // multi-head, full rotary
  check_qkv<true>(1, 3, 4, 2, 8, 4);   // GQA, k and v expanded, partial rotary
  check_qkv<false>(1, 3, 4, 2, 8, 4);  // GQA, not expanded
  check_qkv<true>(2, 2, 4, 1, 6, 2);   // multi-query attention
  check_qkv<false>(2, 1, 3, 1, 4, 4);  // T = 1
  constexpr auto grouped = fx::ops::qkv_layout::grouped;  // litgpt 0.5.0 - 0.5.4
  check_qkv<false, grouped>(2, 3, 4, 4, 6, 6);
  check_qkv<true, grouped>(1, 3, 4, 2, 8, 4);
  check_qkv<false, grouped>(1, 3, 4, 2, 8, 4);
  check_qkv<true, grouped>(2, 2, 4, 1, 6, 2);
}

// ---- fusion of each backward, at compile time ------------------------------

using bf = fx::bf16;
constexpr auto gelu_bf16 = fx::trace([](fx::tensor<bf, 2> x) { return fx::ops::gelu(x); });
constexpr auto rope_bf16 = fx::trace([](fx::tensor<bf, 3> qkv, fx::tensor<bf, 2> cos, fx::tensor<bf, 2> sin,
                                        fx::index n_head, fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<false>(qkv, cos, sin, {n_head, groups, hs, n});
});
constexpr auto rope_expand_bf16 = fx::trace([](fx::tensor<bf, 3> qkv, fx::tensor<bf, 2> cos, fx::tensor<bf, 2> sin,
                                               fx::index n_head, fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<true>(qkv, cos, sin, {n_head, groups, hs, n});
});
constexpr auto ln_bf16 = fx::trace([](fx::tensor<bf, 3> x, fx::tensor<bf, 1> w, fx::tensor<bf, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
constexpr auto rms_bf16 = fx::trace([](fx::tensor<bf, 3> x, fx::tensor<bf, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });

constexpr auto gelu_grad = fx::vjp(gelu_bf16);
constexpr auto rope_grad = fx::vjp<only_x>(rope_bf16);
constexpr auto rope_expand_grad = fx::vjp<only_x>(rope_expand_bf16);
constexpr auto ln_grad = fx::vjp(ln_bf16);
constexpr auto rms_grad = fx::vjp(rms_bf16);

static_assert(fx::partition(gelu_grad.backward).kernels() == 1, "gelu backward: 1 kernel");
static_assert(gelu_grad.num_saved == 0, "gelu saves only its input");
static_assert(fx::partition(rope_grad.backward).kernels() == 1, "rope backward: 1 kernel writing dqkv");
static_assert(fx::partition(rope_grad.backward).bytes_at_minimum(), "each input read once, dqkv written once");
static_assert(fx::partition(rope_expand_grad.backward).kernels() == 2,
              "rope backward with expanded k and v: the sum over each group's heads, then dqkv");
static_assert(fx::partition(ln_grad.backward).kernels() <= 2, "layer_norm backward: at most 2 kernels");
static_assert(ln_grad.num_saved == 2, "layer_norm saves mean and rstd");
static_assert(fx::partition(rms_grad.backward).kernels() <= 2, "rms_norm backward: at most 2 kernels");
// The column kernel recomputes x-hat from x, dy and the saved statistics
// instead of reading f32 intermediates: each kernel reads x and dy once, so
// about 5/3 of the minimum (which counts one read) for 16-bit x, dy and dx.
static_assert(fx::partition(ln_grad.backward).bytes() < 1.7 * fx::partition(ln_grad.backward).min_bytes(),
              "layer_norm backward: no f32 intermediates between its kernels");
static_assert(fx::partition(rms_grad.backward).bytes() < 1.7 * fx::partition(rms_grad.backward).min_bytes(),
              "rms_norm backward: no f32 intermediates between its kernels");
static_assert(rms_grad.num_saved == 1, "rms_norm saves rstd");
static_assert(fx::partition(ln_grad.forward).kernels() == 1 && fx::partition(rms_grad.forward).kernels() == 1,
              "the forward still fuses into one row kernel while writing the saved statistics");

TEST_CASE("saved values are reported per op in bytes", "[grad][composite]") {
  const auto x = fxt::random_tensor<bf, 3>({2, 3, 16});
  const auto w = fxt::random_tensor<bf, 1>({16});
  const std::string s = fx::explain_saved(ln_grad, fx::inputs(x, w, w));
  CAPTURE(s);
  // mean and rstd: 2 * 3 rows of one f32 each
  CHECK(s.find("from layer_norm: f32[2, 3, 1] 24 bytes") != std::string::npos);
  CHECK(s.find("total 48 bytes in 2 values") != std::string::npos);
}

}  // namespace
