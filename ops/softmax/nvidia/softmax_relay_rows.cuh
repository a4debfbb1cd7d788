// Private to softmax_nvidia.cu: rows_relay, few long rows taken one after
// another by the whole GPU, so that one row's write overlaps the next rows'
// reads (sm_90).
//
// rows_resident reads every row at once, waits at a grid-wide barrier, then
// writes: DRAM idles while the last chunks are reduced, the barrier
// resolves and the rows' (max, sum) are merged (about 4.5 of its 24 us on
// 4 x 4M bf16, docs/data/nvidia-h200-2026-12-04r-softmax-resident-phases.txt),
// and the write phase runs with no reads beside it. Here every block of a
// one-block-per-SM cooperative grid takes the same chunk (its index) of
// every row, rows in order, through a ring of `ring_slots` shared-memory
// slots that bulk copies (TMA) fill ahead: a block reduces row r's chunk,
// publishes its (max, sum) with an arrival on row r's counter in the
// workspace, and only then waits for row r - 1's other chunks (a whole row
// later, so the wait is short), merges them, writes row r - 1 out of its
// slot and refills the slot with row r - 1 + ring_slots. (A first version
// waited for row r itself, writing row r - 1 meanwhile: the wait, the merge
// and the next row's reduction then chained across the grid every row,
// about 5 us each on an H100, 58 us on 4 x 4M bf16 against rows_resident's
// 32.) No grid-wide barrier after the first one, which orders the zeroing
// of the counters (the workspace comes uninitialized) while the first
// copies are in flight. With `groups` > 1 the grid splits into that many
// groups of blocks, group g relaying rows g, g + groups, ...: fewer blocks
// wait on each row, and each waits on fewer rows.
#ifndef OPRT_SOFTMAX_NVIDIA_RELAY_ROWS_CUH_
#define OPRT_SOFTMAX_NVIDIA_RELAY_ROWS_CUH_

#include "../../common/nvidia/bulk_copy.cuh"
#include "../../common/nvidia/global_memory.cuh"
#include "softmax_long_rows.cuh"
#include "softmax_math.cuh"

