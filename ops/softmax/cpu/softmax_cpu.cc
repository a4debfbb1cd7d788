// softmax on the CPU: out = exp(x - max) / sum(exp(x - max)) along dim, an
// instance of the softmax family's row machinery (rows, columns, gather).
// exp(x - max) is computed once per element and kept until the sum is known.
#include "../softmax_api.h"

#include "../../common/cpu/softmax_family_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct SoftmaxCpu : oprt_descriptor {
  static constexpr const char* kName = "softmax/cpu";
  SoftmaxCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  SoftmaxFamilyPlan plan;
};

// Multiplying by the sum's inverse rounds differently from dividing, and is
// what every variant and the float64 loop do, so results agree across them.
struct Softmax {
  static constexpr bool kUsesExp = true;
  template <class A>
  static A row_constant(A sum) { return A(1) / sum; }
  template <class V>
  static V value(V /*x*/, V e, V /*max*/, V inverse) { return e * inverse; }
};

SoftmaxCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  const SoftmaxFamilyPlan plan = plan_softmax_family(out, src, dim);
  auto* d = new SoftmaxCpu;
  d->plan = plan;
  d->variant = plan.variant();
  return d;
}

void execute(const SoftmaxCpu& d, void* /*workspace*/, void* out, const void* src, void* /*stream*/) {
  run_softmax_family<Softmax>(d.plan, out, src);
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(softmax, cpu, oprt::cpu::SoftmaxCpu, oprt::cpu::create, oprt::cpu::execute)
