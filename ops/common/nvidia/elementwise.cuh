// The elementwise engine behind copy and vector_add: out = op(in_0[, in_1])
// over a coalesced layout whose operand 0 is out. Kernels by layout:
//   dense      every operand contiguous or a single broadcast scalar: 16-byte
//              vectors, a scalar head that aligns all operands, a scalar tail
//   rows       the inner dim contiguous (or broadcast) in every operand: the
//              same vectors along each row, row starts from the outer dims
//   flat       out contiguous, every input's inner stride 0 or 1 (a bias
//              row, a per-row value, short rows): dense's vectors over out
//              and the inputs laid out like it; the others read at offsets
//              from the layout. Planned where rows cannot be whole vectors
//   strided    anything else: per-element offsets from the layout
// Indices are 64-bit wherever a tensor can pass 2^31 elements.
#ifndef OPRT_COMMON_NVIDIA_ELEMENTWISE_CUH_
#define OPRT_COMMON_NVIDIA_ELEMENTWISE_CUH_

#include <cstdint>

#include "../tuning.h"
#include "cuda_types.cuh"
#include "launch.cuh"
#include "offset_calc.cuh"

namespace oprt::nvidia {

// Elements per thread vector: 16 bytes of the narrowest operand (sizes in
// bytes at create, types in the kernels).
constexpr int elementwise_vector(int out_size, int in_size) { return 16 / (out_size < in_size ? out_size : in_size); }
template <class Out, class In>
constexpr int kElementwiseVec = elementwise_vector(sizeof(Out), sizeof(In));
constexpr int kElementwiseThreads = 256;
constexpr int kElementwiseUnroll = 4;  // vectors in flight per thread
// dense: one block per 128 x 2 vectors, no grid-stride loop (a "one-shot"
// grid), which streams faster than 256 threads x 4 vectors striding over
// 16 blocks per SM.
constexpr int kDenseThreads = 128;
constexpr int kDenseUnroll = 2;

template <class Op, int K, class In>
__device__ __forceinline__ auto apply_op(const Op& op, const In (&x)[K]) {
  if constexpr (K == 1) return op(x[0]);
  else return op(x[0], x[1]);
}

// op over one vector of every operand; a broadcast operand contributes its
// single value to every element.
template <class Out, int VEC, class Op, class In, int K>
__device__ __forceinline__ Vec<Out, VEC> apply_vector(const Op& op, const Vec<In, VEC> (&x)[K],
                                                      const bool* broadcast, const In (&value)[K]) {
  Vec<Out, VEC> y;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    In xs[K];
#pragma unroll
    for (int k = 0; k < K; ++k) xs[k] = broadcast[k] ? value[k] : x[k].v[e];
    y.v[e] = apply_op(op, xs);
  }
  return y;
}

template <class Out, class In, int K>
struct ElementwiseArgs {
  Out* out;
  const In* in[K];
  bool scalar[K];  // a broadcast scalar (stride 0 everywhere): read once
};

