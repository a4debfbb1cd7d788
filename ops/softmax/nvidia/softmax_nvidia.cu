// softmax on NVIDIA GPUs: the softmax family's layer
// (common/nvidia/softmax_family/, its variants listed in plan.cuh) with
// the epilogue exp(x - max) / sum.
#include "../softmax_api.h"

#include "../../common/nvidia/softmax_family/execute.cuh"

namespace oprt::nvidia {
namespace {

// out = exp(x - max) * (1 / sum): one MUFU.EX2 and two multiplies an
// element; kernels that computed exp(x - max) for the sum reuse it. A row
// holding NaN or +inf has a NaN sum and is NaN; a row of all -inf (max
// -inf) gives exp(NaN) = NaN, as torch.
struct SoftmaxEpilogue {
  struct Row {
    float m, r;  // max, 1 / sum
  };
  static constexpr bool kFromExp = true;
  __device__ static Row row(Stats st) { return {st.m, 1.0f / st.s}; }
  __device__ static float out(Row k, float x) { return exp_minus(x, k.m) * k.r; }
  __device__ static float out_exp(Row k, float e) { return e * k.r; }
};

struct SoftmaxNvidia : SoftmaxFamilyPlan {
  static constexpr const char* kName = "softmax/nvidia";
  SoftmaxNvidia() : SoftmaxFamilyPlan(descriptor_tag(kName)) {}
};

SoftmaxNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  return create_softmax_family<SoftmaxNvidia, SoftmaxEpilogue>(out, src, dim);
}

void execute(const SoftmaxNvidia& d, void* workspace, void* out, const void* src, void* stream) {
  execute_softmax_family<SoftmaxEpilogue>(d, workspace, out, src, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(softmax, nvidia, oprt::nvidia::SoftmaxNvidia, oprt::nvidia::create, oprt::nvidia::execute)
