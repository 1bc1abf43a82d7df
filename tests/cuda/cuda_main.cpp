// Catch2's main for the CUDA tests: without a CUDA device they report
// themselves skipped (exit code 77, CTest's SKIP_RETURN_CODE) instead of
// passing without having run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device here; the CUDA executor compiled but was not run\n");
    return 77;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    std::printf("device: %s, %d SMs, %zu KiB opt-in shared memory per block\n", prop.name, prop.multiProcessorCount,
                prop.sharedMemPerBlockOptin / 1024);
  return Catch::Session().run(argc, argv);
}
