// log_softmax_backward on NVIDIA GPUs: the softmax family's two-input layer
// (common/nvidia/softmax_family/row_sum.cuh, its variants listed there)
// with the epilogue g - exp(y) * sum(g).
#include "../log_softmax_backward_api.h"

#include "../../common/nvidia/softmax_family/row_sum.cuh"

namespace oprt::nvidia {
namespace {

constexpr const char* kNames[3] = {"out", "grad", "output"};

// expf, not the forward's MUFU.EX2 exp_minus: y is any float here (a
// log_softmax output is <= 0, but the op takes any input), and exp(y)
// multiplies the row's sum, so its error is not hidden by a normalization.
struct LogSoftmaxGradEpilogue {
  static constexpr bool kTermReadsB = false;
  __device__ static float term(float g, float /*y*/) { return g; }
  __device__ static float out(float g, float y, float s) { return g - expf(y) * s; }
};

struct LogSoftmaxBackwardNvidia : RowSumPlan {
  static constexpr const char* kName = "log_softmax_backward/nvidia";
  LogSoftmaxBackwardNvidia() : RowSumPlan(descriptor_tag(kName)) {}
};

LogSoftmaxBackwardNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                                 const oprt_tensor_view_t* output, int32_t dim) {
  return create_row_sum_family<LogSoftmaxBackwardNvidia>(out, grad, output, dim, kNames);
}

void execute(const LogSoftmaxBackwardNvidia& d, void* workspace, void* out, const void* grad,
             const void* output, void* stream) {
  execute_row_sum_family<LogSoftmaxGradEpilogue>(d, workspace, out, grad, output, stream, kNames);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(log_softmax_backward, nvidia, oprt::nvidia::LogSoftmaxBackwardNvidia, oprt::nvidia::create,
               oprt::nvidia::execute)
