// copy on the CPU: any strides on both sides, any pair of dtypes.
#include "copy_cpu.h"

#include <cstring>

#include "../../common/cpu/cpu_types.h"
#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/descriptor.h"

namespace oprt::cpu {
namespace {

struct CopyCpu : oprt_descriptor {
  static constexpr const char* kName = "copy/cpu";
  CopyCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  StridedLayout<2> layout;  // operand 0 = out, 1 = src
  int32_t out_dtype = 0, src_dtype = 0;
  int element_size[2] = {};
  bool use_memcpy = false;  // dense and same dtype: a plain byte copy
};

template <class To, class From>
void copy_run(To* out, int64_t out_stride, const From* src, int64_t src_stride, int64_t count) {
  if (out_stride == 1 && src_stride == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = convert<To>(src[i]);
  } else if (src_stride == 0) {
    const To value = convert<To>(src[0]);
    for (int64_t i = 0; i < count; ++i) out[i * out_stride] = value;
  } else {
    for (int64_t i = 0; i < count; ++i) out[i * out_stride] = convert<To>(src[i * src_stride]);
  }
}

CopyCpu* create(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view) {
  TensorDesc out = describe_tensor(out_view, "out");
  TensorDesc src = describe_tensor(src_view, "src");
  require_same_shape(out, "out", src, "src (broadcast it to out's shape with stride-0 dims)");
  require_no_self_overlap(out, "out");
  auto* d = new CopyCpu;
  d->layout = elementwise_layout<2>({&out, &src});
  d->out_dtype = out.dtype;
  d->src_dtype = src.dtype;
  d->element_size[0] = out.element_size();
  d->element_size[1] = src.element_size();
  const bool dense = d->layout.ndim <= 1 && d->layout.inner_stride(0) == 1 && d->layout.inner_stride(1) == 1;
  d->use_memcpy = dense && out.dtype == src.dtype;
  d->variant = d->use_memcpy ? "memcpy" : dense ? "contiguous_convert" : "strided";
  return d;
}

void execute(const CopyCpu& d, void* out, const void* src) {
  const int64_t numel = d.layout.numel();
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  if (numel == 0) return;
  if (d.use_memcpy) {
    const int64_t size = d.element_size[0];
    parallel_for(numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::memmove(static_cast<char*>(out) + begin * size, static_cast<const char*>(src) + begin * size,
                   (end - begin) * size);
    });
    return;
  }
  char* const base[2] = {static_cast<char*>(out), static_cast<char*>(const_cast<void*>(src))};
  const int64_t out_stride = d.layout.inner_stride(0), src_stride = d.layout.inner_stride(1);
  dispatch_dtype(d.out_dtype, [&](auto out_type) {
    dispatch_dtype(d.src_dtype, [&](auto src_type) {
      using To = decltype(out_type);
      using From = decltype(src_type);
      parallel_runs(d.layout, base, d.element_size, [&](char* const* ptr, int64_t count) {
        copy_run(reinterpret_cast<To*>(ptr[0]), out_stride, reinterpret_cast<const From*>(ptr[1]), src_stride, count);
      });
    });
  });
}

}  // namespace
}  // namespace oprt::cpu

using oprt::cpu::CopyCpu;

extern "C" {

oprt_status_t oprt_create_copy_descriptor_cpu(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                              const oprt_tensor_view_t* src) {
  return oprt::create_descriptor<CopyCpu>(__func__, desc, [&] { return oprt::cpu::create(out, src); });
}

oprt_status_t oprt_get_copy_workspace_size_cpu(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<CopyCpu>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_copy_cpu(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,
                                    const void* src, void* /*stream*/) {
  return oprt::execute_descriptor<CopyCpu>(__func__, desc, workspace, workspace_bytes,
                                           [&](const CopyCpu& d) { oprt::cpu::execute(d, out, src); });
}

oprt_status_t oprt_destroy_copy_descriptor_cpu(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<CopyCpu>(__func__, desc);
}

}  // extern "C"
