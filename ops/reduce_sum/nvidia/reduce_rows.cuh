// Private to reduce_sum_nvidia.cu: the kernels of sums along contiguous
// runs (rows, rows_dense, rows_aligned, rows_short) and the kernel that adds a split
// row's partials. The plan that picks among them is in reduce_sum_nvidia.cu.
#ifndef OPRT_REDUCE_SUM_NVIDIA_ROWS_CUH_
#define OPRT_REDUCE_SUM_NVIDIA_ROWS_CUH_

#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/group_reduce.cuh"
#include "../../common/nvidia/launch.cuh"
#include "../../common/nvidia/long_sum.cuh"
#include "../../common/nvidia/offset_calc.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kUnroll = 4;          // rows: vectors in flight per thread
constexpr int kRowsBlock = 256;     // rows: threads per block, and the most threads per output
constexpr int kShortVectors = 2;    // rows_short: 16-byte vectors per lane (a row is at most 32 lanes of them)


// ---- rows -------------------------------------------------------------------
struct RowsArgs {
  int64_t rows, runs, run_length, run_stride, splits, split_len;
  float* partials;  // splits > 1: one float per (row, split)
};

// A 16-byte vector's sum as a pairwise tree.
template <class T>
__device__ __forceinline__ float vector_sum(const Raw16& raw) {
  float x[kVec16<T>];
  raw_to_floats<T>(raw, x);  // all-zero bits are 0.0 in every dtype
  return tree_sum(x);
}

// A round of U vectors summed as a pairwise tree, to be added into a
// thread's compensated sum of its rounds (long_sum.cuh): however many rounds
// a thread takes, its sum's error stays within a few roundings (a plain
// running sum per unroll slot drifted by up to a rounding a round). The
// compensation costs a few adds a round, and the round's loads are in
// flight before any of them.
template <class T, int U>
__device__ __forceinline__ float round_sum(const Raw16 (&raw)[U]) {
  float part[U];
#pragma unroll
  for (int u = 0; u < U; ++u) part[u] = vector_sum<T>(raw[u]);
  return tree_sum(part);
}

// A thread's slots of shared memory in reduce_rows_kernel: a compensated
// sum (long_sum.cuh) at slot[0], its compensation at slot[kSlotStride].
// Volatile, so that no register is held for them across the row loops.
constexpr int kSlotStride = kRowsBlock;

// Sums p[e0..e1) (stride 1) or p[(e0..e1) * stride] across the group's lanes.
// `slot`: where a strided run's top level goes (only a strided call uses it).
template <class T, int TPR, int U>
__device__ __forceinline__ float sum_run(const T* p, int64_t e0, int64_t e1, int64_t stride, int lane,
                                         volatile float* slot = nullptr) {
  constexpr int VEC = kVec16<T>;
  float acc = 0.0f;
  if (stride == 0) {  // a broadcast run: the lane's copies of one value, one rounding
    const int64_t count = e0 + lane < e1 ? (e1 - e0 - lane + TPR - 1) / TPR : 0;
    return count > 0 ? to_float(p[0]) * static_cast<float>(count) : 0.0f;
  }
  if (stride != 1) {
    // Blocks of 16 elements folded into a second level, blocks of 256 into
    // a compensated third in `slot`: a lane's serial chains stay short on
    // long runs, and the third level takes no register.
    float block = 0.0f, blocks = 0.0f;
    slot[0] = slot[kSlotStride] = 0.0f;
    int n = 0;
    for (int64_t e = e0 + lane; e < e1; e += TPR) {
      block += to_float(p[e * stride]);
      if ((++n & 15) == 0) {
        blocks += block;
        block = 0.0f;
        if ((n & 255) == 0) compensated_add(slot, slot + kSlotStride, blocks), blocks = 0.0f;
      }
    }
    compensated_add(slot, slot + kSlotStride, blocks + block);
    return slot[0] - slot[kSlotStride];
  }
  const int64_t head = min(e1 - e0, elements_to_alignment(p + e0));
  const int64_t a = e0 + head;
  const int64_t vectors = (e1 - a) / VEC;
  const int64_t tail = a + vectors * VEC;
  for (int64_t e = e0 + lane; e < a; e += TPR) acc += to_float(p[e]);
  for (int64_t e = tail + lane; e < e1; e += TPR) acc += to_float(p[e]);
  const T* body = p + a;
  LongSum rounds;
  for (int64_t v = lane; v < vectors; v += int64_t{TPR} * U) {
    Raw16 raw[U];  // all loads first (converted after: see Raw16)
#pragma unroll
    for (int u = 0; u < U; ++u)
      raw[u] = v + int64_t{u} * TPR < vectors ? load_raw(body + (v + int64_t{u} * TPR) * VEC) : Raw16{};
    rounds.add(round_sum<T>(raw));
  }
  return acc + rounds.value();
}

