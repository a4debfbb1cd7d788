// relu_backward on the CPU: out = x <= 0 ? 0 : grad over any strides
// (stride-0 dims carry broadcasting); a pick, so exact in every dtype; an
// instance of the shared elementwise layer. out may be grad or x itself.
#include "../relu_backward_api.h"

#include "../../common/cpu/elementwise_cpu.h"

namespace oprt::cpu {
namespace {

struct ReluBackwardCpu : SameDtypeElementwise<3> {  // operands: out, grad, x
  static constexpr const char* kName = "relu_backward/cpu";
  ReluBackwardCpu() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// A NaN x compares false and passes grad, as threshold_backward does; the
// vector forms keep grad under the mask "not (x <= 0)", unordered true.
struct ReluGrad {
  template <class V>
  V operator()(V grad, V x) const { return x <= V(0) ? V(0) : grad; }
#ifdef __AVX2__
  __m256 operator()(__m256 grad, __m256 x) const {
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ), grad);
  }
  __m256d operator()(__m256d grad, __m256d x) const {
    return _mm256_and_pd(_mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_NLE_UQ), grad);
  }
#endif
};

ReluBackwardCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                        const oprt_tensor_view_t* x) {
  return create_same_dtype_elementwise<ReluBackwardCpu, 3>({out, grad, x}, {"out", "grad", "x"});
}

void execute(const ReluBackwardCpu& d, void* /*workspace*/, void* out, const void* grad, const void* x,
             void* /*stream*/) {
  execute_same_dtype_elementwise<3>(d, out, {grad, x}, ReluGrad{});
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(relu_backward, cpu, oprt::cpu::ReluBackwardCpu, oprt::cpu::create, oprt::cpu::execute)
