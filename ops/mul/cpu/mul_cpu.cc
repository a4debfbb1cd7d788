// mul on the CPU: out = a * b over any strides (stride-0 dims carry
// broadcasting), multiplied in float (double for float64) and rounded once,
// as torch.mul; an instance of the shared elementwise layer. out may be a or
// b itself.
#include "../mul_api.h"

#include "../../common/cpu/elementwise_cpu.h"

namespace oprt::cpu {
namespace {

struct MulCpu : SameDtypeElementwise<3> {  // operands: out, a, b
  static constexpr const char* kName = "mul/cpu";
  MulCpu() : SameDtypeElementwise(descriptor_tag(kName)) {}
};

// The product of two float16 or bfloat16 values is exact in float, so the
// one rounding is the final narrowing.
struct Multiply {
  template <class V>
  V operator()(V x, V y) const { return x * y; }
};

MulCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  return create_same_dtype_elementwise<MulCpu, 3>({out, a, b}, {"out", "a", "b"});
}

void execute(const MulCpu& d, void* /*workspace*/, void* out, const void* a, const void* b, void* /*stream*/) {
  execute_same_dtype_elementwise<3>(d, out, {a, b}, Multiply{});
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(mul, cpu, oprt::cpu::MulCpu, oprt::cpu::create, oprt::cpu::execute)
