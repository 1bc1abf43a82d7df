// bench_rope.cpp compiled by nvcc: the same driver, with --device=cuda.
#include "bench_rope.cpp"
