// copy on NVIDIA GPUs: any strides on both sides, any pair of float32 /
// float16 / bfloat16. Variants, chosen at create from the coalesced layout:
//   memcpy           dense, same dtype: cudaMemcpyAsync (the copy engine path)
//   dense            dense, dtype conversion: 16-byte vectors
//   rows             rows contiguous in both (slices, a broadcast row)
//   transpose_tiled  out and src contiguous along different dims: 64x64 tiles
//                    through shared memory, so reads and writes both coalesce
//   strided          anything else
#include "copy_nvidia.h"

#include <type_traits>

#include "../../common/descriptor.h"
#include "../../common/nvidia/elementwise.cuh"

namespace oprt::nvidia {
namespace {

struct CopyNvidia : oprt_descriptor {
  static constexpr const char* kName = "copy/nvidia";
  CopyNvidia() : oprt_descriptor(descriptor_tag(kName)) {}
  StridedLayout<2> layout;  // operand 0 = out, 1 = src
  int32_t out_dtype = 0, src_dtype = 0;
  enum class Kind { kMemcpy, kElementwise, kTiles } kind = Kind::kElementwise;
  ElementwiseKind elementwise = ElementwiseKind::kStrided;
  StridedLayout<2> outer;  // tiles: the dims outside the transposed pair
};

template <class Out>
struct ConvertOp {
  template <class In>
  __device__ __forceinline__ Out operator()(In x) const {
    if constexpr (std::is_same_v<In, Out>) return x;  // bit-exact, NaN payloads too
    else return from_float<Out>(to_float(x));
  }
};

// A kTile x kTile tile per block of 32x8 threads: each thread moves
// kTile*kTile/256 elements (16 for 64x64), all loaded before any is stored,
// so enough bytes are in flight even for 2-byte elements.
constexpr int kTile = 64, kTileThreadsX = 32, kTileThreadsY = 8;

// out[r * out_row + c] = src[r + c * src_col] over rows x cols per outer index.
template <class Out, class In, class Index>
__global__ void __launch_bounds__(kTileThreadsX * kTileThreadsY)
transpose_kernel(Out* out, const In* src, OffsetCalc<2, Index> outer, int64_t rows, int64_t cols, int64_t out_row,
                 int64_t src_col, int64_t tiles_r, int64_t tiles_c, int64_t tasks) {
  constexpr int RX = kTile / kTileThreadsX, RY = kTile / kTileThreadsY;
  __shared__ Out tile[kTile][kTile + 1];  // [c][r]; +1: column reads hit distinct banks
  const ConvertOp<Out> convert;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t per_outer = tiles_r * tiles_c;
    const int64_t o = task / per_outer, t = task - o * per_outer;
    const int64_t r0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;
    int64_t base[2];
    outer.get(static_cast<Index>(o), base);
    // Read along r (contiguous in src), write along c (contiguous in out).
    In v[RY][RX];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < RX; ++i) {
        const int64_t r = r0 + tx + i * kTileThreadsX, c = c0 + ty + j * kTileThreadsY;
        v[j][i] = r < rows && c < cols ? src[base[1] + r + c * src_col] : In{};
      }
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < RX; ++i) tile[ty + j * kTileThreadsY][tx + i * kTileThreadsX] = convert(v[j][i]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < RX; ++i) {
        const int64_t r = r0 + ty + j * kTileThreadsY, c = c0 + tx + i * kTileThreadsX;
        if (r < rows && c < cols) out[base[0] + r * out_row + c] = tile[tx + i * kTileThreadsX][ty + j * kTileThreadsY];
      }
    __syncthreads();
  }
}

