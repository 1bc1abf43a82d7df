#pragma once
// fusex plans as PyTorch operators: binds at::Tensor arguments to a plan's
// parameters as strided views (no copies), allocates the plan's outputs with
// torch's allocator, and runs the plan on the tensors' device: the host
// executor on CPU tensors (torch's intra-op thread count), the CUDA executor
// on torch's current stream for CUDA tensors (when compiled by nvcc with
// FUSEX_TORCH_CUDA), with its workspace from torch's caching allocator.
//
//   constexpr auto g = fx::vjp(fx::trace([](fx::tensor<float, 3> x) { return fx::ops::gelu(x); }));
//   std::vector<at::Tensor> fwd = fusex_torch::run(fx::partition(g.forward), "fusex::gelu", x);
//
// Every failure is a c10::Error (RuntimeError in Python) that starts with
// the operator's name: a dtype, rank or device mismatch names the argument;
// fusex's own shape and aliasing errors follow the operator's name.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef FUSEX_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <fusex/fusex.hpp>

namespace fusex_torch {

namespace fx = fusex;

// The torch dtype that stores fusex element type T.
template <class T>
constexpr at::ScalarType scalar_type_of() {
  if constexpr (std::is_same_v<T, float>) return at::kFloat;
  else if constexpr (std::is_same_v<T, double>) return at::kDouble;
  else if constexpr (std::is_same_v<T, fx::bf16>) return at::kBFloat16;
  else if constexpr (std::is_same_v<T, fx::f16>) return at::kHalf;
  else if constexpr (std::is_same_v<T, std::int32_t>) return at::kInt;
  else if constexpr (std::is_same_v<T, std::int64_t>) return at::kLong;
  else if constexpr (std::is_same_v<T, bool>) return at::kBool;
  else static_assert(sizeof(T) == 0, "fusex_torch: no torch dtype stores this element type");
}
// fusex's 16-bit types and torch's have the same bits.
static_assert(sizeof(fx::bf16) == sizeof(at::BFloat16) && sizeof(fx::f16) == sizeof(at::Half));

// The error every check raises: "<op>: <message>".
template <class... M>
[[noreturn]] void fail(const char* op, const M&... m) {
  TORCH_CHECK(false, op, ": ", m...);
}

// A tensor as a fusex view of R dimensions, after checking its dtype, rank
// and device. Strides are torch's (in elements), so views of views pass
// through unchanged.
template <class T, int R>
fx::view<const T, R> as_view(const at::Tensor& t, const char* op, const std::string& arg) {
  if (!t.defined()) fail(op, arg, " is an undefined tensor");
  if (t.scalar_type() != scalar_type_of<T>())
    fail(op, arg, " has dtype ", t.scalar_type(), ", expected ", scalar_type_of<T>());
  if (t.dim() != R) fail(op, arg, " has ", t.dim(), " dimensions (shape ", t.sizes(), "), expected ", R);
  if (t.is_complex() || t.is_quantized() || t.is_sparse()) fail(op, arg, " must be a dense real tensor");
  fx::extents_array<R> ext{}, str{};
  for (int i = 0; i < R; ++i) {
    ext[i] = t.size(i);
    str[i] = t.stride(i);
  }
  return {static_cast<const T*>(t.const_data_ptr()), ext, str};
}
template <class T, int R>
fx::view<T, R> as_mutable_view(at::Tensor& t) {
  fx::extents_array<R> ext{}, str{};
  for (int i = 0; i < R; ++i) {
    ext[i] = t.size(i);
    str[i] = t.stride(i);
  }
  return {static_cast<T*>(t.mutable_data_ptr()), ext, str};
}

namespace detail {

template <class P, class A>
auto bind(const A& a, const char* op, int position) {
  const std::string arg = "argument " + std::to_string(position);
  if constexpr (std::is_same_v<P, fx::index>) {
    static_assert(std::is_integral_v<A>, "fusex_torch::run: an index parameter takes an integer");
    return static_cast<std::int64_t>(a);
  } else if constexpr (fx::detail::arg_traits<P>::kind == fx::arg_kind::scalar) {
    static_assert(std::is_arithmetic_v<A>, "fusex_torch::run: a scalar parameter takes a number");
    return static_cast<double>(a);
  } else {
    static_assert(std::is_same_v<A, at::Tensor>, "fusex_torch::run: a tensor parameter takes an at::Tensor");
    return as_view<typename P::value_type, P::rank>(a, op, arg);
  }
}

template <class A>
const at::Tensor* first_tensor(const A& a) {
  if constexpr (std::is_same_v<A, at::Tensor>) return &a;
  else return nullptr;
}

template <class X>
struct result_of;
template <class T, int R>
struct result_of<fx::tensor<T, R>> {
  using value_type = T;
  static constexpr int rank = R;
};

// (Plain function templates over index sequences rather than nested generic
// lambdas: nvcc's front end pairs the packs of the latter wrongly.)
template <class... Ps, std::size_t... I, class... A>
auto bind_all(fx::detail::type_list<Ps...>, std::index_sequence<I...>, const char* op, const A&... a) {
  return fx::inputs(bind<Ps>(a, op, static_cast<int>(I))...);
}

template <class P, class Env, class... X, std::size_t... I>
std::vector<at::Tensor> allocate(fx::detail::type_list<X...>, std::index_sequence<I...>, const Env& env,
                                 const at::TensorOptions& options) {
  auto one = [&](auto result, int i) {
    using R = result_of<decltype(result)>;
    std::vector<std::int64_t> ext(R::rank);
    for (int d = 0; d < R::rank; ++d) ext[d] = env.extent(P::graph.outputs[i], d);
    return at::empty(ext, options.dtype(scalar_type_of<typename R::value_type>()));
  };
  return {one(X{}, static_cast<int>(I))...};
}

template <class PL, class In, class... X, std::size_t... I>
void run_into(PL plan, const In& in, std::vector<at::Tensor>& outs, fx::detail::type_list<X...>,
              std::index_sequence<I...>, const at::Device& device, const at::TensorOptions& options,
              const char* op) {
  auto out = fx::outputs(as_mutable_view<typename result_of<X>::value_type, result_of<X>::rank>(outs[I])...);
  if (device.is_cpu()) {
    fx::run(plan, fx::host{at::get_num_threads()}, in, out);
  } else {
#ifdef FUSEX_TORCH_CUDA
    const c10::cuda::CUDAGuard guard(device);
    const std::size_t bytes = fx::workspace_bytes(plan, in);
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, options.dtype(at::kByte));
    fx::run(plan, fx::cuda_stream{at::cuda::getCurrentCUDAStream(), workspace.data_ptr(), bytes}, in, out);
#else
    (void)options;
    fail(op, "this build has no CUDA executor (build the extension with nvcc and FUSEX_TORCH_CUDA)");
#endif
  }
}

}  // namespace detail

