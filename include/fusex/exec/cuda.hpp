#pragma once
// The CUDA executor: one __global__ per group, instantiated at compile time
// from the group's encoded program, launched on the caller's stream with no
// hidden synchronisation. Every CUDA and cuBLAS error is reported with the
// failing call and group.
//
//   fusex::run(plan, fusex::cuda_stream{stream}, fusex::inputs(x, dy), fusex::outputs(dx));
//
//   cuda/context.hpp           errors, device properties, cuBLAS contexts, fusex::cuda_stream
//   cuda/lanes.hpp             lanes per thread, runs aligned to their destination
//   cuda/pointwise.hpp         pointwise groups
//   cuda/reductions.hpp        reduction levels, states, the fixed-order group combine
//   cuda/row_reduction.hpp     row groups (norms, softmax)
//   cuda/column_reduction.hpp  column groups (tiles, partials, merge)
//   cuda/matmul.hpp            cuBLAS, strided copies
//   cuda/run.hpp               fusex::run, fusex::workspace_bytes

#include "cuda/run.hpp"
