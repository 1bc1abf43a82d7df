#pragma once
// fusex::run on a CUDA stream and fusex::workspace_bytes: the shared run
// skeleton (bind, check, place, groups) with the CUDA launchers, stream-
// ordered scratch (cudaMallocAsync, or slices of the caller's workspace),
// and no hidden synchronisation.

#include <vector>

#include "../runner.hpp"
#include "column_reduction.hpp"
#include "matmul.hpp"
#include "pointwise.hpp"
#include "row_reduction.hpp"

namespace fusex {

namespace detail::cuda {

template <class Claimant, class = void>
struct has_run_cuda : std::false_type {};
template <class Claimant>
struct has_run_cuda<Claimant, std::void_t<decltype(Claimant::run_cuda(std::declval<const claimed_call&>(),
                                                                      std::declval<cudaStream_t>()))>> : std::true_type {};

// Scratch of one run: slices of the caller's workspace, or stream-ordered
// allocations; in a dry run (workspace_bytes) only counted.
class scratch {
 public:
  scratch(const cuda_stream& s, bool dry) : s_(s), dry_(dry) {}
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() {
    for (void* p : owned_) cudaFreeAsync(p, s_.stream);  // only on an exception path; release() checks
  }
  void* operator()(std::size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    if (bytes == 0) bytes = 256;
    void* p = nullptr;
    if (dry_) {  // an address that is never dereferenced
      p = reinterpret_cast<void*>(std::uintptr_t{256} + used_);
      used_ += bytes;
      return p;
    }
    if (s_.workspace) {
      if (used_ + bytes > s_.workspace_size)
        throw argument_error("fusex::cuda_stream: the workspace of " + std::to_string(s_.workspace_size) +
                             " bytes is too small; the run needs at least " + std::to_string(used_ + bytes) +
                             " (fusex::workspace_bytes)");
      p = static_cast<unsigned char*>(s_.workspace) + used_;
      used_ += bytes;
      return p;
    }
    if (owned_.empty() && is_capturing(s_.stream, "fusex::run"))
      throw argument_error("fusex::run: this plan needs scratch memory, and fusex allocates nothing during CUDA-graph "
                           "capture; pass a workspace of fusex::workspace_bytes(plan, inputs) bytes in fusex::cuda_stream");
    FUSEX_CUDA_CHECK(cudaMallocAsync(&p, bytes, s_.stream), "an intermediate's allocation");
    owned_.push_back(p);
    used_ += bytes;
    return p;
  }
  // Frees the allocations, ordered after the kernels that use them.
  void release() {
    std::vector<void*> owned;
    owned.swap(owned_);
    for (void* p : owned) FUSEX_CUDA_CHECK(cudaFreeAsync(p, s_.stream), "fusex::run (freeing intermediates)");
  }
  std::size_t used() const { return used_; }

 private:
  cuda_stream s_;
  bool dry_;
  std::size_t used_ = 0;
  std::vector<void*> owned_;
};

// The CUDA launchers for the shared run skeleton.
struct cuda_runner {
  cuda_stream s;
  bool dry = false;
  scratch mem;

  cuda_runner(const cuda_stream& st, bool dry_run) : s(st), dry(dry_run), mem(st, dry_run) {}

  void* allocate(std::size_t bytes) { return mem(bytes); }
  template <group_kind K, class C>
  void launch(const group_args<C>& ga, const exec::group_label& where) {
    if constexpr (K == group_kind::pointwise) {
      if (!dry) launch_pointwise(ga, s.stream, where);
    } else if constexpr (K == group_kind::row_reduction) {
      launch_row_reduction(ga, s.stream, where, mem, dry);
    } else if constexpr (K == group_kind::column_reduction) {
      launch_column_reduction(ga, s.stream, where, mem, dry);
    } else {
      launch_matmul(ga, s.stream, s.context, where, mem, dry);
    }
  }
  template <class Claimant, class C>
  void claimed(const claimed_call& call, const group_args<C>& ga, const exec::group_label& where) {
    static_assert(has_run_cuda<Claimant>::value,
                  "fusex::cuda_stream: a claimed op's executor has no run_cuda(const fusex::claimed_call&, cudaStream_t)");
    if (dry) return;
    Claimant::run_cuda(call, s.stream);
    FUSEX_CUDA_CHECK(cudaGetLastError(), where);
    // a claimed node returned more than once is copied to its other slots
    using Q = prog<C>;
    constexpr dtype D = Q::dt(Q::write_local(0));
    for (int w = 1; w < Q::nwrites(); ++w) {
      copy_shape sh{};
      sh.rank = call.out.rank;
      for (int i = 0; i < sh.rank; ++i) {
        sh.ext[i] = call.out.ext[i];
        sh.src_str[i] = call.out.str[i];
        sh.dst_str[i] = ga.out_str[w][i];
      }
      launch_copy<D, D>(call.out.data, ga.out[w], sh, s.stream, where);
    }
  }
};

inline void check_context(const cuda_stream& s) {
  if (!s.context) return;
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), "fusex::run");
  if (s.context->device() != dev)
    throw argument_error("fusex::cuda_stream: the cuda_context belongs to device " + std::to_string(s.context->device()) +
                         ", the current device is " + std::to_string(dev));
  if (s.context->stream() != s.stream)
    throw argument_error("fusex::cuda_stream: the cuda_context belongs to another stream (a cuBLAS handle and its "
                         "workspace serve one stream)");
}

}  // namespace detail::cuda

// Runs plan `pl` on a CUDA stream: inputs and outputs are device memory.
// Asynchronous with respect to the host, like a kernel launch.
template <class P, class Policy, class... A, class... O>
void run(plan<P, Policy>, cuda_stream s, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  detail::cuda::check_context(s);
  detail::cuda::cuda_runner ex(s, false);
  detail::exec::run_plan<plan<P, Policy>>(ex, in, out);
  ex.mem.release();
}

template <program_like P, class... A, class... O>
void run(P p, cuda_stream s, const inputs_t<A...>& in, const outputs_t<O...>& out) {
  run(partition(p), s, in, out);
}

// Bytes of workspace a CUDA run of `pl` needs with these inputs and
// contiguous outputs: its intermediates, the partial states of its column
// reductions, and matmul operands that cuBLAS cannot read in place. A
// fusex::cuda_stream with at least this much workspace makes fx::run
// allocate nothing (as CUDA-graph capture requires).
template <class P, class Policy, class... A>
std::size_t workspace_bytes(plan<P, Policy>, const inputs_t<A...>& in) {
  using PL = plan<P, Policy>;
  const auto args = bind_args(P{}, in);
  const auto env = check_inputs(P::graph, args.data());
  std::array<bound_arg, P::sizes.outputs> outs{};
  for (int o = 0; o < P::sizes.outputs; ++o) {
    const int n = P::graph.outputs[o];
    bound_arg& b = outs[o];
    b.kind = arg_kind::tensor;
    b.dt = P::graph.nodes[n].dt;
    b.rank = P::graph.nodes[n].rank;
    index_t count = 1;
    for (int i = b.rank - 1; i >= 0; --i) {
      b.ext[i] = env.extent(n, i);
      b.str[i] = count;
      count *= b.ext[i];
    }
  }
  detail::cuda::cuda_runner ex(cuda_stream{}, true);
  detail::exec::run_groups<PL>(ex, args, outs, env);
  return ex.mem.used();
}

template <program_like P, class... A>
std::size_t workspace_bytes(P p, const inputs_t<A...>& in) {
  return workspace_bytes(partition(p), in);
}

}  // namespace fusex
