// A user's dGeLU translation unit: the seed's GeLU backward traced,
// planned and run on a CUDA stream. bench/cuda_compile_time.sh measures how
// long nvcc takes on it, and how much memory.
#include <fusex/fusex.hpp>

namespace fx = fusex;

constexpr auto dgelu = fx::trace([](fx::tensor<fx::bf16, 2> x, fx::tensor<fx::bf16, 2> dy) {
  return fx::ops::gelu_backward(x, dy);
});
static_assert(fx::partition(dgelu).kernels() == 1);

void dgelu_on(cudaStream_t s, fx::view<const fx::bf16, 2> x, fx::view<const fx::bf16, 2> dy, fx::view<fx::bf16, 2> dx) {
  fx::run(fx::partition(dgelu), fx::cuda_stream{s}, fx::inputs(x, dy), fx::outputs(dx));
}
