// mul on NVIDIA GPUs: out = a * b over any strides, broadcasting by stride-0
// dims; the kernels are the shared elementwise engine's.
#include "../../common/nvidia/elementwise_op.cuh"
#include "../mul_api.h"

#include <type_traits>

namespace oprt::nvidia {
namespace {

struct MulNvidia : SameDtypeElementwise<2> {
  static constexpr const char* kName = "mul/nvidia";
  MulNvidia() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// 16-bit: the product of two 16-bit significands is exact in float, so the
// native multiply (one rounding of the exact product) equals torch's
// multiply-in-float-then-round.
template <class T>
struct MulOp {
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, float>) return x * y;
    else return __hmul(x, y);
  }
};

MulNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  return create_same_dtype_elementwise<MulNvidia, 2>(out, {a, b}, {"a", "b"});
}

void execute(const MulNvidia& d, void* /*workspace*/, void* out, const void* a, const void* b, void* stream) {
  execute_same_dtype_elementwise<MulOp, 2>(d, out, {a, b}, stream);
}

}  // namespace
}  // namespace oprt::nvidia

OPRT_DEFINE_OP(mul, nvidia, oprt::nvidia::MulNvidia, oprt::nvidia::create, oprt::nvidia::execute)
