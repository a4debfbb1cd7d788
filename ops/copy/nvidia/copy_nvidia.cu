// copy on NVIDIA GPUs: any strides on both sides, any pair of float32 /
// float16 / bfloat16. Variants, chosen at create from the coalesced layout:
//   memcpy           dense, same dtype: cudaMemcpyAsync (the copy engine path)
//   dense            dense, dtype conversion or bytes not whole 16-byte
//                    words: 16-byte vectors
//   flat             out contiguous, src a broadcast row or short rows, where
//                    rows cannot be whole 16-byte vectors (elementwise.cuh)
//   rows             rows contiguous in both (slices, a broadcast row)
//   transpose_vec    out and src contiguous along different dims, same dtype,
//                    every row start 16-byte aligned and both sizes whole
//                    16-byte vectors: 16-byte loads and stores on both sides
//   transpose_vec_shift  the same with out's rows any length or its base
//                    anywhere: 16-byte src loads, out vectors shifted into
//                    alignment
//   transpose_tiled  the other transposes (conversions, odd sizes, misaligned
//                    bases at execute): 64x64 tiles of scalars through shared
//                    memory, so reads and writes both coalesce
//   strided          anything else
#include "../copy_api.h"

#include <cstdint>
#include <type_traits>

#include "../../common/descriptor.h"
#include "../../common/nvidia/elementwise.cuh"
#include "../../common/tuning.h"

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
  // tiles: transpose_vec (both bases 16-byte aligned at execute) or transpose_vec_shift (src's), else transpose_tiled
  enum class Tiles { kScalar, kVectors, kShiftedOut } tiles = Tiles::kScalar;
  bool shift_if_out_misaligned = false;  // kVectors: transpose_vec_shift where only out's base is not 16-byte aligned
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

// ---- transpose_vec -----------------------------------------------------------
// transpose_kernel spends ~30 instructions per 16-bit element (SASS: 2-byte
// accesses, 64-bit index math and bounds per element); an SM moving its share
// of 4 TB/s has ~28 to spare, so it is issue-bound. Here every global
// access is 16 bytes (~7 instructions per element): a thread loads a V x V
// block (V src rows of one 16-byte vector, V = elements per 16 bytes),
// transposes it in registers, parks it in shared memory as V out-row vectors,
// and after a barrier stores out-row vectors. 256 threads per tile of 16 x 16
// vectors (128x128 16-bit, 64x64 float32): each warp instruction covers two
// rows x 256 contiguous bytes on both sides. Same dtype only (bits are moved,
// never converted).
constexpr int kVecTileSide = 16;  // vectors along each side of a tile
constexpr int kVecTileThreads = kVecTileSide * kVecTileSide;

// Column e of a V x V block held as V row vectors: element e of every row.
// 16-bit: each 32-bit word of the column pairs element e of two rows (one
// byte permute); float32 only renames registers.
template <class T>
__device__ __forceinline__ Raw16 block_column(const Raw16 (&rows)[kVec16<T>], int e) {
  Raw16 column;
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int k = 0; k < 4; ++k) column.w[k] = rows[k].w[e];
  } else {
    static_assert(sizeof(T) == 2, "16-bit or float32");
    const unsigned halves = e % 2 ? 0x7632 : 0x5410;  // the high or the low halves of both words
#pragma unroll
    for (int w = 0; w < 4; ++w) column.w[w] = __byte_perm(rows[2 * w].w[e / 2], rows[2 * w + 1].w[e / 2], halves);
  }
  return column;
}

// Tiles along out's columns (c): kSide columns each, and for transpose_vec_shift
// one more where a row's last tile may reach V - 1 columns past a kSide
// boundary (its tiles start up to V - 1 columns before one, below).
__host__ __device__ constexpr int64_t vector_tiles_across(int64_t cols, int64_t side, int64_t vec, bool shifted) {
  return (cols + side - 1 + (shifted ? vec - 1 : 0)) / side;
}