template <class T, int TPR, int U, class Index>
__global__ void reduce_rows_kernel(T* out, const T* src, OffsetCalc<2, Index> kept, OffsetCalc<1, Index> run_outer,
                                   RowsArgs args) {
  __shared__ float slots[kMaxWarps];
  __shared__ float slots_of_sums[4 * kSlotStride];  // a thread's two compensated sums (kSlotStride)
  allow_early_launch();  // (the finishing kernel waits for this whole grid anyway)
  const int groups = blockDim.x / TPR, group = threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const int64_t tasks = args.rows * args.splits;
  // The loop bound is the same for the whole block: group_allreduce may sync.
  for (int64_t base = int64_t{blockIdx.x} * groups; base < tasks; base += int64_t{gridDim.x} * groups) {
    const int64_t task = base + group;
    float acc = 0.0f;
    int64_t offsets[2] = {0, 0};
    if (task < tasks) {
      const int64_t row = task / args.splits, split = task - row * args.splits;
      kept.get(static_cast<Index>(row), offsets);
      const T* row_src = src + offsets[1];
      volatile float* runs_slot = slots_of_sums + threadIdx.x;  // (blockDim.x is kRowsBlock)
      volatile float* run_slot = runs_slot + 2 * kSlotStride;
      if (args.runs == 1) {
        const int64_t e0 = split * args.split_len;
        acc = sum_run<T, TPR, U>(row_src, e0, min(args.run_length, e0 + args.split_len), args.run_stride, lane,
                                 run_slot);
      } else {
        // The runs' sums compensated in runs_slot: a task may add millions
        // of runs (a broadcast run inside real ones).
        const int64_t r0 = split * args.split_len, r1 = min(args.runs, r0 + args.split_len);
        runs_slot[0] = runs_slot[kSlotStride] = 0.0f;
        for (int64_t r = r0; r < r1; ++r) {
          int64_t run[1];
          run_outer.get(static_cast<Index>(r), run);
          compensated_add(runs_slot, runs_slot + kSlotStride,
                          sum_run<T, TPR, U>(row_src + run[0], 0, args.run_length, args.run_stride, lane, run_slot));
        }
        acc = runs_slot[0] - runs_slot[kSlotStride];
      }
    }
    acc = group_allreduce<TPR>(acc, SumOp{}, slots);
    if (task < tasks && lane == 0) {
      if (args.splits == 1) out[offsets[0]] = from_float<T>(acc);
      else args.partials[task] = acc;
    }
  }
}

// Row offsets where the kept dims are at most one (rows_dense, rows_short).
struct RowStrides {
  bool used;         // the kept dims are at most one: offsets are row * stride
  int64_t out, src;  // that dim's strides
};

// ---- rows_dense -------------------------------------------------------------
// Every output's reduced elements one contiguous run (runs == 1, stride 1):
// the rows kernel without its run loop and strided path, always 8 vectors in
// flight per thread, 4 blocks of 256 threads per SM (<= 64 registers). The
// row offset is one multiply where the kept dims are at most one, and out's
// offset is found again after the sum instead of held across it. Not held
// to 32 registers: there the compiler converts the first vectors before the
// last loads issue.
struct DenseRowsArgs {
  int64_t rows, run_length, splits, split_len;
  float* partials;  // splits > 1: one float per (row, split)
};

template <class Index>
__device__ __forceinline__ int64_t kept_offset(const OffsetCalc<2, Index>& kept, RowStrides strides, int64_t row,
                                               int operand) {
  if (strides.used) return row * (operand == 0 ? strides.out : strides.src);
  int64_t offsets[2];
  kept.get(static_cast<Index>(row), offsets);
  return offsets[operand];
}

constexpr int kDenseUnroll = 8;

