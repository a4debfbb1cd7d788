// log_softmax_backward on the CPU: out = g - exp(y) * sum(g) along dim (g
// the gradient, y log_softmax's output), in float (double for float64); an
// instance of the softmax family's two-input rows (rows, columns, gather).
// out may be grad or output itself.
#include "../log_softmax_backward_api.h"

#include <cmath>

#include "../../common/cpu/softmax_family_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct LogSoftmaxBackwardCpu : oprt_descriptor {
  static constexpr const char* kName = "log_softmax_backward/cpu";
  LogSoftmaxBackwardCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  RowFamilyPlan<2> plan;
};

template <class A>
A exp_of(A y) { return std::exp(y); }
#ifdef __AVX2__
template <>
__m256 exp_of(__m256 y) { return exp8(y); }
#endif

struct LogSoftmaxGrad {
  template <class A>
  static A term(A g, A /*y*/) { return g; }
  template <class A>
  static A value(A g, A y, A s) { return g - exp_of(y) * s; }
};

LogSoftmaxBackwardCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* grad,
                              const oprt_tensor_view_t* output, int32_t dim) {
  auto plan = plan_row_family<2>({out, grad, output}, {"out", "grad", "output"}, dim);
  auto* d = new LogSoftmaxBackwardCpu;
  d->plan = plan;
  d->variant = plan.variant();
  return d;
}

void execute(const LogSoftmaxBackwardCpu& d, void* /*workspace*/, void* out, const void* grad, const void* output,
             void* /*stream*/) {
  run_row_sum_family<LogSoftmaxGrad>(d.plan, out, grad, output);
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(log_softmax_backward, cpu, oprt::cpu::LogSoftmaxBackwardCpu, oprt::cpu::create, oprt::cpu::execute)
