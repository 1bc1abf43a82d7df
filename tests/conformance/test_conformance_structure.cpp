// The conformance suite on the reference and host executors: index remaps,
// reductions and matmul, every dtype, every input layout.
#include "host_runners.hpp"
#define FUSEX_CONFORMANCE_RUNNERS fxt::conf::reference, fxt::conf::host_fused, fxt::conf::host_unfused
#define FUSEX_CONFORMANCE_STRUCTURE 1
#include "suite.hpp"
