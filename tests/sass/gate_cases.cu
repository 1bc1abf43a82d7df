// The kernels of the machine-code gate, one case per compilation
// (FUSEX_GATE_CASE): each instantiates the CUDA kernels of one fused plan
// through the executor's own dispatch, for tools/sass_gate.py to read.
#include <fusex/fusex.hpp>

namespace fx = fusex;

namespace gate {

using T = fx::bf16;

template <class PL>
void instantiate(const std::array<fx::bound_arg, PL::program_type::sizes.params>& args,
                 const std::array<fx::bound_arg, PL::program_type::sizes.outputs>& outs,
                 const fx::shape_env<PL::program_type::sizes>& env) {
  fx::detail::cuda::cuda_runner ex(fx::cuda_stream{}, false);
  fx::detail::exec::run_groups<PL>(ex, args, outs, env);
}

template <class Prog>
using fused = decltype(fx::partition(Prog{}));

inline constexpr fx::vjp_options all_args{};
inline constexpr fx::vjp_options only_first{.wrt = fx::wrt({0})};

constexpr auto gelu = fx::trace([](fx::tensor<T, 2> x) { return fx::ops::gelu(x); });
constexpr auto dgelu = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 2> dy) { return fx::ops::gelu_backward(x, dy); });
constexpr auto layer_norm = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w, fx::tensor<T, 1> b) {
  return fx::ops::layer_norm(x, w, b, 1e-5).y;
});
constexpr auto rms_norm = fx::trace([](fx::tensor<T, 2> x, fx::tensor<T, 1> w) { return fx::ops::rms_norm(x, w, 1e-5); });
template <bool Expand>
constexpr auto qkv_rope = fx::trace([](fx::tensor<T, 3> qkv, fx::tensor<T, 2> cos, fx::tensor<T, 2> sin, fx::index n_head,
                                       fx::index groups, fx::index hs, fx::index n) {
  return fx::ops::qkv_split_rope<Expand>(qkv, cos, sin, {n_head, groups, hs, n});
});
constexpr auto softmax = fx::trace([](fx::tensor<T, 2> x) {
  auto xf = fx::convert<float>(x);
  auto e = fx::exp(xf - fx::amax<-1>(xf, fx::keepdim));
  return fx::convert<T>(e / fx::sum<-1>(e, fx::keepdim));
});

template <fx::vjp_options O, class Prog>
using grad = decltype(fx::vjp<O>(Prog{}));

}  // namespace gate

#define FUSEX_GATE(plan_type) \
  template void gate::instantiate<plan_type>(const std::array<fx::bound_arg, plan_type::program_type::sizes.params>&, \
                                       const std::array<fx::bound_arg, plan_type::program_type::sizes.outputs>&, \
                                       const fx::shape_env<plan_type::program_type::sizes>&);

#if FUSEX_GATE_CASE == 1  // dgelu
FUSEX_GATE(gate::fused<decltype(gate::dgelu)>)
#elif FUSEX_GATE_CASE == 2  // gelu forward
FUSEX_GATE(gate::fused<decltype(gate::gelu)>)
#elif FUSEX_GATE_CASE == 3  // layer_norm forward (y, mean, rstd)
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::all_args, decltype(gate::layer_norm)>::forward)))
#elif FUSEX_GATE_CASE == 4  // layer_norm backward (dx; dweight, dbias)
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::all_args, decltype(gate::layer_norm)>::backward)))
#elif FUSEX_GATE_CASE == 5  // rms_norm forward (y, rstd)
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::all_args, decltype(gate::rms_norm)>::forward)))
#elif FUSEX_GATE_CASE == 6  // rms_norm backward (dx; dweight)
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::all_args, decltype(gate::rms_norm)>::backward)))
#elif FUSEX_GATE_CASE == 7  // qkv split + rope forward, k and v expanded to n_head heads
FUSEX_GATE(gate::fused<decltype(gate::qkv_rope<true>)>)
#elif FUSEX_GATE_CASE == 8  // qkv split + rope forward, k and v per query group
FUSEX_GATE(gate::fused<decltype(gate::qkv_rope<false>)>)
#elif FUSEX_GATE_CASE == 9  // its backward, expanded (the head sum, then dqkv)
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::only_first, decltype(gate::qkv_rope<true>)>::backward)))
#elif FUSEX_GATE_CASE == 10  // its backward, per query group
FUSEX_GATE(decltype(fx::partition(gate::grad<gate::only_first, decltype(gate::qkv_rope<false>)>::backward)))
#elif FUSEX_GATE_CASE == 11  // softmax over rows
FUSEX_GATE(gate::fused<decltype(gate::softmax)>)
#else
#error "FUSEX_GATE_CASE must name a case of tests/sass/cases.json"
#endif
