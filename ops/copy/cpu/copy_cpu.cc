// copy on the CPU: any strides on both sides, any pair of dtypes.
#include "copy_cpu.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

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
  bool use_tiles = false;   // a transpose: both sides contiguous, along different dims
  StridedLayout<2> outer;   // for tiles: the dims outside the transposed pair
};

// A transpose-like copy in square tiles, so both the reads and the writes
// stay within a few cache lines per tile row.
constexpr int64_t kTileSide = 32;

template <class To, class From>
void copy_tiles(const CopyCpu& d, To* out, const From* src) {
  const StridedLayout<2>& l = d.layout;
  const int a_dim = l.ndim - 2, b_dim = l.ndim - 1;  // out: b contiguous; src: a contiguous
  const int64_t rows = l.shape[a_dim], cols = l.shape[b_dim];
  const int64_t out_row = l.strides[0][a_dim], src_col = l.strides[1][b_dim];
  const int64_t tile_rows = (rows + kTileSide - 1) / kTileSide, tile_cols = (cols + kTileSide - 1) / kTileSide;
  const int64_t tiles = tile_rows * tile_cols;
  parallel_for(d.outer.numel() * tiles, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t base[2];
      offsets_at(d.outer, t / tiles, base);
      const int64_t r0 = (t % tiles) / tile_cols * kTileSide, c0 = (t % tiles) % tile_cols * kTileSide;
      const int64_t r1 = std::min(rows, r0 + kTileSide), c1 = std::min(cols, c0 + kTileSide);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) out[base[0] + r * out_row + c] = convert<To>(src[base[1] + r + c * src_col]);
    }
  });
}

template <class To, class From>
void copy_run(To* out, int64_t out_stride, const From* src, int64_t src_stride, int64_t count) {
  if (out_stride == 1 && src_stride == 1 && (is_16bit<To> || is_16bit<From>) && !std::is_same_v<To, From>) {
    float buffer[kTile];  // 16-bit conversions vectorize through a float tile
    for (int64_t start = 0; start < count; start += kTile) {
      const int64_t n = std::min(kTile, count - start);
      load_floats(src + start, buffer, n);
      store_floats(buffer, out + start, n);
    }
  } else if (out_stride == 1 && src_stride == 1) {
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
  const StridedLayout<2>& l = d->layout;
  d->use_tiles = l.ndim >= 2 && l.strides[0][l.ndim - 1] == 1 && l.strides[1][l.ndim - 2] == 1;
  if (d->use_tiles) d->outer = outer_dims(outer_dims(l));  // the dims around the transposed pair
  d->variant = d->use_memcpy ? "memcpy" : dense ? "contiguous_convert" : d->use_tiles ? "transpose_tiled" : "strided";
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
      if (d.use_tiles) return copy_tiles(d, static_cast<To*>(out), static_cast<const From*>(src));
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
