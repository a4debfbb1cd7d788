// copy on the CPU: any strides on both sides (src broadcasts through stride-0
// dims), any pair of dtypes; an instance of the shared elementwise layer.
#include "../copy_api.h"

#include "../../common/cpu/cpu_types.h"
#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct CopyCpu : oprt_descriptor {
  static constexpr const char* kName = "copy/cpu";
  CopyCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  ElementwisePlan<2> plan;  // operand 0 = out, 1 = src
  int32_t out_dtype = 0, src_dtype = 0;
};

CopyCpu* create(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view) {
  TensorDesc out = describe_tensor(out_view, "out");
  TensorDesc src = describe_tensor(src_view, "src");
  require_same_shape(out, "out", src, "src (broadcast it to out's shape with stride-0 dims)");
  require_no_self_overlap(out, "out");
  auto* d = new CopyCpu;
  d->plan = plan_elementwise<2>({&out, &src});
  d->out_dtype = out.dtype;
  d->src_dtype = src.dtype;
  d->variant = d->plan.variant();
  return d;
}

void execute(const CopyCpu& d, void* /*workspace*/, void* out, const void* src, void* /*stream*/) {
  const int64_t numel = d.plan.layout.numel();
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  dispatch_dtype(d.out_dtype, [&](auto out_type) {
    dispatch_dtype(d.src_dtype, [&](auto src_type) {
      using From = decltype(src_type);
      const From* inputs[1] = {static_cast<const From*>(src)};
      run_elementwise(d.plan, static_cast<decltype(out_type)*>(out), inputs, Identity{});
    });
  });
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(copy, cpu, oprt::cpu::CopyCpu, oprt::cpu::create, oprt::cpu::execute)
