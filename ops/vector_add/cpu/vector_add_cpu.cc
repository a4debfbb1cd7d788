// vector_add on the CPU: out = a + b over any strides (stride-0 dims carry
// broadcasting), summed in float (double for float64) and rounded once; an
// instance of the shared elementwise layer. out may be a or b itself.
#include "../vector_add_api.h"

#include "../../common/cpu/elementwise_cpu.h"

namespace oprt::cpu {
namespace {

struct VectorAddCpu : SameDtypeElementwise<3> {  // operands: out, a, b
  static constexpr const char* kName = "vector_add/cpu";
  VectorAddCpu() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

struct Add {
  template <class V>
  V operator()(V x, V y) const { return x + y; }
};

VectorAddCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  return create_same_dtype_elementwise<VectorAddCpu, 3>({out, a, b}, {"out", "a", "b"});
}

void execute(const VectorAddCpu& d, void* /*workspace*/, void* out, const void* a, const void* b, void* /*stream*/) {
  execute_same_dtype_elementwise<3>(d, out, {a, b}, Add{});
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(vector_add, cpu, oprt::cpu::VectorAddCpu, oprt::cpu::create, oprt::cpu::execute)
