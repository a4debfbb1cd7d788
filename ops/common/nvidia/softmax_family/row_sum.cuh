// The softmax family's two-input ops on NVIDIA GPUs (softmax_backward,
// log_softmax_backward: one layer, an epilogue apart): out = E::out(a, b, s)
// with s the row's sum of E::term(a, b) along the dim, in float, rounded
// once on store. The backend-neutral plan (common/softmax_plan.h) gives the
// dim's length, each tensor's stride along it and the other dims coalesced.
//
// The one-input variants (plan.cuh) are built around one input's loads and
// a running (max, sum) pair: rows held in registers or shared memory,
// bulk copies of one source, the columns' (max, sum) partials. A second
// input there would add registers and traffic to the forward kernels, so
// the two-input ops plan a subset of their own, which covers every layout:
//   rows_warp / rows_block  the dim contiguous in all three tensors: a
//            group of G threads per row (a power of two up to a warp for
//            rows of up to 128, else the whole block), each thread summing
//            the elements lane, lane + G, ... (coalesced), the group's sums
//            combined by shuffles and the block's warp slots; then each
//            thread writes its elements, read again (from L1 or L2)
//   columns  any other layout: a thread per row, neighbouring threads on
//            neighbouring rows (out's innermost row dim), each reading its
//            row down the dim twice; "strided" where the rows' innermost
//            dim is not contiguous in every tensor
// A thread's sum adds kSumChunk terms at a time, the chunk sums into a
// compensated total (long_sum.cuh), so a long row's error grows with
// kSumChunk, not its length.
//
// An op supplies an epilogue E:
//   __device__ static float term(float a, float b);          summed over the row
//   __device__ static float out(float a, float b, float s);  each output
// NaN and inf reach the outputs through the arithmetic, as in torch's
// backward kernels.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_ROW_SUM_CUH_

#include <algorithm>
#include <memory>

#include "../../descriptor.h"
#include "../../softmax_plan.h"
#include "../cuda_types.cuh"
#include "../group_reduce.cuh"
#include "../launch.cuh"
#include "../long_sum.cuh"
#include "../offset_calc.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kSumChunk = 32;
constexpr int kRowSumMaxBlock = 1024;
constexpr int kRowSumColumnThreads = 256;

// ---- kernels -------------------------------------------------------------------------
// Sum of E::term over elements first, first + step, ... < n of a and b
// (element strides sa, sb).
template <class E, class T>
__device__ __forceinline__ float row_term_sum(const T* a, int64_t sa, const T* b, int64_t sb, int64_t first,
                                              int64_t step, int64_t n) {
  LongSum total;
  float part = 0.0f;
  int count = 0;
  for (int64_t i = first; i < n; i += step) {
    part += E::term(to_float(a[i * sa]), to_float(b[i * sb]));
    if (++count == kSumChunk) {
      total.add(part);
      part = 0.0f;
      count = 0;
    }
  }
  total.add(part);
  return total.value();
}

// G threads per row (0: the whole block); rows contiguous along the dim.
template <class E, class T, int G, class Index>
__global__ void __launch_bounds__(kRowSumMaxBlock)
row_sum_rows_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, int64_t nrows, int64_t length) {
  __shared__ float slots[kMaxWarps];
  const int tpr = G ? G : blockDim.x;
  const int groups = blockDim.x / tpr, group = threadIdx.x / tpr, lane = threadIdx.x % tpr;
  for (int64_t base = int64_t{blockIdx.x} * groups; base < nrows; base += int64_t{gridDim.x} * groups) {
    const int64_t row = base + group;
    const bool valid = row < nrows;  // every thread reaches the reductions below
    int64_t offsets[3] = {0, 0, 0};
    if (valid) rows.get(static_cast<Index>(row), offsets);
    const T* pa = a + offsets[1];
    const T* pb = b + offsets[2];
    T* q = out + offsets[0];
    float s = valid ? row_term_sum<E>(pa, 1, pb, 1, lane, tpr, length) : 0.0f;
    s = G ? group_allreduce<(G ? G : 1)>(s, SumOp{}, slots) : block_allreduce(s, SumOp{}, slots);
    if (!valid) continue;
    for (int64_t i = lane; i < length; i += tpr) q[i] = from_float<T>(E::out(to_float(pa[i]), to_float(pb[i]), s));
  }
}

struct RowSumStrides {
  int64_t out, a, b;  // element strides along the dim
};

// A thread per row, any strides.
template <class E, class T, class Index>
__global__ void __launch_bounds__(kRowSumColumnThreads)
row_sum_columns_kernel(T* out, const T* a, const T* b, OffsetCalc<3, Index> rows, int64_t nrows, int64_t length,
                       RowSumStrides st) {
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < nrows;
       row += int64_t{gridDim.x} * blockDim.x) {
    int64_t offsets[3];
    rows.get(static_cast<Index>(row), offsets);
    const T* pa = a + offsets[1];
    const T* pb = b + offsets[2];
    T* q = out + offsets[0];
    const float s = row_term_sum<E>(pa, st.a, pb, st.b, 0, 1, length);
    for (int64_t i = 0; i < length; ++i)
      q[i * st.out] = from_float<T>(E::out(to_float(pa[i * st.a]), to_float(pb[i * st.b]), s));
  }
}