// The grid's share of `numel` elements split as dense_kernel and flat_kernel
// take them: the scalars (the `head` elements before the first vector, then
// the tail after `vectors` whole vectors of VEC) by scalar(i), spread over
// the grid; then each thread's vectors, U at a time, all loaded by
// load(v, in_range, x[u]) (vector v starts at element head + v * VEC;
// nothing to load unless in_range) before any is stored by store(v, x[u]).
template <int VEC, int U, class Loaded, class Scalar, class Load, class Store>
__device__ __forceinline__ void for_each_dense_element(int64_t numel, int64_t head, int64_t vectors,
                                                       Scalar&& scalar, Load&& load, Store&& store) {
  const int64_t body_end = head + vectors * VEC;
  const int64_t scalars = head + (numel - body_end);
  for (int64_t j = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < scalars; j += int64_t{gridDim.x} * blockDim.x)
    scalar(j < head ? j : body_end + (j - head));
  const int64_t step = int64_t{gridDim.x} * blockDim.x * U;
  for (int64_t base = int64_t{blockIdx.x} * blockDim.x * U + threadIdx.x; base < vectors; base += step) {
    Loaded x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t{u} * blockDim.x;
      load(v, v < vectors, x[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + int64_t{u} * blockDim.x;
      if (v >= vectors) break;
      store(v, x[u]);
    }
  }
}

// ---- dense ------------------------------------------------------------------
// Elements [0, head) and [head + vectors * VEC, numel) go scalar; the rest as
// whole vectors, all operands 16-byte aligned there.
template <class Op, class Out, class In, int K, bool kAnyScalar>
__global__ void __launch_bounds__(kDenseThreads)
dense_kernel(ElementwiseArgs<Out, In, K> args, Op op, int64_t numel, int64_t head, int64_t vectors) {
  constexpr int VEC = kElementwiseVec<Out, In>;
  constexpr int U = kDenseUnroll;
  if constexpr (!kAnyScalar) {  // lets the compiler drop the per-element scalar checks
#pragma unroll
    for (int k = 0; k < K; ++k) args.scalar[k] = false;
  }
  In scalar_value[K];
#pragma unroll
  for (int k = 0; k < K; ++k) scalar_value[k] = args.scalar[k] ? args.in[k][0] : In{};
  // (Every element scalar when the operands cannot be aligned together.)
  for_each_dense_element<VEC, U, Vec<In, VEC>[K]>(
      numel, head, vectors,
      [&](int64_t i) {
        In x[K];
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = args.scalar[k] ? scalar_value[k] : args.in[k][i];
        args.out[i] = apply_op(op, x);
      },
      [&](int64_t v, bool in_range, Vec<In, VEC>(&x)[K]) {
#pragma unroll
        for (int k = 0; k < K; ++k)
          if (in_range && !args.scalar[k]) x[k] = load_vec<In, VEC>(args.in[k] + head + v * VEC);
      },
      [&](int64_t v, const Vec<In, VEC>(&x)[K]) {
        store_vec<Out, VEC>(args.out + head + v * VEC, apply_vector<Out, VEC>(op, x, args.scalar, scalar_value));
      });
}

// ---- rows -------------------------------------------------------------------
// A task is one chunk of one row, done by a group of G threads (G from the
// row length, so short rows do not leave most of a block idle); rows are the
// layout's outer dims. Inner strides are 1, or 0 for a per-row broadcast value.
template <class Op, class Out, class In, int K, class Index>
__global__ void __launch_bounds__(kElementwiseThreads)
rows_kernel(ElementwiseArgs<Out, In, K> args, Op op, OffsetCalc<K + 1, Index> rows, int64_t row_length,
            int64_t chunks_per_row, int64_t tasks, int group_size) {
  constexpr int VEC = kElementwiseVec<Out, In>;
  constexpr int U = kElementwiseUnroll;
  const int64_t chunk = int64_t{group_size} * VEC * U;
  const int groups = blockDim.x / group_size, lane = threadIdx.x % group_size;
  const bool* broadcast = args.scalar;  // here: one value per row
  for (int64_t task = int64_t{blockIdx.x} * groups + threadIdx.x / group_size; task < tasks;
       task += int64_t{gridDim.x} * groups) {
    const int64_t row = task / chunks_per_row;
    const int64_t begin = (task - row * chunks_per_row) * chunk;
    const int64_t end = begin + chunk < row_length ? begin + chunk : row_length;
    int64_t offsets[K + 1];
    rows.get(static_cast<Index>(row), offsets);
    Out* out = args.out + offsets[0];
    const In* in[K];
    In row_value[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      in[k] = args.in[k] + offsets[k + 1];
      row_value[k] = broadcast[k] ? in[k][0] : In{};
    }
    auto element = [&](int64_t i) {
      In x[K];
#pragma unroll
      for (int k = 0; k < K; ++k) x[k] = broadcast[k] ? row_value[k] : in[k][i];
      out[i] = apply_op(op, x);
    };
    // Vectors start where out is 16-byte aligned; an input aligned
    // differently there (e.g. a bias row against odd-width rows) is read
    // element by element into the same vectors. (Reading it as the two
    // aligned 16-byte words its vector straddles, shifted into place, was no
    // faster in 16-bit and slower in float32.)
    int64_t head = elements_to_alignment(out + begin);
    if (head > end - begin) head = end - begin;
    const int64_t vec_begin = begin + head;
    bool aligned[K];
#pragma unroll
    for (int k = 0; k < K; ++k) aligned[k] = (reinterpret_cast<uintptr_t>(in[k] + vec_begin) & 15) == 0;
    const int64_t vectors = (end - vec_begin) / VEC;
    const int64_t vec_end = vec_begin + vectors * VEC;
    for (int64_t i = begin + lane; i < vec_begin; i += group_size) element(i);
    for (int64_t i = vec_end + lane; i < end; i += group_size) element(i);
    // Raw16 (see cuda_types.cuh) keeps every load in flight; the vectors
    // are taken apart only after all of them were issued.
    constexpr int W = kVecWords<In, VEC>;  // words per vector (2 for float -> 16-bit copies)
    Raw16 raw[U][K][W];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = lane + int64_t{u} * group_size;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (v >= vectors || broadcast[k]) continue;
        const In* src = in[k] + vec_begin + v * VEC;
        if (aligned[k]) {
#pragma unroll
          for (int w = 0; w < W; ++w) raw[u][k][w] = load_raw(src + w * (VEC / W));
        } else {
          Vec<In, VEC> tmp;
#pragma unroll
          for (int e = 0; e < VEC; ++e) tmp.v[e] = src[e];
          memcpy(raw[u][k], &tmp, sizeof tmp);
        }
      }
    }
    Vec<In, VEC> x[U][K];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < K; ++k) memcpy(&x[u][k], raw[u][k], sizeof x[u][k]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t v = lane + int64_t{u} * group_size;
      if (v >= vectors) break;
      store_vec<Out, VEC>(out + vec_begin + v * VEC, apply_vector<Out, VEC>(op, x[u], broadcast, row_value));
    }
  }
}

