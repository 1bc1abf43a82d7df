// The bfloat16 plans of the fusex operators.
#include "fusex_ops_impl.hpp"

template struct fusex_torch::ops::op_set<fusex::bf16>;