CopyNvidia* create(const oprt_tensor_view_t* out_view, const oprt_tensor_view_t* src_view) {
  TensorDesc out = describe_tensor(out_view, "out");
  TensorDesc src = describe_tensor(src_view, "src");
  require_nvidia_dtype(out, "out");
  require_nvidia_dtype(src, "src");
  require_same_shape(out, "out", src, "src (broadcast it to out's shape with stride-0 dims)");
  require_no_self_overlap(out, "out");
  auto* d = new CopyNvidia;
  d->layout = elementwise_layout<2>({&out, &src});
  d->out_dtype = out.dtype;
  d->src_dtype = src.dtype;
  const StridedLayout<2>& l = d->layout;
  d->elementwise = choose_elementwise_kind(l);
  const bool dense_both = l.ndim <= 1 && l.inner_stride(0) == 1 && l.inner_stride(1) == 1;
  if (dense_both && out.dtype == src.dtype) {
    d->kind = CopyNvidia::Kind::kMemcpy;
    d->variant = "memcpy";
  } else if (d->elementwise == ElementwiseKind::kStrided && l.ndim >= 2 && l.strides[0][l.ndim - 1] == 1 &&
             l.strides[1][l.ndim - 2] == 1) {
    d->kind = CopyNvidia::Kind::kTiles;
    d->variant = "transpose_tiled";
    d->outer = outer_dims(outer_dims(l));
  } else {
    d->variant = elementwise_kind_name(d->elementwise);
  }
  return d;
}

template <class Out, class In>
void launch_tiles(const CopyNvidia& d, Out* out, const In* src, cudaStream_t stream) {
  const StridedLayout<2>& l = d.layout;
  const int a = l.ndim - 2, b = l.ndim - 1;
  const int64_t rows = l.shape[a], cols = l.shape[b];
  const int64_t tiles_r = ceil_div(rows, kTile), tiles_c = ceil_div(cols, kTile);
  const int64_t tasks = d.outer.numel() * tiles_r * tiles_c;
  dispatch_index(d.outer.numel(), [&](auto index) {
    using Index = decltype(index);
    const dim3 block(kTileThreadsX, kTileThreadsY);
    transpose_kernel<Out, In, Index><<<grid_for(tasks, 8, 4), block, 0, stream>>>(
        out, src, OffsetCalc<2, Index>(d.outer), rows, cols, l.strides[0][a], l.strides[1][b], tiles_r, tiles_c,
        tasks);
    check_launch("transpose_kernel");
  });
}

void execute(const CopyNvidia& d, void* out, const void* src, cudaStream_t stream) {
  const int64_t numel = d.layout.numel();
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  if (numel == 0) return;
  StreamDeviceGuard device(stream);
  if (d.kind == CopyNvidia::Kind::kMemcpy) {
    const size_t bytes = static_cast<size_t>(numel) * find_dtype(d.out_dtype)->size;
    OPRT_CUDA_CHECK(cudaMemcpyAsync(out, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dispatch_dtype(d.out_dtype, [&](auto out_type) {
    dispatch_dtype(d.src_dtype, [&](auto src_type) {
      using Out = decltype(out_type);
      using In = decltype(src_type);
      if (d.kind == CopyNvidia::Kind::kTiles)
        return launch_tiles(d, static_cast<Out*>(out), static_cast<const In*>(src), stream);
      const In* const inputs[1] = {static_cast<const In*>(src)};
      launch_elementwise<ConvertOp<Out>, Out, In, 1>(d.elementwise, d.layout, ConvertOp<Out>{},
                                                     static_cast<Out*>(out), inputs, stream);
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

using oprt::nvidia::CopyNvidia;

extern "C" {

oprt_status_t oprt_create_copy_descriptor_nvidia(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                                 const oprt_tensor_view_t* src) {
  return oprt::create_descriptor<CopyNvidia>(__func__, desc, [&] { return oprt::nvidia::create(out, src); });
}

oprt_status_t oprt_get_copy_workspace_size_nvidia(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<CopyNvidia>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_copy_nvidia(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,
                                       const void* src, void* stream) {
  return oprt::execute_descriptor<CopyNvidia>(__func__, desc, workspace, workspace_bytes, [&](const CopyNvidia& d) {
    oprt::nvidia::execute(d, out, src, static_cast<cudaStream_t>(stream));
  });
}

oprt_status_t oprt_destroy_copy_descriptor_nvidia(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<CopyNvidia>(__func__, desc);
}

}  // extern "C"
