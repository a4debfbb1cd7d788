#include "tensor.h"

#include <algorithm>
#include <cstdlib>

namespace oprt {

namespace {
const DtypeInfo kDtypes[] = {
    {OPRT_DTYPE_F16, "float16", 2},
    {OPRT_DTYPE_F32, "float32", 4},
    {OPRT_DTYPE_BF16, "bfloat16", 2},
    {OPRT_DTYPE_F64, "float64", 8},
};

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
}  // namespace

const DtypeInfo* find_dtype(int32_t code) {
  for (const DtypeInfo& info : kDtypes)
    if (info.code == code) return &info;
  return nullptr;
}

const char* dtype_name(int32_t code) {
  const DtypeInfo* info = find_dtype(code);
  return info ? info->name : "unknown";
}

TensorDesc describe_tensor(const oprt_tensor_view_t* view, const char* name) {
  if (view == nullptr) fail(OPRT_STATUS_NULL_POINTER, "%s tensor view is NULL", name);
  TensorDesc t;
  if (view->ndim < 0 || view->ndim > kMaxDims)
    fail(OPRT_STATUS_BAD_SHAPE, "%s has ndim %d; must be in 0..%d", name, view->ndim, kMaxDims);
  if (find_dtype(view->dtype) == nullptr)
    fail(OPRT_STATUS_UNSUPPORTED_DTYPE, "%s has unknown dtype code %d", name, view->dtype);
  t.dtype = view->dtype;
  t.ndim = view->ndim;
  for (int d = 0; d < t.ndim; ++d) {
    t.shape[d] = view->shape[d];
    t.strides[d] = view->strides[d];
    if (t.shape[d] < 0) fail(OPRT_STATUS_BAD_SHAPE, "%s has negative size %lld in dim %d", name, (long long)t.shape[d], d);
    if (mul_overflows(t.numel, t.shape[d], &t.numel))
      fail(OPRT_STATUS_BAD_SHAPE, "%s element count overflows int64 at dim %d", name, d);
  }
  if (t.numel > 0) {  // the largest byte offset reached must fit in int64
    int64_t extent = 0;
    for (int d = 0; d < t.ndim; ++d) {
      int64_t reach;
      if (t.strides[d] == INT64_MIN || mul_overflows(std::llabs(t.strides[d]), t.shape[d] - 1, &reach) ||
          __builtin_add_overflow(extent, reach, &extent))
        fail(OPRT_STATUS_BAD_SHAPE, "%s byte extent overflows int64 at dim %d", name, d);
    }
    int64_t bytes;
    if (mul_overflows(extent + 1, t.element_size(), &bytes))
      fail(OPRT_STATUS_BAD_SHAPE, "%s byte extent overflows int64", name);
  }
  return t;
}

void require_same_shape(const TensorDesc& a, const char* a_name, const TensorDesc& b, const char* b_name) {
  bool same = a.ndim == b.ndim;
  for (int d = 0; same && d < a.ndim; ++d) same = a.shape[d] == b.shape[d];
  if (!same) fail(OPRT_STATUS_BAD_SHAPE, "%s and %s must have the same shape", a_name, b_name);
}

void require_no_self_overlap(const TensorDesc& t, const char* name) {
  if (t.numel <= 1) return;
  // Sort the non-trivial dims by |stride|; each stride must step over the
  // whole extent of the dims below it, otherwise two indices can collide.
  int order[kMaxDims];
  int count = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) order[count++] = d;
  std::stable_sort(order, order + count, [&](int x, int y) { return std::llabs(t.strides[x]) < std::llabs(t.strides[y]); });
  int64_t span = 1;  // elements covered by the dims sorted so far
  for (int i = 0; i < count; ++i) {
    int d = order[i];
    int64_t stride = std::llabs(t.strides[d]);
    if (stride < span)
      fail(OPRT_STATUS_BAD_STRIDES, "%s overlaps itself (dim %d has stride %lld with size %lld)", name, d,
           (long long)t.strides[d], (long long)t.shape[d]);
    span = stride * (t.shape[d] - 1) + span;
  }
}

void require_same_dtype(const TensorDesc& a, const char* a_name, const TensorDesc& b, const char* b_name) {
  if (a.dtype != b.dtype)
    fail(OPRT_STATUS_UNSUPPORTED_DTYPE, "%s (%s) and %s (%s) must share a dtype", a_name, dtype_name(a.dtype), b_name,
         dtype_name(b.dtype));
}

int normalize_dim(int64_t dim, int ndim, const char* what) {
  int64_t rank = ndim == 0 ? 1 : ndim;
  if (dim < -rank || dim >= rank)
    fail(OPRT_STATUS_INVALID_ARGUMENT, "%s %lld is out of range for a tensor of %d dims", what, (long long)dim, ndim);
  return static_cast<int>(dim < 0 ? dim + rank : dim);
}

}  // namespace oprt
