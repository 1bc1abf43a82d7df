// The float32 plans of the fusex operators.
#include "fusex_ops_impl.hpp"

template struct fusex_torch::ops::op_set<float>;
