// The CUDA build of fusex_ops_bf16.cpp (nvcc; FUSEX_TORCH_CUDA adds the CUDA executor and the CUDA kernels).
#include "fusex_ops_bf16.cpp"