// Runs `plan` on `args` (at::Tensor for tensor parameters, numbers for
// scalars and indexes, in the traced function's parameter order) and returns
// its results as new contiguous tensors on the arguments' device.
template <class PL, class... A>
std::vector<at::Tensor> run(PL plan, const char* op, const A&... args) {
  using P = typename PL::program_type;
  static_assert(P::sizes.params == sizeof...(A),
                "fusex_torch::run: give one argument per parameter of the traced function");

  // The device: that of the first tensor, shared by every other one.
  const at::Tensor* lead = nullptr;
  ((lead = lead ? lead : detail::first_tensor(args)), ...);
  TORCH_CHECK(lead != nullptr, op, ": needs at least one tensor argument");
  const at::Device device = lead->device();
  int position = 0;
  auto same_device = [&](const auto& a) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, at::Tensor>)
      if (a.defined() && a.device() != device)
        fail(op, "argument ", position, " is on ", a.device(), ", argument 0's tensors are on ", device);
    ++position;
  };
  (same_device(args), ...);
  if (!device.is_cpu() && !device.is_cuda()) fail(op, "tensors on ", device, " are not supported (CPU or CUDA)");

  const auto in = detail::bind_all(typename P::arg_types{}, std::index_sequence_for<A...>{}, op, args...);
  using results = fx::result_types<P>;
  try {
    const auto bound = fx::bind_args(P{}, in);
    const auto env = fx::check_inputs(P::graph, bound.data());
    const at::TensorOptions options = lead->options();
    std::vector<at::Tensor> outs = detail::allocate<P>(results{}, std::make_index_sequence<P::sizes.outputs>{}, env, options);
    detail::run_into(plan, in, outs, results{}, std::make_index_sequence<P::sizes.outputs>{}, device, options, op);
    return outs;
  } catch (const fx::error& e) {
    fail(op, e.what());
  }
}

// t viewed with R dimensions without a copy: leading dimensions of size one
// are added, or merged when their strides allow (as Tensor.view would).
inline at::Tensor with_rank(const at::Tensor& t, int rank, const char* op, const char* arg) {
  if (!t.defined()) fail(op, arg, " is an undefined tensor");
  if (t.dim() == rank) return t;
  if (t.dim() < rank) {
    at::Tensor v = t;
    while (v.dim() < rank) v = v.unsqueeze(0);
    return v;
  }
  std::int64_t rows = 1;
  for (int i = 0; i <= static_cast<int>(t.dim()) - rank; ++i) rows *= t.size(i);
  std::vector<std::int64_t> shape{rows};
  for (int i = static_cast<int>(t.dim()) - rank + 1; i < t.dim(); ++i) shape.push_back(t.size(i));
  try {
    return t.view(shape);
  } catch (const c10::Error&) {
    fail(op, arg, " of shape ", t.sizes(), " and strides ", t.strides(), " cannot be seen as ", rank,
         " dimensions without a copy (its leading dimensions do not merge); pass a contiguous tensor");
  }
}

}  // namespace fusex_torch
