// softmax_backward on NVIDIA GPUs: the softmax family's two-input layer
// (common/nvidia/softmax_family/row_sum.cuh, its variants listed there)
// with the epilogue y * (g - sum(g * y)).
#include "../softmax_backward_api.h"

#include "../../common/nvidia/softmax_family/row_sum.cuh"

namespace oprt::nvidia {
namespace {

constexpr const char* kNames[3] = {"out", "grad", "output"};

struct SoftmaxGradEpilogue {
  __device__ static float term(float g, float y) { return g * y; }
  __device__ static float out(float g, float y, float s) { return y * (g - s); }
};

struct SoftmaxBackwardNvidia : RowSumPlan {
  static constexpr const char* kName = "softmax_backward/nvidia";
  SoftmaxBackwardNvidia() : RowSumPlan(descriptor_tag(kName)) {}
};

SoftmaxBackwardNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                              const oprt_tensor_view_t* output, int32_t dim) {
  return create_row_sum_family<SoftmaxBackwardNvidia>(out, grad, output, dim, kNames);
}

void execute(const SoftmaxBackwardNvidia& d, void* workspace, void* out, const void* grad, const void* output,
             void* stream) {
  execute_row_sum_family<SoftmaxGradEpilogue>(d, workspace, out, grad, output, stream, kNames);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(softmax_backward, nvidia, oprt::nvidia::SoftmaxBackwardNvidia, oprt::nvidia::create,
               oprt::nvidia::execute)
