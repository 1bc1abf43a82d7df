#pragma once
// Run-time errors. Every message names the failing op (or CUDA call) and the
// values involved, so a failure in a 100-node graph points at one node.

#include <stdexcept>
#include <string>

namespace fusex {

// Base of all fusex run-time errors.
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Extents, strides, alignment or aliasing that the graph cannot accept.
// Raised before any memory is read or written.
struct shape_error : error {
  using error::error;
};

// A binding problem: wrong number of arguments, null data for a non-empty view.
struct argument_error : error {
  using error::error;
};

// A failing CUDA runtime or cuBLAS call; what() names the call.
struct cuda_error : error {
  using error::error;
};

}  // namespace fusex