// ---- plan ----------------------------------------------------------------------------
enum class RowSumKind { kEmpty, kRows, kColumns };

// The plan of a two-input op, the base of its descriptor (which adds its
// kName; see softmax_backward_nvidia.cu).
struct RowSumPlan : oprt_descriptor {
  explicit RowSumPlan(uint64_t tag) : oprt_descriptor(tag) {}
  RowSumKind kind = RowSumKind::kRows;
  int32_t dtype = 0;
  int64_t length = 1, nrows = 0;
  RowSumStrides strides{1, 1, 1};
  StridedLayout<3> rows;  // every other dim: operand 0 = out, 1 = a, 2 = b
  int group = 0;          // rows: threads per row (<= 32), or 0 with `block` threads per row
  int block = 256;
};

// Threads per row: a quarter of the row up to a warp, then a block of
// about one thread per 8 elements (256 to 1024 threads).
inline void plan_row_sum_rows(RowSumPlan& d) {
  d.kind = RowSumKind::kRows;
  const int64_t quarter = ceil_div(d.length, 4);
  if (quarter <= 32) {
    d.group = static_cast<int>(ceil_pow2(quarter));
    d.block = 256;
    d.variant = "rows_warp";
    return;
  }
  d.group = 0;
  d.block = static_cast<int>(std::clamp<int64_t>(ceil_div(ceil_div(d.length, 8), 32) * 32, 256, kRowSumMaxBlock));
  d.variant = "rows_block";
}

// The descriptor D (a RowSumPlan) for out = op(a, b) along dim: validated,
// planned (the epilogue does not change the plan).
template <class D>
D* create_row_sum_family(const oprt_tensor_view_t* out, const oprt_tensor_view_t* a, const oprt_tensor_view_t* b,
                         int32_t dim, const char* const (&names)[3]) {
  const AlongDimProblem<3> p = plan_along_dim<3>({out, a, b}, names, dim);
  require_nvidia_dtype(p.t[1], names[1]);
  auto d = std::make_unique<D>();
  d->dtype = p.t[0].dtype;
  d->length = p.length;
  d->strides = {p.stride[0], p.stride[1], p.stride[2]};
  d->rows = p.rows;
  d->nrows = p.rows.numel();
  if (p.t[0].numel == 0) {
    d->kind = RowSumKind::kEmpty;
    d->variant = "empty";
    return d.release();
  }
  const bool contiguous = d->length == 1 || (p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1);
  if (contiguous) {
    plan_row_sum_rows(*d);
    return d.release();
  }
  d->kind = RowSumKind::kColumns;
  bool inner_contiguous = true;
  for (int k = 0; k < 3; ++k) inner_contiguous &= p.rows.inner_stride(k) == 1;
  d->variant = inner_contiguous ? "columns" : "strided";
  return d.release();
}

// ---- execute -------------------------------------------------------------------------
template <class E, class T, class Index>
void launch_row_sum(const RowSumPlan& d, T* out, const T* a, const T* b, cudaStream_t stream) {
  const OffsetCalc<3, Index> rows(d.rows);
  if (d.kind == RowSumKind::kColumns) {
    const unsigned grid = grid_for(ceil_div(d.nrows, kRowSumColumnThreads), 2048 / kRowSumColumnThreads, 4);
    row_sum_columns_kernel<E, T, Index><<<grid, kRowSumColumnThreads, 0, stream>>>(out, a, b, rows, d.nrows,
                                                                                    d.length, d.strides);
    check_launch("row_sum_columns_kernel");
    return;
  }
  const int groups = d.group ? d.block / d.group : 1;
  const unsigned grid = grid_for(ceil_div(d.nrows, groups), std::max(1, 2048 / d.block), 4);
  const auto run = [&](auto group) {
    row_sum_rows_kernel<E, T, decltype(group)::value, Index><<<grid, d.block, 0, stream>>>(out, a, b, rows, d.nrows,
                                                                                           d.length);
    check_launch("row_sum_rows_kernel");
  };
  if (d.group == 0) return run(std::integral_constant<int, 0>{});
  visit_pow2<1, 32>(d.group, "rows_warp: threads per row", run);
}

// Runs the plan d of epilogue E: the body of an op's execute.
template <class E>
void execute_row_sum_family(const RowSumPlan& d, void* out, const void* a, const void* b, void* stream_handle,
                            const char* const (&names)[3]) {
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  const int64_t numel = d.nrows * d.length;
  require_data(out, names[0], numel);
  require_data(a, names[1], numel);
  require_data(b, names[2], numel);
  if (d.kind == RowSumKind::kEmpty) return;
  StreamDeviceGuard device(stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    dispatch_index(d.nrows, [&](auto index) {
      launch_row_sum<E, T, decltype(index)>(d, static_cast<T*>(out), static_cast<const T*>(a),
                                            static_cast<const T*>(b), stream);
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

#endif
