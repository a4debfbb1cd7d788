// log_softmax on the CPU: out = (x - max) - log(sum(exp(x - max))) along dim,
// in float (double for float64); an instance of the softmax family's row
// machinery (rows, columns, gather). -inf stays -inf in a row with a finite
// max; a row with NaN or +inf, or of only -inf, is NaN, as torch.log_softmax.
#include "../log_softmax_api.h"

#include <cmath>

#include "../../common/cpu/softmax_family_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct LogSoftmaxCpu : oprt_descriptor {
  static constexpr const char* kName = "log_softmax/cpu";
  LogSoftmaxCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  SoftmaxFamilyPlan plan;
};

// x - max first, as torch: with large x close to the max, adding max and
// log(sum) first would lose the difference.
struct LogSoftmax {
  static constexpr bool kUsesExp = false;
  template <class A>
  static A row_constant(A sum) { return std::log(sum); }
  template <class V>
  static V value(V x, V /*e*/, V max, V log_sum) { return (x - max) - log_sum; }
};

LogSoftmaxCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  const SoftmaxFamilyPlan plan = plan_softmax_family(out, src, dim);
  auto* d = new LogSoftmaxCpu;
  d->plan = plan;
  d->variant = plan.variant();
  return d;
}

void execute(const LogSoftmaxCpu& d, void* /*workspace*/, void* out, const void* src, void* /*stream*/) {
  run_softmax_family<LogSoftmax>(d.plan, out, src);
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(log_softmax, cpu, oprt::cpu::LogSoftmaxCpu, oprt::cpu::create, oprt::cpu::execute)