namespace oprt::nvidia {
namespace {

constexpr int kRelayThreads = kResidentThreads;
constexpr int kMaxRelaySlots = 8;

struct RelayArgs {
  int64_t nrows, length, out_stride;
  int64_t groups;         // groups of blocks, each relaying every groups-th row
  int64_t group_blocks;   // blocks per group (the grid: groups x group_blocks)
  int64_t chunk;          // elements of a row per block (whole vectors): rank k takes [k * chunk, (k + 1) * chunk)
  int ring_slots;         // rows in shared memory at once (2..kMaxRelaySlots)
  int64_t slot_vectors;   // 16-byte vectors a slot holds; the rest of a chunk is read twice
  Stats* partials;        // [row][rank in its group]
  unsigned* arrivals;     // per row, the blocks done with its stats (group_blocks once they all are)
  bool evict_first;       // the write pass marks its lines first to leave L2
};

// kPerSM: blocks resident on an SM (1 or 2). With 2 and `groups` 2, each SM
// holds a block of each group, so one group's stats and arrival overlap the
// other's write on the same SM.
template <class T, class Index, int kPerSM>
__global__ void __launch_bounds__(kRelayThreads, kPerSM)
softmax_relay_kernel(T* out, const T* src, OffsetCalc<2, Index> rows, RelayArgs args) {
#if __CUDA_ARCH__ >= 900
  constexpr int VEC = kVec16<T>, U = kResidentUnroll;
  extern __shared__ Raw16 ring[];            // ring_slots x slot_vectors
  __shared__ uint64_t landed[kMaxRelaySlots];  // one mbarrier per slot
  __shared__ Stats slots[kMaxWarps];
  const int64_t group = blockIdx.x / args.group_blocks, rank = blockIdx.x % args.group_blocks;
  const int64_t count = group < args.nrows ? ceil_div(args.nrows - group, args.groups) : 0;  // the group's rows
  // The block's chunk of the group's i-th row: [c0, c1), its first aligned
  // element a, the `cached` vectors from a on that go through the ring, the
  // rest from `rest` on.
  struct Chunk {
    const T* p;
    T* q;
    int64_t row, c0, c1, a, cached, rest;
  };
  const auto chunk_of = [&](int64_t i) {
    Chunk c;
    c.row = group + i * args.groups;
    int64_t offsets[2];
    rows.get(static_cast<Index>(c.row), offsets);
    c.p = src + offsets[1];
    c.q = out + offsets[0];
    c.c0 = min(args.length, rank * args.chunk);
    c.c1 = min(args.length, c.c0 + args.chunk);
    c.a = first_aligned(c.p, c.c0, c.c1);
    c.cached = min((c.c1 - c.a) / VEC, args.slot_vectors);
    c.rest = c.a + c.cached * VEC;
    return c;
  };
  const auto slot_of = [&](int64_t i) { return static_cast<int>(i % args.ring_slots); };
  const auto fill = [&](int64_t i) {  // thread 0
    const Chunk c = chunk_of(i);
    if (c.cached > 0)
      bulk_copy_to_shared(ring + slot_of(i) * args.slot_vectors, c.p + c.a, static_cast<uint32_t>(c.cached * 16),
                          &landed[slot_of(i)]);
  };
  if (threadIdx.x == 0) {
    init_landed(landed, args.ring_slots);
    for (int64_t i = 0; i < min(count, int64_t{args.ring_slots}); ++i) fill(i);
  }
  if (blockIdx.x == 0)
    for (int64_t r = threadIdx.x; r < args.nrows; r += kRelayThreads) args.arrivals[r] = 0;
  cg::this_grid().sync();  // the counters are zero before any block arrives; the barriers are initialized
  uint32_t parity = 0;     // bit s: the phase of slot s's barrier that its next copy completes
  // The group's i-th row, once every block has arrived for it: its chunks'
  // (max, sum) merged, this block's chunk written out of its slot, the slot
  // refilled with the row `ring_slots` later.
  const auto finish_row = [&](int64_t i) {
    const Chunk c = chunk_of(i);
    if (threadIdx.x == 0) wait_arrivals(&args.arrivals[c.row], static_cast<unsigned>(args.group_blocks));
    __syncthreads();
    const Stats scale = row_scale<true>(args.partials + c.row * args.group_blocks, args.group_blocks, slots);
    write_held_chunk<T, U, kRelayThreads>(c.q, c.p, c.c0, c.a, c.rest, c.c1, ring + slot_of(i) * args.slot_vectors,
                                          c.cached, scale, args.out_stride, args.evict_first);
    if (i + args.ring_slots < count) {
      __syncthreads();  // every thread is done with the slot
      if (threadIdx.x == 0) {
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the threads' reads before the copy's writes
        fill(i + args.ring_slots);
      }
    }
  };
  for (int64_t i = 0; i < count; ++i) {
    const Chunk c = chunk_of(i);
    Stats st{-INFINITY, 0.0f};
    const auto stats_scalar = [&](int64_t e) {
      const float x[1] = {to_float(c.p[e])};
      update(st, x);
    };
    for (int64_t e = c.c0 + threadIdx.x; e < c.a; e += kRelayThreads) stats_scalar(e);
    visit_chunk<false, U, kRelayThreads>(
        c.p, c.rest, c.c1,
        [&](const Raw16 (&raw)[U], const bool (&ok)[U], const int64_t (&)[U]) { update_round<T>(st, raw, ok); },
        stats_scalar);
    if (c.cached > 0) {
      const int s = slot_of(i);
      wait_landed(&landed[s], (parity >> s) & 1u);
      parity ^= 1u << s;
      const Raw16* held = ring + s * args.slot_vectors;
      for (int64_t first = 0; first < c.cached; first += int64_t{kRelayThreads} * U)
        update_from_shared<T, U, kRelayThreads>(st, held, first, c.cached);
    }
    st = block_merge(st, slots);
    if (threadIdx.x == 0) {
      args.partials[c.row * args.group_blocks + rank] = st;
      signal_arrival(&args.arrivals[c.row]);
    }
    // The row before, a whole row after this block arrived for it: by now
    // the other blocks have most likely arrived too.
    if (i > 0) finish_row(i - 1);
  }
  if (count > 0) finish_row(count - 1);
#else
  __trap();  // planned only on sm_90 and newer
#endif
}

}  // namespace
}  // namespace oprt::nvidia

#endif
