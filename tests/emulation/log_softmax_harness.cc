// softmax_harness.cc's cases through log_softmax (ops/log_softmax/nvidia,
// the softmax family's layer with its own epilogue), against a float64
// log_softmax. What tests/test_nvidia_emulated.py builds it with and the
// variants that must all have run (softmax's):
// emulate sources: common/softmax_plan.cc log_softmax/nvidia/log_softmax_nvidia.cu
// emulate column: 2
// emulate numbered: cluster shared
// emulate variants: empty rows_warp rows_warp_dense rows_block rows_block_dense rows_stream rows_cluster
// emulate variants: rows_shared rows_twice rows_resident rows_resident_copies rows_split rows_split2
// emulate variants: columns columns_split columns_cluster strided
#define OPRT_HARNESS_LOG_SOFTMAX 1
#include "softmax_harness.cc"
