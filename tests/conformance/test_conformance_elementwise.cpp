// The conformance suite on the reference and host executors: elementwise
// prims and conversions, every dtype, every input layout.
#include "host_runners.hpp"
#define FUSEX_CONFORMANCE_RUNNERS fxt::conf::reference, fxt::conf::host_fused
#define FUSEX_CONFORMANCE_ELEMENTWISE 1
#include "suite.hpp"
