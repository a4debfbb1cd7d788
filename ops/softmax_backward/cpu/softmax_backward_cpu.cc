// softmax_backward on the CPU: out = y * (g - sum(g * y)) along dim (g the
// gradient, y softmax's output), in float (double for float64); an instance
// of the softmax family's two-input rows (rows, columns, gather). out may
// be grad or output itself.
#include "../softmax_backward_api.h"

#include "../../common/cpu/softmax_family_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct SoftmaxBackwardCpu : oprt_descriptor {
  static constexpr const char* kName = "softmax_backward/cpu";
  SoftmaxBackwardCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  RowFamilyPlan<2> plan;
};

struct SoftmaxGrad {
  template <class A>
  static A term(A g, A y) { return g * y; }
  template <class A>
  static A value(A g, A y, A s) { return y * (g - s); }
};

SoftmaxBackwardCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                           const oprt_tensor_view_t* output, int32_t dim) {
  auto plan = plan_row_family<2>({out, grad, output}, {"out", "grad", "output"}, dim);
  auto* d = new SoftmaxBackwardCpu;
  d->plan = plan;
  d->variant = plan.variant();
  return d;
}

void execute(const SoftmaxBackwardCpu& d, void* /*workspace*/, void* out, const void* grad, const void* output,
             void* /*stream*/) {
  run_row_sum_family<SoftmaxGrad>(d.plan, out, grad, output);
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(softmax_backward, cpu, oprt::cpu::SoftmaxBackwardCpu, oprt::cpu::create, oprt::cpu::execute)
