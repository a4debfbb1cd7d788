// log_softmax on NVIDIA GPUs: the softmax family's layer
// (common/nvidia/softmax_family/, its variants listed in plan.cuh) with
// the epilogue x - (max + log(sum)).
#include "../log_softmax_api.h"

#include "../../common/nvidia/softmax_family/execute.cuh"

namespace oprt::nvidia {
namespace {

// out = x - shift, shift = max + log(sum) once per row (as torch's CUDA
// kernel): one subtraction an element, no exp. A row holding NaN or +inf
// has a NaN sum and is NaN; a row of all -inf has shift -inf and gives
// -inf - -inf = NaN; a -inf element of any other row gives -inf, as
// torch.log_softmax.
struct LogSoftmaxEpilogue {
  struct Row {
    float shift;
  };
  static constexpr bool kFromExp = false;
  __device__ static Row row(Stats st) { return {st.m + logf(st.s)}; }
  __device__ static float out(Row k, float x) { return x - k.shift; }
};

struct LogSoftmaxNvidia : SoftmaxFamilyPlan {
  static constexpr const char* kName = "log_softmax/nvidia";
  LogSoftmaxNvidia() : SoftmaxFamilyPlan(descriptor_tag(kName)) {}
};

LogSoftmaxNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  return create_softmax_family<LogSoftmaxNvidia, LogSoftmaxEpilogue>(out, src, dim);
}

void execute(const LogSoftmaxNvidia& d, void* workspace, void* out, const void* src, void* stream) {
  execute_softmax_family<LogSoftmaxEpilogue>(d, workspace, out, src, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(log_softmax, nvidia, oprt::nvidia::LogSoftmaxNvidia, oprt::nvidia::create, oprt::nvidia::execute)