template <class T, int TPR, class Index>
__global__ void __launch_bounds__(kRowsBlock, 1024 / kRowsBlock)
reduce_dense_rows_kernel(T* out, const T* src, OffsetCalc<2, Index> kept, RowStrides row_strides,
                         DenseRowsArgs args) {
  __shared__ float slots[kMaxWarps];
  allow_early_launch();  // (the finishing kernel waits for this whole grid anyway)
  constexpr int kGroups = kRowsBlock / TPR;
  const int group = threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const int64_t tasks = args.rows * args.splits;
  // The loop bound is the same for the whole block: group_allreduce may sync.
  for (int64_t base = int64_t{blockIdx.x} * kGroups; base < tasks; base += int64_t{gridDim.x} * kGroups) {
    const int64_t task = base + group;
    float acc = 0.0f;
    if (task < tasks) {
      const int64_t row = args.splits == 1 ? task : task / args.splits;
      const int64_t e0 = (task - row * args.splits) * args.split_len;
      const T* row_src = src + kept_offset(kept, row_strides, row, 1);
      acc = sum_run<T, TPR, kDenseUnroll>(row_src, e0, min(args.run_length, e0 + args.split_len), 1, lane);
    }
    acc = group_allreduce<TPR>(acc, SumOp{}, slots);
    if (task < tasks && lane == 0) {
      if (args.splits == 1) out[kept_offset(kept, row_strides, task, 0)] = from_float<T>(acc);
      else args.partials[task] = acc;
    }
  }
}

// ---- rows_aligned -----------------------------------------------------------
// rows_dense's commonest case at its leanest: kept dims at most one (a row's
// offset is one multiply), every row starting 16-byte aligned and, unsplit,
// a whole number of rounds of TPR lanes x U vectors (U: 32 elements, 8
// vectors in float32, 4 in 16-bit, as planned); split, each piece is whole
// rounds but a row's last, which alone takes a bounds-checked round. So the
// loop has no head, tail or per-load check and holds 45-62 registers where
// rows_dense holds 64, at the same 4 blocks per SM (more blocks at 32
// registers gained nothing: occupancy is not what limits these sums).
// Its loads mark their lines first to leave L2 (each element is read once),
// as Inductor's reductions do: after a kernel that wrote, L2 is full of
// dirty lines, and loads that evict them wait for their write-back where
// loads that recycle their own lines do not (docs/performance.md).
struct AlignedRowsArgs {
  int64_t rows, out_stride, src_stride, splits;
  int vectors_per_split;  // a whole number of rounds where splits > 1
  int64_t vectors;        // per row
  float* partials;        // splits > 1: one float per (row, split)
};

