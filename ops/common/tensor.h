// Validated, owned copies of oprt_tensor_view_t and the one dtype table.
#ifndef OPRT_COMMON_TENSOR_H_
#define OPRT_COMMON_TENSOR_H_

#include <cstdint>

#include "error.h"

namespace oprt {

constexpr int kMaxDims = OPRT_MAX_DIMS;

struct DtypeInfo {
  int32_t code;
  const char* name;
  int32_t size;  // bytes per element
};

// The dtype table: code -> name and size. nullptr for an unknown code.
const DtypeInfo* find_dtype(int32_t code);
const char* dtype_name(int32_t code);  // "unknown" for an unknown code

// A tensor's metadata, validated and copied out of the caller's view.
struct TensorDesc {
  int32_t dtype = OPRT_DTYPE_F32;
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t numel = 1;

  int32_t element_size() const { return find_dtype(dtype)->size; }
};

// Checks pointer, ndim (0..8), dtype code, sizes >= 0, element-count and
// byte-extent overflow; `name` ("out", "src", ...) goes into the message.
TensorDesc describe_tensor(const oprt_tensor_view_t* view, const char* name);

// Fails with BAD_SHAPE unless a and b have the same shape.
void require_same_shape(const TensorDesc& a, const char* a_name, const TensorDesc& b, const char* b_name);

// Fails with BAD_STRIDES if two different indices of `t` can address the same
// element (a stride-0 dim of size > 1, or strides that interleave). An output
// must never alias itself.
void require_no_self_overlap(const TensorDesc& t, const char* name);

// Fails with UNSUPPORTED_DTYPE unless a and b share a dtype.
void require_same_dtype(const TensorDesc& a, const char* a_name, const TensorDesc& b, const char* b_name);

// Normalizes a possibly negative dim for a tensor of rank ndim (a 0-d tensor
// accepts -1 and 0, as torch does); fails with INVALID_ARGUMENT otherwise.
int normalize_dim(int64_t dim, int ndim, const char* what);

}  // namespace oprt

#endif
