// The conformance suite (tests/conformance) on the CUDA executor: the same
// cases, dtypes and input layouts as the host build, each input copied to
// the device exactly as it is laid out on the host (strides, stride 0,
// misaligned base), the fused plan run on a stream, and its outputs brought
// back and checked against the same double-precision formulas.
#include "../conformance/cases.hpp"
#include "device_support.hpp"

namespace fxt::conf {

// (Plain function templates over index sequences: nvcc's front end does not
// expand packs through nested generic lambdas.)
template <class T>
fx::view<const T, 2> on_device(fxt::cuda::arena& a, const input<T>& x) {
  T* p = static_cast<T*>(a.bytes(x.span * sizeof(T)));
  CUDA_REQUIRE(cudaMemcpy(p, x.storage.get(), x.span * sizeof(T), cudaMemcpyHostToDevice));
  return fx::view<const T, 2>(p + x.offset, x.logical.extents(), x.strides);
}
template <class Outs, std::size_t... O>
auto device_outputs(fxt::cuda::arena& a, Outs& outs, std::index_sequence<O...>) {
  (std::fill(std::get<O>(outs).values().begin(), std::get<O>(outs).values().end(),
             typename std::tuple_element_t<O, Outs>::value_type{}),
   ...);
  return std::make_tuple(a.copy(std::get<O>(outs))...);
}
template <class Plan, class Ins, class Douts, std::size_t... I, std::size_t... O>
void launch(Plan plan, cudaStream_t s, const Ins& ins, const Douts& douts, std::index_sequence<I...>, std::index_sequence<O...>) {
  fx::run(plan, fx::cuda_stream{s}, fx::inputs(std::get<I>(ins)...), fx::outputs(std::get<O>(douts)...));
}
template <class Outs, class Douts, std::size_t... O>
void bring_back(fxt::cuda::arena& a, Outs& outs, const Douts& douts, std::index_sequence<O...>) {
  (a.back(std::get<O>(outs), std::get<O>(douts)), ...);
}

struct cuda_runner {
  const char* name = "cuda (fused)";
  template <class Prog, class... T>
  auto operator()(Prog prog, const input<T>&... in) const {
    auto outs = as_tuple(fx::evaluate(prog, fx::reference, in.view()...));  // the output shapes
    using Outs = decltype(outs);
    constexpr auto nout = std::make_index_sequence<std::tuple_size_v<Outs>>{};
    fxt::cuda::stream_guard s;
    fxt::cuda::arena a;
    const auto ins = std::make_tuple(on_device(a, in)...);
    const auto douts = device_outputs(a, outs, nout);
    launch(fx::partition(Prog{}), s, ins, douts, std::index_sequence_for<T...>{}, nout);
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    bring_back(a, outs, douts, nout);
    return outs;
  }
};
inline const cuda_runner cuda_fused;

}  // namespace fxt::conf

#define FUSEX_CONFORMANCE_RUNNERS fxt::conf::cuda_fused
#define FUSEX_CONFORMANCE_ELEMENTWISE 1
#define FUSEX_CONFORMANCE_STRUCTURE 1
#include "../conformance/suite.hpp"
