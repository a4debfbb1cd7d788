// An elementwise op whose inputs and out share one dtype (vector_add, mul,
// relu): the descriptor, its validation and its launch, so that the op's own
// file holds only its scalar function. Inputs broadcast to out's shape
// through stride-0 dims; out may be an input itself.
#ifndef OPRT_COMMON_NVIDIA_ELEMENTWISE_OP_CUH_
#define OPRT_COMMON_NVIDIA_ELEMENTWISE_OP_CUH_

#include "../descriptor.h"
#include "cuda_check.cuh"
#include "elementwise.cuh"

namespace oprt::nvidia {

template <int K>
struct SameDtypeElementwise : oprt_descriptor {
  explicit SameDtypeElementwise(uint64_t tag) : oprt_descriptor(tag) {}
  StridedLayout<K + 1> layout;  // operand 0 = out, then the inputs
  int32_t dtype = 0;
  ElementwiseKind kind = ElementwiseKind::kStrided;
  const char* names[K] = {};  // the inputs' (string literals), for error messages
};

// D derives from SameDtypeElementwise<K> and is default-constructible.
template <class D, int K>
D* create_same_dtype_elementwise(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* const (&views)[K],
                                 const char* const (&names)[K]) {
  TensorDesc out = describe_tensor(out_view, "out");
  require_nvidia_dtype(out, "out");
  TensorDesc inputs[K];
  const TensorDesc* operands[K + 1] = {&out};
  for (int k = 0; k < K; ++k) {
    inputs[k] = describe_tensor(views[k], names[k]);
    require_same_dtype(out, "out", inputs[k], names[k]);
    require_same_shape(out, "out", inputs[k], names[k]);
    operands[k + 1] = &inputs[k];
  }
  require_no_self_overlap(out, "out");
  auto* d = new D;
  d->layout = elementwise_layout<K + 1>(operands);
  d->dtype = out.dtype;
  d->kind = choose_elementwise_kind(d->layout, elementwise_vector(out.element_size(), out.element_size()));
  d->variant = elementwise_kind_name(d->kind);
  for (int k = 0; k < K; ++k) d->names[k] = names[k];
  return d;
}

// Op<T> is the op's scalar function for element type T.
template <template <class> class Op, int K>
void execute_same_dtype_elementwise(const SameDtypeElementwise<K>& d, void* out, const void* const (&inputs)[K],
                                    void* stream) {
  const int64_t numel = d.layout.numel();
  require_data(out, "out", numel);
  for (int k = 0; k < K; ++k) require_data(inputs[k], d.names[k], numel);
  if (numel == 0) return;
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  StreamDeviceGuard device(cuda_stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    const T* typed[K];
    for (int k = 0; k < K; ++k) typed[k] = static_cast<const T*>(inputs[k]);
    launch_elementwise<Op<T>, T, T, K>(d.kind, d.layout, Op<T>{}, static_cast<T*>(out), typed, cuda_stream);
  });
}

}  // namespace oprt::nvidia

#endif