// ---- flat -------------------------------------------------------------------
// out contiguous over the whole layout, so an element's index is its offset
// in out. Inputs laid out like out ("flat") are read as 16-byte vectors at
// the same index, as in `dense`; the others ("gathered": a bias row, one
// value per row, any input whose inner stride is 0 or 1) at offsets from
// the offset calculator, taken once per vector: a vector that stays within
// one inner row reads them as one value (inner stride 0), one aligned
// 16-byte vector, or VEC neighbours; one that crosses a row end finds each
// element's offset again. Such inputs are a row or a column of values that
// every vector re-reads from cache, so their loads cost little DRAM
// traffic; the point is out's and the flat inputs' 16-byte accesses and
// dense's one-shot grid, where `rows` runs a group per row chunk (idle
// lanes on a short last chunk, a scalar read of a bias row whose vectors
// are not aligned with out's) and short rows fall to `strided`.
enum FlatInput : uint8_t {
  kLikeOut,   // laid out like out: offset = the element's index
  kGathered,  // offsets from the calculator
  kPeriodic,  // gathered, stride 0 over every outer dim (a bias row): every row reads the same elements
  kTwoD,      // gathered otherwise, in a 2-D layout (one value per row, sliced rows)
};
// How flat reads input k (operand k + 1) of a coalesced layout.
template <int N>
FlatInput flat_input(const StridedLayout<N>& l, int k) {
  bool gathered = false, periodic = true;
  for (int d = 0; d < l.ndim; ++d) {
    gathered |= l.strides[k + 1][d] != l.strides[0][d];
    if (d < l.ndim - 1) periodic &= l.strides[k + 1][d] == 0;
  }
  return !gathered ? kLikeOut : periodic ? kPeriodic : l.ndim == 2 ? kTwoD : kGathered;
}

template <class Out, class In, int K>
struct FlatArgs {
  Out* out;
  const In* in[K];
  FlatInput gathered[K];
  int64_t inner_stride[K];   // gathered: stride along the innermost dim, 0 or 1
  int64_t inner_size;        // elements along the innermost dim
  int64_t row_step[K];       // kPeriodic / kTwoD: the offset's jump from a row's last element to the next row's first
};

// Input k's VEC elements from index i on (offsets: the calculator's at i,
// operand K = the position along the innermost dim).
template <class In, int VEC, int K, class Index>
__device__ __forceinline__ Vec<In, VEC> gather_vector(const In* base, int64_t stride, int64_t inner_size,
                                                      const OffsetCalc<K + 1, Index>& calc, int k, int64_t i,
                                                      const int64_t (&offsets)[K + 1]) {
  Vec<In, VEC> x;
  const In* p = base + offsets[k];
  if (offsets[K] + VEC <= inner_size) {  // within one inner row
    if (stride == 0) {
      const In value = *p;
#pragma unroll
      for (int e = 0; e < VEC; ++e) x.v[e] = value;
    } else if (aligned16(p)) {
      x = load_vec<In, VEC>(p);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) x.v[e] = p[e];
    }
  } else {  // crosses a row end (every vector does when rows are shorter than VEC)
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      int64_t o[K + 1];
      calc.get(static_cast<Index>(i + e), o);
      x.v[e] = base[o[k]];
    }
  }
  return x;
}

