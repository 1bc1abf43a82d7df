#pragma once
// The executors of the host build: the reference, and the host executor
// under the fused and the unfused policy.
#include "cases.hpp"

namespace fxt::conf {
inline const reference_runner reference;
inline const host_runner<fusex::policy::fused<>> host_fused{"host (fused)"};
inline const host_runner<fusex::policy::unfused<>> host_unfused{"host (unfused)"};
}  // namespace fxt::conf
#define FUSEX_CONFORMANCE_RUNNERS fxt::conf::reference, fxt::conf::host_fused, fxt::conf::host_unfused
