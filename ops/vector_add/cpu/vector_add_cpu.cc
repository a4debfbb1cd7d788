// vector_add on the CPU: out = a + b over any strides (stride-0 dims carry
// broadcasting), summed in float (double for float64) and rounded once; an
// instance of the shared elementwise layer. out may be a or b itself.
#include "../vector_add_api.h"

#include "../../common/cpu/cpu_types.h"
#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct VectorAddCpu : oprt_descriptor {
  static constexpr const char* kName = "vector_add/cpu";
  VectorAddCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  ElementwisePlan<3> plan;  // operands: out, a, b
  int32_t dtype = 0;
};

struct Add {
  template <class V>
  V operator()(V x, V y) const { return x + y; }
};

VectorAddCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  int32_t dtype = 0;
  const ElementwisePlan<3> plan = plan_same_dtype<3>({out, a, b}, {"out", "a", "b"}, &dtype);
  auto* d = new VectorAddCpu;
  d->plan = plan;
  d->dtype = dtype;
  d->variant = plan.variant();
  return d;
}

void execute(const VectorAddCpu& d, void* /*workspace*/, void* out, const void* a, const void* b, void* /*stream*/) {
  const int64_t numel = d.plan.layout.numel();
  require_data(out, "out", numel);
  require_data(a, "a", numel);
  require_data(b, "b", numel);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    const T* inputs[2] = {static_cast<const T*>(a), static_cast<const T*>(b)};
    run_elementwise(d.plan, static_cast<T*>(out), inputs, Add{});
  });
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(vector_add, cpu, oprt::cpu::VectorAddCpu, oprt::cpu::create, oprt::cpu::execute)
