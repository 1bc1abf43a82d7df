#pragma once
// fusex: fuse tensor programs into the fewest, fastest kernels at compile time.
// The umbrella header; each facility also has a header of its own.

#include "core/config.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/math.hpp"

#include "capture/op.hpp"
#include "capture/graph.hpp"
#include "capture/index.hpp"
#include "capture/tensor.hpp"
#include "capture/elementwise.hpp"
#include "capture/remap.hpp"
#include "capture/reduce.hpp"
#include "capture/matmul.hpp"
#include "capture/source.hpp"
#include "capture/dynamic.hpp"
#include "capture/trace.hpp"
#include "capture/print.hpp"

#include "runtime/view.hpp"
#include "runtime/bind.hpp"
#include "runtime/evaluate.hpp"

#include "exec/reference.hpp"

#include "plan/extents.hpp"
#include "plan/plan.hpp"
#include "plan/explain.hpp"
#include "plan/choice.hpp"
#include "plan/candidates.hpp"
#include "exec/host.hpp"

// The CUDA executor needs nvcc; include it in .cu translation units.
#if defined(__CUDACC__)
#include "exec/cuda.hpp"
#endif

#include "ops/gelu.hpp"
#include "ops/layer_norm.hpp"
#include "ops/rope.hpp"
#include "ops/swiglu.hpp"

#include "autodiff/vjp.hpp"
