// vector_add on NVIDIA GPUs: out = a + b over any strides; stride-0 dims
// carry broadcasting. Rounded once, exactly as torch's add in float.
// Variants come from the elementwise engine: dense (16-byte vectors; a
// broadcast scalar read once), rows (a row or column bias, slices), flat
// (a bias into a contiguous out; when told, see elementwise.cuh), strided.
#include "vector_add_nvidia.h"

#include <type_traits>

#include "../../common/descriptor.h"
#include "../../common/nvidia/elementwise.cuh"

namespace oprt::nvidia {
namespace {

struct VectorAddNvidia : oprt_descriptor {
  static constexpr const char* kName = "vector_add/nvidia";
  VectorAddNvidia() : oprt_descriptor(descriptor_tag(kName)) {}
  StridedLayout<3> layout;  // operands: out, a, b
  int32_t dtype = 0;
  ElementwiseKind kind = ElementwiseKind::kStrided;
};

// float32: a plain add. float16/bfloat16: the native 16-bit add, which
// rounds once from the exact sum; float has more than twice the 16-bit
// significand (+2 bits), so that equals torch's add-in-float-then-round.
template <class T>
struct AddOp {
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, float>) return x + y;
    else return __hadd(x, y);
  }
};

VectorAddNvidia* create(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* a_view,
                        const oprt_tensor_view_t* b_view) {
  TensorDesc out = describe_tensor(out_view, "out");
  TensorDesc a = describe_tensor(a_view, "a");
  TensorDesc b = describe_tensor(b_view, "b");
  require_nvidia_dtype(out, "out");
  require_same_dtype(a, "a", b, "b");
  require_same_dtype(out, "out", a, "a");
  require_same_shape(out, "out", a, "a (broadcast with stride-0 dims)");
  require_same_shape(out, "out", b, "b (broadcast with stride-0 dims)");
  require_no_self_overlap(out, "out");
  auto* d = new VectorAddNvidia;
  d->layout = elementwise_layout<3>({&out, &a, &b});
  d->dtype = out.dtype;
  d->kind = choose_elementwise_kind(d->layout, elementwise_vector(out.element_size(), a.element_size()));
  d->variant = elementwise_kind_name(d->kind);
  return d;
}

void execute(const VectorAddNvidia& d, void* out, const void* a, const void* b, cudaStream_t stream) {
  const int64_t numel = d.layout.numel();
  require_data(out, "out", numel);
  require_data(a, "a", numel);
  require_data(b, "b", numel);
  if (numel == 0) return;
  StreamDeviceGuard device(stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    const T* const inputs[2] = {static_cast<const T*>(a), static_cast<const T*>(b)};
    launch_elementwise<AddOp<T>, T, T, 2>(d.kind, d.layout, AddOp<T>{}, static_cast<T*>(out), inputs, stream);
  });
}

}  // namespace
}  // namespace oprt::nvidia

using oprt::nvidia::VectorAddNvidia;

extern "C" {

oprt_status_t oprt_create_vector_add_descriptor_nvidia(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                                       const oprt_tensor_view_t* a, const oprt_tensor_view_t* b) {
  return oprt::create_descriptor<VectorAddNvidia>(__func__, desc, [&] { return oprt::nvidia::create(out, a, b); });
}

oprt_status_t oprt_get_vector_add_workspace_size_nvidia(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<VectorAddNvidia>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_vector_add_nvidia(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes,
                                             void* out, const void* a, const void* b, void* stream) {
  return oprt::execute_descriptor<VectorAddNvidia>(
      __func__, desc, workspace, workspace_bytes,
      [&](const VectorAddNvidia& d) { oprt::nvidia::execute(d, out, a, b, static_cast<cudaStream_t>(stream)); });
}

oprt_status_t oprt_destroy_vector_add_descriptor_nvidia(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<VectorAddNvidia>(__func__, desc);
}

}  // extern "C"