// Rows shorter than a vector (kShortRows, an instantiation of its own so the
// other one compiles as measured): every vector crosses a row end. An input
// whose rows follow one another in a fixed pattern (kPeriodic: the same row
// again; kTwoD: the next row of a 2-D layout) steps its offset along the row
// and by row_step at the row's end, from the calculator's offset at the
// vector's first element, instead of the calculator's division per element.
template <class In, int VEC>
__device__ __forceinline__ Vec<In, VEC> gather_stepped(const In* base, int64_t offset, int64_t stride, int64_t row_step,
                                                       int64_t inner_size, int64_t position) {
  Vec<In, VEC> x;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    x.v[e] = base[offset];
    offset += stride;
    if (++position == inner_size) {
      position = 0;
      offset += row_step;
    }
  }
  return x;
}

template <class Op, class Out, class In, int K, class Index, bool kShortRows>
__global__ void __launch_bounds__(kDenseThreads)
flat_kernel(FlatArgs<Out, In, K> args, Op op, OffsetCalc<K + 1, Index> calc, int64_t numel, int64_t head,
            int64_t vectors) {
  constexpr int VEC = kElementwiseVec<Out, In>;
  constexpr int U = kDenseUnroll;
  const bool no_broadcast[K] = {};
  const In no_value[K] = {};
  for_each_dense_element<VEC, U, Vec<In, VEC>[K]>(
      numel, head, vectors,
      [&](int64_t i) {
        int64_t offsets[K + 1];
        calc.get(static_cast<Index>(i), offsets);
        In x[K];
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = args.in[k][offsets[k]];  // (a flat input's offset is i)
        args.out[i] = apply_op(op, x);
      },
      [&](int64_t v, bool in_range, Vec<In, VEC>(&x)[K]) {
        if (!in_range) return;
        const int64_t i = head + v * VEC;
        int64_t offsets[K + 1];
        calc.get(static_cast<Index>(i), offsets);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          if constexpr (kShortRows) {
            if (args.gathered[k] == kPeriodic || args.gathered[k] == kTwoD) {
              x[k] = gather_stepped<In, VEC>(args.in[k], offsets[k], args.inner_stride[k], args.row_step[k],
                                             args.inner_size, offsets[K]);
              continue;
            }
          }
          x[k] = args.gathered[k] == kLikeOut ? load_vec<In, VEC>(args.in[k] + i)
                                              : gather_vector<In, VEC, K, Index>(args.in[k], args.inner_stride[k],
                                                                                 args.inner_size, calc, k, i, offsets);
        }
      },
      [&](int64_t v, const Vec<In, VEC>(&x)[K]) {
        store_vec<Out, VEC>(args.out + head + v * VEC, apply_vector<Out, VEC>(op, x, no_broadcast, no_value));
      });
}

// ---- strided ----------------------------------------------------------------
template <class Op, class Out, class In, int K, class Index>
__global__ void __launch_bounds__(kElementwiseThreads)
strided_kernel(ElementwiseArgs<Out, In, K> args, Op op, OffsetCalc<K + 1, Index> layout, int64_t numel) {
  constexpr int U = kElementwiseUnroll;
  const int64_t step = int64_t{gridDim.x} * blockDim.x * U;
  for (int64_t base = int64_t{blockIdx.x} * blockDim.x * U + threadIdx.x; base < numel; base += step) {
    In x[U][K];
    int64_t out_offset[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t{u} * blockDim.x;
      if (i >= numel) break;
      int64_t offsets[K + 1];
      layout.get(static_cast<Index>(i), offsets);
      out_offset[u] = offsets[0];
#pragma unroll
      for (int k = 0; k < K; ++k) x[u][k] = args.in[k][offsets[k + 1]];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t{u} * blockDim.x;
      if (i >= numel) break;
      args.out[out_offset[u]] = apply_op(op, x[u]);
    }
  }
}

// ---- planning and launch ----------------------------------------------------
enum class ElementwiseKind { kDense, kRows, kFlat, kStrided };

// Below this row length the rows kernel leaves most threads idle.
constexpr int64_t kMinRowLength = 64;

