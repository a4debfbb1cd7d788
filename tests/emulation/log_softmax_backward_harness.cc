// softmax_backward_harness.cc's cases through log_softmax_backward
// (ops/log_softmax_backward/nvidia, the same two-input layer with its own
// epilogue), against a float64 log_softmax_backward. What
// tests/test_nvidia_emulated.py builds it with and the variants that must
// all have run:
// emulate sources: common/softmax_plan.cc log_softmax_backward/nvidia/log_softmax_backward_nvidia.cu
// emulate column: 2
// emulate variants: empty rows_warp rows_block rows_held rows_split columns columns_split columns_vector columns_vector_split strided strided_split
#define OPRT_HARNESS_LOG_SOFTMAX_BACKWARD 1
#include "softmax_backward_harness.cc"
