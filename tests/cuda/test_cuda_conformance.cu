// The conformance suite (tests/conformance) on the CUDA executor: the same
// cases, dtypes and input layouts as the host build, each input copied to
// the device exactly as it is laid out on the host (strides, stride 0,
// misaligned base), the fused plan run on a stream, and its outputs brought
// back and checked against the same double-precision formulas.
#include "../conformance/cases.hpp"
#include "device_support.hpp"

namespace fxt::conf {

struct cuda_runner {
  const char* name = "cuda (fused)";
  template <class Prog, class... T>
  auto operator()(Prog prog, const input<T>&... in) const {
    auto outs = as_tuple(fx::evaluate(prog, fx::reference, in.view()...));  // the output shapes
    fxt::cuda::stream_guard s;
    fxt::cuda::arena a;
    auto on_device = [&](const auto& x) {
      using V = typename std::decay_t<decltype(x.logical)>::value_type;
      V* p = static_cast<V*>(a.bytes(x.span * sizeof(V)));
      CUDA_REQUIRE(cudaMemcpy(p, x.storage.get(), x.span * sizeof(V), cudaMemcpyHostToDevice));
      return fx::view<const V, 2>(p + x.offset, x.logical.extents(), x.strides);
    };
    std::apply(
        [&](auto&... h) {
          (std::fill(h.values().begin(), h.values().end(), typename std::decay_t<decltype(h)>::value_type{}), ...);
          auto d = std::make_tuple(a.copy(h)...);
          std::apply([&](auto&... dv) { fx::run(fx::partition(prog), fx::cuda_stream{s}, fx::inputs(on_device(in)...), fx::outputs(dv...)); }, d);
          CUDA_REQUIRE(cudaStreamSynchronize(s));
          std::apply([&](auto&... dv) { (a.back(h, dv), ...); }, d);
        },
        outs);
    return outs;
  }
};
inline const cuda_runner cuda_fused;

}  // namespace fxt::conf

#define FUSEX_CONFORMANCE_RUNNERS fxt::conf::cuda_fused
#define FUSEX_CONFORMANCE_ELEMENTWISE 1
#define FUSEX_CONFORMANCE_STRUCTURE 1
#include "../conformance/suite.hpp"
