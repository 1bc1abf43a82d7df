#pragma once
// What the CUDA executor needs besides kernels: error reporting that names
// the failing call, per-device properties read once, kernel attributes set
// once per kernel and device, and cuBLAS handles, each owned by one stream.

#if !defined(__CUDACC__)
#error "fusex/exec/cuda needs nvcc (compile this translation unit as CUDA)"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "../../core/error.hpp"
#include "../../plan/launch_cost.hpp"

namespace fusex {

namespace detail::cuda {

inline void check(cudaError_t e, const char* call, const char* where) {
  if (e != cudaSuccess)
    throw cuda_error(std::string("fusex: ") + call + " failed in " + where + ": " + cudaGetErrorName(e) + " (" +
                     cudaGetErrorString(e) + ")");
}
inline void check(cublasStatus_t s, const char* call, const char* where) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw cuda_error(std::string("fusex: ") + call + " failed in " + where + ": cuBLAS status " +
                     std::to_string(static_cast<int>(s)));
}
inline void check(cudaError_t e, const char* call, const std::string& where) { check(e, call, where.c_str()); }
inline void check(cublasStatus_t s, const char* call, const std::string& where) { check(s, call, where.c_str()); }
#define FUSEX_CUDA_CHECK(call, where) ::fusex::detail::cuda::check((call), #call, where)

inline constexpr int max_devices = 64;

struct device_info {
  int sms = 0;
  int smem_optin = 0;  // bytes of dynamic shared memory a block may opt into
};

// Properties of the current device, queried once per device.
inline const device_info& current_device() {
  static device_info info[max_devices];
  static std::once_flag once[max_devices];
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), "a device query");
  if (dev < 0 || dev >= max_devices) throw cuda_error("fusex: device ordinal " + std::to_string(dev) + " is out of range");
  std::call_once(once[dev], [&] {
    FUSEX_CUDA_CHECK(cudaDeviceGetAttribute(&info[dev].sms, cudaDevAttrMultiProcessorCount, dev), "a device query");
    FUSEX_CUDA_CHECK(cudaDeviceGetAttribute(&info[dev].smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
                     "a device query");
  });
  return info[dev];
}

// Lets `kernel` use the device's whole opt-in shared memory, once per kernel
// and device (cudaFuncSetAttribute is not safe to race with launches).
template <class Kernel>
void allow_large_shared_memory(Kernel kernel, const char* where) {
  static std::once_flag once[max_devices];
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), where);
  const device_info& d = current_device();
  std::call_once(once[dev], [&] {
    FUSEX_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem_optin), where);
  });
}

inline bool is_capturing(cudaStream_t s, const char* where) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  FUSEX_CUDA_CHECK(cudaStreamIsCapturing(s, &status), where);
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace detail::cuda

// The cuBLAS state of one stream: a handle bound to it and the handle's own
// workspace, so that GEMMs on different streams share nothing. Create it
// outside CUDA-graph capture (creating a handle allocates) and pass it in
// fusex::cuda_stream, or let fusex keep one per (device, stream) for you.
class cuda_context {
 public:
  static constexpr std::size_t default_cublas_workspace = std::size_t{32} << 20;

  explicit cuda_context(cudaStream_t stream, std::size_t cublas_workspace = default_cublas_workspace)
      : stream_(stream), bytes_(cublas_workspace) {
    FUSEX_CUDA_CHECK(cudaGetDevice(&device_), "fusex::cuda_context");
    FUSEX_CUDA_CHECK(cublasCreate(&handle_), "fusex::cuda_context");
    try {
      if (bytes_ > 0) FUSEX_CUDA_CHECK(cudaMalloc(&workspace_, bytes_), "fusex::cuda_context");
      FUSEX_CUDA_CHECK(cublasSetWorkspace(handle_, workspace_, bytes_), "fusex::cuda_context");
      FUSEX_CUDA_CHECK(cublasSetStream(handle_, stream_), "fusex::cuda_context");
    } catch (...) {
      release();
      throw;
    }
  }
  ~cuda_context() { release(); }
  cuda_context(const cuda_context&) = delete;
  cuda_context& operator=(const cuda_context&) = delete;

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  // The handle, locked for one call sequence: cuBLAS handles are not safe
  // to use from two host threads at once.
  std::pair<cublasHandle_t, std::unique_lock<std::mutex>> cublas() {
    return {handle_, std::unique_lock<std::mutex>(mutex_)};
  }

 private:
  void release() noexcept {
    if (handle_) cublasDestroy(handle_);
    if (workspace_) cudaFree(workspace_);
    handle_ = nullptr;
    workspace_ = nullptr;
  }
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  std::size_t bytes_ = 0;
  void* workspace_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  std::mutex mutex_;
};

// Run on a CUDA stream. A workspace, if given, holds everything a run needs
// besides its outputs (at least fusex::workspace_bytes(plan, inputs) bytes);
// otherwise intermediates come from cudaMallocAsync on the stream. Under
// CUDA-graph capture a run allocates nothing, so a plan with intermediates
// needs the workspace there, and a plan with matmuls needs a context (or a
// run on the same stream before the capture).
struct cuda_stream {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_size = 0;
  cuda_context* context = nullptr;
  // what a kernel launch costs (launch_cost.hpp)
  static constexpr launch_cost launch = launch_costs::cuda;
};

namespace detail::cuda {

// fusex's own contexts, one per (device, stream), made on first use and kept
// for the life of the process (destroying cuBLAS handles at exit races with
// the runtime's own teardown).
inline cuda_context& context_for(cudaStream_t stream, const char* where) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, cuda_context*> contexts;
  int dev = 0;
  FUSEX_CUDA_CHECK(cudaGetDevice(&dev), where);
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts.find({dev, stream});
  if (it != contexts.end()) return *it->second;
  if (is_capturing(stream, where))
    throw argument_error(std::string("fusex: ") + where +
                         " needs a cuBLAS handle, and none may be created during CUDA-graph capture; pass a "
                         "fusex::cuda_context in fusex::cuda_stream, or run once on this stream before capturing");
  auto* c = new cuda_context(stream);
  contexts.emplace(std::pair{dev, stream}, c);
  return *c;
}

}  // namespace detail::cuda
}  // namespace fusex
