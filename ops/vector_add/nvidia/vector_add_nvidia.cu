// vector_add on NVIDIA GPUs: out = a + b over any strides, broadcasting by
// stride-0 dims; the kernels are the shared elementwise engine's.
#include "../../common/nvidia/elementwise_op.cuh"
#include "../vector_add_api.h"

#include <type_traits>

namespace oprt::nvidia {
namespace {

struct VectorAddNvidia : SameDtypeElementwise<2> {
  static constexpr const char* kName = "vector_add/nvidia";
  VectorAddNvidia() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// 16-bit: the native add rounds once from the exact sum; float holds more
// than twice the 16-bit significand (+2 bits), so that equals torch's
// add-in-float-then-round.
template <class T>
struct AddOp {
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, float>) return x + y;
    else return __hadd(x, y);
  }
};

VectorAddNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  return create_same_dtype_elementwise<VectorAddNvidia, 2>(out, {a, b}, {"a", "b"});
}

void execute(const VectorAddNvidia& d, void* /*workspace*/, void* out, const void* a, const void* b, void* stream) {
  execute_same_dtype_elementwise<AddOp, 2>(d, out, {a, b}, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(vector_add, nvidia, oprt::nvidia::VectorAddNvidia, oprt::nvidia::create, oprt::nvidia::execute)