template <class T, int TPR, int U>
__global__ void __launch_bounds__(kRowsBlock, 1024 / kRowsBlock)
reduce_aligned_rows_kernel(T* out, const T* src, AlignedRowsArgs args) {
  __shared__ float slots[kMaxWarps];
  allow_early_launch();  // (the finishing kernel waits for this whole grid anyway)
  constexpr int kGroups = kRowsBlock / TPR, kRound = TPR * U;
  const int group = threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const int64_t tasks = args.rows * args.splits;
  // The loop bound is the same for the whole block: group_allreduce may sync.
  for (int64_t base = int64_t{blockIdx.x} * kGroups; base < tasks; base += int64_t{gridDim.x} * kGroups) {
    const int64_t task = base + group;
    LongSum rounds;
    if (task < tasks) {
      const int64_t row = args.splits == 1 ? task : task / args.splits;
      const int64_t first = (task - row * args.splits) * args.vectors_per_split;
      const int count = static_cast<int>(min(int64_t{args.vectors_per_split}, args.vectors - first));
      const int whole = count - count % kRound;
      const Raw16* p = reinterpret_cast<const Raw16*>(src + row * args.src_stride) + first + lane;
      const uint64_t policy = l2_evict_first_policy();
      // One round from vector v: every load first (converted after: see Raw16).
      const auto round = [&](int v, bool bounded) {
        Raw16 raw[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          raw[u] = !bounded || v + u * TPR + lane < count ? load_raw_evict_first(p + v + u * TPR, policy) : Raw16{};
        rounds.add(round_sum<T>(raw));
      };
      for (int v = 0; v < whole; v += kRound) round(v, false);
      if (whole < count) round(whole, true);  // a split row's last piece
    }
    const float acc = group_allreduce<TPR>(rounds.value(), SumOp{}, slots);
    if (task < tasks && lane == 0) {
      if (args.splits == 1) out[task * args.out_stride] = from_float<T>(acc);
      else args.partials[task] = acc;
    }
  }
}

// ---- rows_short -------------------------------------------------------------
// Many short rows, each starting 16-byte aligned and `vectors` whole 16-byte
// vectors long (vectors <= LANES * kShortVectors): LANES lanes per row, each
// loading vectors j * LANES + lane (a group reads LANES * 16 contiguous bytes
// per load), ROWS rows per group, every load of a lane in flight before any
// add: the shape of TileLang's group_rows, which reads many short rows
// faster than `rows` does. On a row of a few hundred bytes `rows` spends
// instructions its loads do not amortize (head and tail loops, the loop
// over rounds, a 64-bit division of the task index), holds 55 registers (4 of 8 blocks per SM resident) and strides 2
// resident grids over the rows. Here a row offset is one multiply where the
// kept dims are one (`row_strides`; else the offset calculator), the kernel
// keeps to 32 registers, and the grid is a block per task, as in softmax's
// rows_warp_dense, which streams faster so (the grid-stride loop runs only
// past 2^31 - 1 blocks or, for the tests, with OPRT_TUNE_REDUCE_SHORT_WAVES).

template <class T, int LANES, int ROWS, class Index>
__global__ void __launch_bounds__(kRowsBlock, 2048 / kRowsBlock)  // <= 32 registers: 8 blocks per SM
reduce_short_rows_kernel(T* out, const T* src, OffsetCalc<2, Index> kept, RowStrides row_strides, int64_t rows,
                         int vectors) {
  constexpr int VEC = kVec16<T>;
  constexpr int kGroups = kRowsBlock / LANES;
  constexpr int kBlockRows = kGroups * ROWS;
  const int group = threadIdx.x / LANES, lane = threadIdx.x % LANES;
  // The loop bound is the same for the whole block: the group sum shuffles across the warp.
  for (int64_t base = int64_t{blockIdx.x} * kBlockRows; base < rows; base += int64_t{gridDim.x} * kBlockRows) {
    Raw16 raw[ROWS][kShortVectors];
    int64_t out_offsets[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      // Row r * kGroups + group: a warp's lanes read neighbouring rows together.
      const int64_t row = base + r * kGroups + group;
      int64_t offsets[2] = {row * row_strides.out, row * row_strides.src};
      if (!row_strides.used && row < rows) kept.get(static_cast<Index>(row), offsets);
      out_offsets[r] = offsets[0];
      const T* p = src + offsets[1];
#pragma unroll
      for (int j = 0; j < kShortVectors; ++j) {
        const int v = j * LANES + lane;
        raw[r][j] = row < rows && v < vectors ? load_raw(p + v * VEC) : Raw16{};
      }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      float part[kShortVectors];
#pragma unroll
      for (int j = 0; j < kShortVectors; ++j) part[j] = vector_sum<T>(raw[r][j]);
      const float sum = group_allreduce<LANES>(tree_sum(part), SumOp{}, nullptr);
      if (base + r * kGroups + group < rows && lane == 0) out[out_offsets[r]] = from_float<T>(sum);
    }
  }
}

// out[row] = sum of its `splits` partials: F threads per row (a warp, or up
// to the whole block where the rows are few and the splits many), each
// adding a fixed subset of them with 4 loads in flight, then a fixed tree
// across the F, so the order is the same on every run. (One warp over the
// hundreds of partials of a long sum is 17 dependent rounds of L2 loads a
// lane.)
constexpr int kFinishThreads = 256;

template <class T, int F, class Index>
__global__ void __launch_bounds__(kFinishThreads)
finish_rows_kernel(T* out, const float* partials, OffsetCalc<2, Index> kept, int64_t rows, int64_t splits) {
  __shared__ float slots[kMaxWarps];
  wait_for_prior_grid();
  constexpr int kRowsPerBlock = kFinishThreads / F;
  const int lane = threadIdx.x % F;
  // The loop bound is the same for the whole block: group_allreduce may sync.
  for (int64_t base = int64_t{blockIdx.x} * kRowsPerBlock; base < rows; base += int64_t{gridDim.x} * kRowsPerBlock) {
    const int64_t row = base + threadIdx.x / F;
    LongSum sum;  // (compensated: long_sum.cuh)
    if (row < rows) {
      const float* p = partials + row * splits;
#pragma unroll 4
      for (int64_t j = lane; j < splits; j += F) sum.add(p[j]);
    }
    const float acc = group_allreduce<F>(sum.value(), SumOp{}, slots);
    if (row < rows && lane == 0) {
      int64_t offsets[2];
      kept.get(static_cast<Index>(row), offsets);
      out[offsets[0]] = from_float<T>(acc);
    }
  }
}

}  // namespace
}  // namespace oprt::nvidia

#endif  // OPRT_REDUCE_SUM_NVIDIA_ROWS_CUH_
