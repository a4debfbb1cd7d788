// relu_backward on NVIDIA GPUs: out = x <= 0 ? 0 : grad over any strides,
// broadcasting by stride-0 dims; the kernels are the shared elementwise
// engine's.
#include "../../common/nvidia/elementwise_op.cuh"
#include "../relu_backward_api.h"

namespace oprt::nvidia {
namespace {

struct ReluBackwardNvidia : SameDtypeElementwise<2> {
  static constexpr const char* kName = "relu_backward/nvidia";
  ReluBackwardNvidia() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// Compared in float (exact for every dtype); a NaN x compares false and
// passes grad, as threshold_backward does.
template <class T>
struct ReluBackwardOp {
  __device__ __forceinline__ T operator()(T grad, T x) const {
    return static_cast<float>(x) <= 0.0f ? T(0.0f) : grad;
  }
};

ReluBackwardNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                           const oprt_tensor_view_t* x) {
  return create_same_dtype_elementwise<ReluBackwardNvidia, 2>(out, {grad, x}, {"grad", "x"});
}

void execute(const ReluBackwardNvidia& d, void* /*workspace*/, void* out, const void* grad, const void* x,
             void* stream) {
  execute_same_dtype_elementwise<ReluBackwardOp, 2>(d, out, {grad, x}, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(relu_backward, nvidia, oprt::nvidia::ReluBackwardNvidia, oprt::nvidia::create,
               oprt::nvidia::execute)