// out[r * out_row + c] = src[r + c * src_col], as transpose_kernel, for T of
// 2 or 4 bytes with src_col, out_row, rows, cols, the outer strides and both
// bases all multiples of 16 bytes (so a vector never straddles a row's end).
// 4 blocks per SM (16-bit: 64 registers, 4 x 32 KB of shared memory): up to
// 128 KB of loads in flight per SM while other blocks store.
// kShiftOut (transpose_vec_shift): out_row, cols and out's base anything
// (src's side as above). Every out store is a whole aligned 16-byte vector
// (scalar end stores, a partial sector each, keep the L2 busy with partial
// writes): out row r's part of tile column k is [k * kSide - s, (k + 1)
// * kSide - s), s = that row's elements from its aligned boundary at or
// before k * kSide to k * kSide (the same s for every k), so the tiles of a
// row meet at aligned boundaries. A tile also loads the V src rows before
// its first (the columns s reaches back to) into V extra stage rows; each
// thread stores the aligned vector made of its left neighbour's last s
// elements (a shuffle; thread 0 takes them from the extra rows) and its own
// first V - s. Only the vectors at a row's two ends go element by element.
template <class T, bool kShiftOut>
__global__ void __launch_bounds__(kVecTileThreads, 4)
transpose_vec_kernel(T* out, const T* src, OffsetCalc<2, uint32_t> outer, int64_t rows, int64_t cols, int64_t out_row,
                     int64_t src_col, int64_t tiles_r, int64_t tiles_c) {
  constexpr int V = kVec16<T>, kSide = kVecTileSide * V;  // kSide elements per tile side
  // [r][vector along c], vectors stored at column c_vec ^ (r / V % 16): in
  // either phase the 8 threads sharing a 16-byte access phase hit 8
  // different 16-byte bank groups (writes: 8 rows V apart; reads: 8
  // neighbouring vectors of one row), so neither side has bank conflicts.
  // kShiftOut: rows kSide + j hold src row c0 - V + j as loaded (vector a: r = a * V ...).
  __shared__ Raw16 stage[kSide + (kShiftOut ? V : 0)][kVecTileSide];
  const auto slot = [&](int r, int c_vec) -> Raw16& { return stage[r][c_vec ^ (r / V % kVecTileSide)]; };
  // A thread's place in a 16 x 16 grid of vectors: `across` walks the
  // contiguous dim of the side being accessed (src's r, then out's c), `down` its rows.
  const int across = threadIdx.x % kVecTileSide, down = threadIdx.x / kVecTileSide;
  // A block per tile, fewer than 2^31 of them (checked at launch): 32-bit divisions.
  const uint32_t task = blockIdx.x, per_outer = static_cast<uint32_t>(tiles_r * tiles_c);
  const uint32_t o = task / per_outer, t = task - o * per_outer;
  const int64_t r0 = int64_t{t / static_cast<uint32_t>(tiles_c)} * kSide;
  const int64_t c0 = int64_t{t % static_cast<uint32_t>(tiles_c)} * kSide;
  const int rows_here = static_cast<int>(rows - r0 < kSide ? rows - r0 : kSide);
  const int cols_here = static_cast<int>(cols - c0 < kSide ? cols - c0 : kSide);
  int64_t base[2];
  outer.get(o, base);
  if constexpr (kShiftOut) {  // the V src rows before c0, a vector per thread of the first V * 16
    const int j = threadIdx.x / kVecTileSide;
    if (c0 > 0 && j < V && across * V < rows_here && c0 - V + j < cols)
      stage[kSide + j][across] = load_raw(src + base[1] + r0 + across * V + (c0 - V + j) * src_col);
  }
  // Load src rows c0 + down * V + k, the vector at r0 + across * V; all loads in flight at once.
  Raw16 block[V] = {};
  const T* p = src + base[1] + r0 + across * V + (c0 + down * V) * src_col;
#pragma unroll
  for (int k = 0; k < V; ++k, p += src_col)
    if (across * V < rows_here && down * V + k < cols_here) block[k] = load_raw(p);
  // Column e of the block is out row across * V + e, the vector at c0 + down * V.
#pragma unroll
  for (int e = 0; e < V; ++e) slot(across * V + e, down) = block_column<T>(block, e);
  __syncthreads();
  // Store out rows r0 + i * 16 + down, the vector at c0 + across * V. (Not
  // unrolled: unrolled, the compiler computed every 64-bit address before the
  // barrier and spilled some at 64 registers; stores need no loads in flight.)
  if constexpr (!kShiftOut) {
    T* q = out + base[0] + (r0 + down) * out_row + c0 + across * V;
#pragma unroll 1
    for (int i = 0; i < V; ++i, q += kVecTileSide * out_row) {
      const int r = i * kVecTileSide + down;
      if (r < rows_here && across * V < cols_here) store_raw(q, slot(r, across));
    }
  } else {
    T* at_c0 = out + base[0] + (r0 + down) * out_row + c0;  // out row r0 + r, column c0
#pragma unroll 1
    for (int i = 0; i < V; ++i, at_c0 += kVecTileSide * out_row) {
      const int r = i * kVecTileSide + down;
      const Raw16 own = slot(r, across);
      Raw16 left;  // the left neighbour's vector (every lane shuffles: the rows' validity differs)
#pragma unroll
      for (int k = 0; k < 4; ++k) left.w[k] = __shfl_up_sync(0xffffffffu, own.w[k], 1, kVecTileSide);
      if (r >= rows_here) continue;
      const int s = static_cast<int>(reinterpret_cast<uintptr_t>(at_c0) / sizeof(T) % V);
      const int64_t first = c0 - s + across * V;  // the column this thread's aligned vector starts at
      if (across == 0 && s != 0 && c0 > 0) {  // columns c0 - V .. c0 - 1 of row r, from the extra stage rows
        T lead[V];
#pragma unroll
        for (int j = 0; j < V; ++j) lead[j] = reinterpret_cast<const T*>(&stage[kSide + j][r / V])[r % V];
        memcpy(&left, lead, sizeof left);
      }
      const Raw16 window = s ? shifted_window<T>(left, own, (V - s) * sizeof(T)) : own;
      T* q = at_c0 - s + across * V;  // 16-byte aligned
      if (first >= 0 && first + V <= cols) {
        store_raw(q, window);
      } else {  // a row's first or last vector: the elements that are in the row
        T elements[V];
        memcpy(elements, &window, sizeof window);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (first + e >= 0 && first + e < cols) q[e] = elements[e];
      }
    }
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
  d->elementwise = choose_elementwise_kind(l, elementwise_vector(out.element_size(), src.element_size()));
  const bool dense_both = l.ndim <= 1 && l.inner_stride(0) == 1 && l.inner_stride(1) == 1;
  // cudaMemcpyAsync of a size that is not whole 16-byte words is slow at
  // moderate sizes; the dense kernel copies those instead
  // (OPRT_TUNE_COPY_ODD_KERNEL=0 keeps them on memcpy, for the tests).
  const bool odd_bytes = l.numel() * out.element_size() % 16 != 0;
  if (dense_both && out.dtype == src.dtype && !(odd_bytes && tuned("COPY_ODD_KERNEL", 1) != 0)) {
    d->kind = CopyNvidia::Kind::kMemcpy;
    d->variant = "memcpy";
  } else if (d->elementwise == ElementwiseKind::kStrided && l.ndim >= 2 && l.strides[0][l.ndim - 1] == 1 &&
             l.strides[1][l.ndim - 2] == 1) {
    d->kind = CopyNvidia::Kind::kTiles;
    d->outer = outer_dims(outer_dims(l));
    // transpose_vec needs whole vectors: both sizes, the row strides and the
    // outer strides multiples of 16 bytes, so that with aligned bases (checked
    // at execute) every vector is aligned and lies within its row; and fewer
    // than 2^31 tiles (a block each).
    // Where only out's side is not whole vectors, transpose_vec_shift, which
    // keeps 16-byte accesses on both sides where transpose_tiled has none.
    // OPRT_TUNE_COPY_TRANSPOSE_VEC (tests): 3 = planned; 2 = transpose_vec
    // only where both sides are whole vectors, 1 = 16-bit only, 0 =
    // transpose_tiled for every transpose.
    const int64_t vec_dtypes = tuned("COPY_TRANSPOSE_VEC", 3);
    const int size = out.element_size();
    const int64_t vec = 16 / size, side = kVecTileSide * vec;
    const int a = l.ndim - 2, b = l.ndim - 1;
    // (the shifted tile count: it bounds transpose_vec's too)
    const int64_t tiles = d->outer.numel() * ceil_div(l.shape[a], side) * vector_tiles_across(l.shape[b], side, vec, true);
    const bool src_vectors = out.dtype == src.dtype && l.shape[a] % vec == 0 && l.strides[1][b] % vec == 0 &&
                             strides_aligned16(d->outer, size) && tiles <= INT32_MAX;
    const bool out_vectors = l.shape[b] % vec == 0 && l.strides[0][a] % vec == 0;
    using Tiles = CopyNvidia::Tiles;
    if (src_vectors && out_vectors && (vec_dtypes >= 2 || (vec_dtypes == 1 && size == 2))) d->tiles = Tiles::kVectors;
    if (src_vectors && !out_vectors && vec_dtypes >= 3) d->tiles = Tiles::kShiftedOut;
    d->shift_if_out_misaligned = d->tiles == Tiles::kVectors && vec_dtypes >= 3;
    d->variant = d->tiles == Tiles::kVectors      ? "transpose_vec"
                 : d->tiles == Tiles::kShiftedOut ? "transpose_vec_shift"
                                                  : "transpose_tiled";
  } else {
    d->variant = elementwise_kind_name(d->elementwise);
  }
  return d;
}

// A block per tile (one-shot: like the dense copies, streams better than
// blocks looping over tiles, and keeps the outer offsets out of registers);
// fewer than 2^31 tiles (create checked), so 32-bit outer indices.
template <class T, bool kShiftOut>
void launch_vector_tiles(const CopyNvidia& d, T* out, const T* src, cudaStream_t stream) {
  const StridedLayout<2>& l = d.layout;
  const int a = l.ndim - 2, b = l.ndim - 1;
  const int64_t tiles_r = ceil_div(l.shape[a], kVecTileSide * kVec16<T>);
  const int64_t tiles_c = vector_tiles_across(l.shape[b], kVecTileSide * kVec16<T>, kVec16<T>, kShiftOut);
  const auto tiles = static_cast<unsigned>(d.outer.numel() * tiles_r * tiles_c);
  transpose_vec_kernel<T, kShiftOut><<<tiles, kVecTileThreads, 0, stream>>>(
      out, src, OffsetCalc<2, uint32_t>(d.outer), l.shape[a], l.shape[b], l.strides[0][a], l.strides[1][b], tiles_r,
      tiles_c);
  check_launch("transpose_vec_kernel");
}

template <class Out, class In>
void launch_tiles(const CopyNvidia& d, Out* out, const In* src, cudaStream_t stream) {
  if constexpr (std::is_same_v<Out, In>) {
    using Tiles = CopyNvidia::Tiles;
    if (d.tiles == Tiles::kVectors && aligned16(out) && aligned16(src))
      return launch_vector_tiles<Out, false>(d, out, src, stream);
    if ((d.tiles == Tiles::kShiftedOut || d.shift_if_out_misaligned) && aligned16(src))
      return launch_vector_tiles<Out, true>(d, out, src, stream);
  }
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

void execute(const CopyNvidia& d, void* /*workspace*/, void* out, const void* src, void* stream_handle) {
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
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

OPRT_DEFINE_OP(copy, nvidia, oprt::nvidia::CopyNvidia, oprt::nvidia::create, oprt::nvidia::execute)
