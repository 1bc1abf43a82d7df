// pythia_block.cpp compiled by nvcc: the same demo, with the training step
// also run and timed on the GPU when one is present.
#include "pythia_block.cpp"
