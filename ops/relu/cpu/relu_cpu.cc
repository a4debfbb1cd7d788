// relu on the CPU: out = max(src, 0) over any strides, as torch.relu: a NaN
// stays NaN and -0.0 stays -0.0 (only values below zero become +0.0). An
// instance of the shared elementwise layer; out may be src itself.
#include "../relu_api.h"

#include "../../common/cpu/elementwise_cpu.h"

namespace oprt::cpu {
namespace {

struct ReluCpu : SameDtypeElementwise<2> {  // operands: out, src
  static constexpr const char* kName = "relu/cpu";
  ReluCpu() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// MAXPS returns its second operand when the two compare equal (-0.0 vs 0.0)
// or either is NaN, so max(0, x) keeps x in exactly the cases x < 0 is false.
struct Relu {
  template <class A>
  A operator()(A x) const { return x < A(0) ? A(0) : x; }
#ifdef __AVX2__
  __m256 operator()(__m256 x) const { return _mm256_max_ps(_mm256_setzero_ps(), x); }
  __m256d operator()(__m256d x) const { return _mm256_max_pd(_mm256_setzero_pd(), x); }
#endif
};

ReluCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src) {
  return create_same_dtype_elementwise<ReluCpu, 2>({out, src}, {"out", "src"});
}

void execute(const ReluCpu& d, void* /*workspace*/, void* out, const void* src, void* /*stream*/) {
  execute_same_dtype_elementwise<2>(d, out, {src}, Relu{});
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(relu, cpu, oprt::cpu::ReluCpu, oprt::cpu::create, oprt::cpu::execute)
