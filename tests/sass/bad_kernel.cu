// A kernel the machine-code gate must reject: it indexes a register array
// at a run-time index, which puts the array in local memory (a stack frame,
// LDL/STL), and stores 16-bit values one at a time. sass.gate_rejects_bad_kernel
// checks that the gate fails on it, for those reasons.
#include <cuda_bf16.h>

__global__ void gate_bad_kernel(__nv_bfloat16* out, const float* in, const int* pick, int n) {
  float table[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) table[i] = in[i] * 2.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = __float2bfloat16_rn(table[pick[i] & 63]);
}
