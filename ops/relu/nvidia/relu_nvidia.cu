// relu on NVIDIA GPUs: out = max(src, 0) over any strides, NaN kept as torch
// keeps it; the kernels are the shared elementwise engine's.
#include "../../common/nvidia/elementwise_op.cuh"
#include "../relu_api.h"

namespace oprt::nvidia {
namespace {

struct ReluNvidia : SameDtypeElementwise<1> {
  static constexpr const char* kName = "relu/nvidia";
  ReluNvidia() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

template <class T>
struct ReluOp {
  __device__ __forceinline__ T operator()(T x) const {
    const float f = to_float(x);
    return f > 0.0f || f != f ? x : from_float<T>(0.0f);
  }
};

ReluNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src) {
  return create_same_dtype_elementwise<ReluNvidia, 1>(out, {src}, {"src"});
}

void execute(const ReluNvidia& d, void* /*workspace*/, void* out, const void* src, void* stream) {
  execute_same_dtype_elementwise<ReluOp, 1>(d, out, {src}, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(relu, nvidia, oprt::nvidia::ReluNvidia, oprt::nvidia::create, oprt::nvidia::execute)
