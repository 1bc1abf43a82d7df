#pragma once
// The executors of the host build: the reference, and the host executor
// under the fused and the unfused policy. The elementwise cases run the
// fused policy only: unfused, each of their prims is a one-op pointwise
// group, the same code per element; remaps and reductions alone in a group
// take paths of their own, so the structure cases run both.
#include "cases.hpp"

namespace fxt::conf {
inline const reference_runner reference;
inline const host_runner<fusex::policy::fused<>> host_fused{"host (fused)"};
inline const host_runner<fusex::policy::unfused<>> host_unfused{"host (unfused)"};
}  // namespace fxt::conf