// flat: more than one dim, out contiguous over all of them, every input's
// inner stride 0 or 1.
template <int N>
bool flat_layout(const StridedLayout<N>& l) {
  if (l.ndim < 2) return false;
  int64_t contiguous = 1;  // out's stride for a contiguous layout
  for (int d = l.ndim - 1; d >= 0; --d) {
    if (l.strides[0][d] != contiguous) return false;
    contiguous *= l.shape[d];
  }
  for (int k = 1; k < N; ++k)
    if (l.inner_stride(k) != 0 && l.inner_stride(k) != 1) return false;
  return true;
}

// flat instead of rows / strided where their rows cannot be whole 16-byte
// vectors (`vector` elements): rows too short for `rows` (under 64 elements)
// and, in float32, rows that are not a whole number of vectors: there flat
// keeps 16-byte accesses where rows / strided cannot. On whole-vector rows
// `rows` stays (faster in 16-bit, level in float32).
// OPRT_TUNE_ELEMENTWISE_FLAT (tests): 1 = flat wherever it applies, 0 = never.
template <int N>
ElementwiseKind choose_elementwise_kind(const StridedLayout<N>& l, int vector) {
  bool dense = l.ndim <= 1 && l.inner_stride(0) == 1;
  for (int k = 1; k < N; ++k) dense &= l.ndim <= 1 && (l.inner_stride(k) == 1 || l.inner_stride(k) == 0);
  if (dense) return ElementwiseKind::kDense;
  bool rows = l.ndim >= 2 && l.inner_stride(0) == 1 && l.inner_size() >= kMinRowLength;
  for (int k = 1; k < N; ++k) rows &= l.inner_stride(k) == 1 || l.inner_stride(k) == 0;
  const int64_t flat_told = tuned("ELEMENTWISE_FLAT", -1);
  if (flat_told != 0 && flat_layout(l)) {
    // (below a vector only where no input needs the calculator per element:
    // with it, flat was slower than strided on 3-wide rows; stepped along a
    // 2-D layout (kTwoD) instead, it is faster)
    bool short_rows = l.inner_size() < kMinRowLength;
    for (int k = 0; k + 1 < N && l.inner_size() < vector; ++k) {
      const FlatInput kind = flat_input(l, k);
      short_rows &= kind == kLikeOut || kind == kPeriodic || kind == kTwoD;
    }
    // (rows not whole vectors: float32 only; in 16-bit rows is as fast or
    // faster)
    const bool odd_rows = rows && l.inner_size() % vector != 0 && vector <= 4;
    if (flat_told == 1 || short_rows || odd_rows) return ElementwiseKind::kFlat;
  }
  return rows ? ElementwiseKind::kRows : ElementwiseKind::kStrided;
}

inline const char* elementwise_kind_name(ElementwiseKind kind) {
  switch (kind) {
    case ElementwiseKind::kDense: return "dense";
    case ElementwiseKind::kRows: return "rows";
    case ElementwiseKind::kFlat: return "flat";
    default: return "strided";
  }
}

