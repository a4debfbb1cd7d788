// relu on the CPU: out = max(src, 0) over any strides, as torch.relu: a NaN
// stays NaN and -0.0 stays -0.0 (only values below zero become +0.0). An
// instance of the shared elementwise layer; out may be src itself.
#include "../relu_api.h"

#include "../../common/cpu/cpu_types.h"
#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct ReluCpu : oprt_descriptor {
  static constexpr const char* kName = "relu/cpu";
  ReluCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  ElementwisePlan<2> plan;  // operands: out, src
  int32_t dtype = 0;
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
  int32_t dtype = 0;
  const ElementwisePlan<2> plan = plan_same_dtype<2>({out, src}, {"out", "src"}, &dtype);
  auto* d = new ReluCpu;
  d->plan = plan;
  d->dtype = dtype;
  d->variant = plan.variant();
  return d;
}

void execute(const ReluCpu& d, void* /*workspace*/, void* out, const void* src, void* /*stream*/) {
  const int64_t numel = d.plan.layout.numel();
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    const T* inputs[1] = {static_cast<const T*>(src)};
    run_elementwise(d.plan, static_cast<T*>(out), inputs, Relu{});
  });
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(relu, cpu, oprt::cpu::ReluCpu, oprt::cpu::create, oprt::cpu::execute)