// Runs out = op(inputs...) over layout (operand 0 = out) on `stream`.
template <class Op, class Out, class In, int K>
void launch_elementwise(ElementwiseKind kind, const StridedLayout<K + 1>& layout, Op op, Out* out,
                        const In* const (&inputs)[K], cudaStream_t stream) {
  constexpr int VEC = kElementwiseVec<Out, In>;
  constexpr int U = kElementwiseUnroll;
  const int64_t numel = layout.numel();
  if (numel == 0) return;
  ElementwiseArgs<Out, In, K> args;
  args.out = out;
  for (int k = 0; k < K; ++k) {
    args.in[k] = inputs[k];
    args.scalar[k] = layout.inner_stride(k + 1) == 0;
  }
  const int blocks_per_sm = 2048 / kElementwiseThreads;
  if (kind == ElementwiseKind::kDense) {
    // Peel a head that aligns out; vectors only if every streamed input is then aligned too.
    int64_t head = elements_to_alignment(out);
    bool aligned = head < numel;  // else everything goes scalar
    for (int k = 0; k < K; ++k)
      if (!args.scalar[k]) aligned &= aligned16(inputs[k] + head);
    if (!aligned) head = numel;
    const int64_t vectors = (numel - head) / VEC;
    const int64_t scalars = numel - vectors * VEC;
    const int64_t tasks = ceil_div(vectors > scalars ? vectors : scalars, int64_t{kDenseThreads} * kDenseUnroll);
    const unsigned grid = grid_one_shot(tasks);
    bool any_scalar = false;
    for (int k = 0; k < K; ++k) any_scalar |= args.scalar[k];
    if (any_scalar)
      dense_kernel<Op, Out, In, K, true><<<grid, kDenseThreads, 0, stream>>>(args, op, numel, head, vectors);
    else
      dense_kernel<Op, Out, In, K, false><<<grid, kDenseThreads, 0, stream>>>(args, op, numel, head, vectors);
    check_launch("dense elementwise kernel");
    return;
  }
  if (kind == ElementwiseKind::kRows) {
    const StridedLayout<K + 1> outer = outer_dims(layout);
    const int64_t rows = outer.numel(), length = layout.inner_size();
    int group = 32;  // threads per task: enough to cover the row in one chunk, 32..256
    while (group < kElementwiseThreads && int64_t{group} * VEC * U < length) group *= 2;
    const int64_t chunks = ceil_div(length, int64_t{group} * VEC * U);
    const int64_t tasks = rows * chunks;
    dispatch_index(rows, [&](auto index) {
      using Index = decltype(index);
      const unsigned grid = grid_for(ceil_div(tasks, kElementwiseThreads / group), blocks_per_sm, 4);
      rows_kernel<Op, Out, In, K, Index><<<grid, kElementwiseThreads, 0, stream>>>(
          args, op, OffsetCalc<K + 1, Index>(outer), length, chunks, tasks, group);
      check_launch("rows elementwise kernel");
    });
    return;
  }
  if (kind == ElementwiseKind::kFlat) {
    FlatArgs<Out, In, K> flat;
    flat.out = out;
    flat.inner_size = layout.inner_size();
    // The calculator's operands: the K inputs, then the position along the innermost dim.
    StridedLayout<K + 1> offsets;
    for (int d = 0; d < layout.ndim; ++d) {
      int64_t strides[K + 1];
      for (int k = 0; k < K; ++k) strides[k] = layout.strides[k + 1][d];
      strides[K] = d == layout.ndim - 1 ? 1 : 0;
      offsets.push_dim(layout.shape[d], strides);
    }
    // Peel a head that aligns out; vectors only if every flat input is then aligned too.
    int64_t head = elements_to_alignment(out);
    bool aligned = head < numel;  // else everything goes scalar
    for (int k = 0; k < K; ++k) {
      flat.in[k] = inputs[k];
      flat.inner_stride[k] = layout.inner_stride(k + 1);
      flat.gathered[k] = flat_input(layout, k);
      // (periodic: the next row's start is the same 0 the outer strides give; 2-D: the outer stride)
      const int64_t row_end = layout.inner_size() * layout.inner_stride(k + 1);  // a row's end, from its start
      flat.row_step[k] = (layout.ndim >= 2 ? layout.strides[k + 1][layout.ndim - 2] : 0) - row_end;
      if (flat.gathered[k] == kLikeOut) aligned &= aligned16(inputs[k] + head);
    }
    if (!aligned) head = numel;
    const int64_t vectors = (numel - head) / VEC;
    const int64_t scalars = numel - vectors * VEC;
    const int64_t tasks = ceil_div(vectors > scalars ? vectors : scalars, int64_t{kDenseThreads} * kDenseUnroll);
    dispatch_index(numel, [&](auto index) {
      using Index = decltype(index);
      const OffsetCalc<K + 1, Index> calc(offsets);
      const unsigned grid = grid_one_shot(tasks);
      if (flat.inner_size < VEC)
        flat_kernel<Op, Out, In, K, Index, true><<<grid, kDenseThreads, 0, stream>>>(flat, op, calc, numel, head,
                                                                                      vectors);
      else
        flat_kernel<Op, Out, In, K, Index, false><<<grid, kDenseThreads, 0, stream>>>(flat, op, calc, numel, head,
                                                                                       vectors);
      check_launch("flat elementwise kernel");
    });
    return;
  }
  dispatch_index(numel, [&](auto index) {
    using Index = decltype(index);
    const unsigned grid = grid_for(ceil_div(numel, int64_t{kElementwiseThreads} * U), blocks_per_sm, 4);
    strided_kernel<Op, Out, In, K, Index><<<grid, kElementwiseThreads, 0, stream>>>(
        args, op, OffsetCalc<K + 1, Index>(layout), numel);
    check_launch("strided elementwise kernel");
  });
}

}  // namespace oprt::nvidia

#endif
