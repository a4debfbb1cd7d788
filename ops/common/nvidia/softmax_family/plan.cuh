// The softmax family on NVIDIA GPUs (softmax, log_softmax: one layer, an
// epilogue apart; see math.cuh), computed in float, rounded once on store.
// The backend-neutral plan (common/softmax_plan.h) gives the normalized dim
// (length, strides) and the other dims coalesced ("rows"); this file picks
// a variant and its launch shape (create). Variants:
//   rows_warp / rows_block  src contiguous along the dim and the row fits in
//            registers (up to 16K float32 / 32K 16-bit elements): a group of
//            threads per row (a few lanes of a warp, or a whole block) reads
//            the row once into registers, in its own dtype, and keeps it
//            through max, sum and output, writes it once. exp(x - max) stays
//            in float registers too where they hold it (float32, and 16-bit
//            rows up to 16K); longer 16-bit rows recompute it on the way out.
//            Dense rows (back to back in both tensors, bases equally
//            aligned at execute) run a kernel without the general layout's
//            offsets and per-vector alignment tests (_dense)
//   rows_stream  rows_block for many aligned rows where it keeps few
//            blocks per SM (sm_90): a resident grid, each block's next row
//            bulk-copied (TMA) into shared memory while it works on this one
//   rows_cluster<C>  rows up to 8x longer (4x when there are more rows
//            than SMs): a cluster of C blocks per row, each holding a
//            slice in registers; the blocks exchange their max and sum
//            through distributed shared memory
//   rows_split  longer rows still: one cooperative kernel; pass 1 computes
//            (max, sum) per chunk into the workspace, a grid-wide barrier,
//            pass 2 merges a row's chunks and writes, reading in reverse
//   rows_split2  the same passes as two launches of a block per (row,
//            chunk) task, the second launched early (sm_90)
//   rows_twice  many long rows: a block per row reads it twice, the second
//            time (walking backwards) partly from L2, marking what it
//            reads and writes first to leave L2; float32 rows past 256 KB
//            per SM keep their first ~110-220 KB in shared memory between
//            the passes; no workspace
//   rows_shared<C>  the long rows above (twice, cluster, resident, split)
//            up to 1.25 MiB, out's rows at src's alignment (sm_90): a
//            cluster of C blocks per row, each bulk-copying its slice (<=
//            80 KB) into shared memory, so src is read once; max and sum
//            exchanged across the cluster. The plan under it runs where
//            the bases are not equally aligned
//   rows_resident  the same for no more rows than SMs (sm_90), each
//            chunk's first ~224 KB kept in shared memory between the
//            passes, brought in by bulk copies or (rows_resident_copies,
//            chunks of 1.5 times that or more) each thread's own copies
//   columns  the dim is not the contiguous one (e.g. dim 0): threads along
//            the contiguous dim, an online (max, sum) per column down the
//            dim, split over blocks through the workspace (_split)
//   columns_cluster<C>  the same, each tile of columns read once into the
//            shared memory of a cluster of C blocks (sm_90)
//   strided  the columns kernels with scalar loads, for any other layout
// Special values follow torch through the epilogue (math.cuh: Stats).
// Kernels: rows.cuh, long_rows.cuh, shared_rows.cuh, columns.cuh; launches:
// execute.cuh. Plans query the kernels of the op's epilogue E (their
// register use sets the resident grids), so every planning step takes E.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_PLAN_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_PLAN_CUH_

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

#include "../../descriptor.h"
#include "../../softmax_plan.h"
#include "../../tuning.h"
#include "../cuda_types.cuh"
#include "../launch.cuh"
#include "../offset_calc.cuh"
#include "columns.cuh"
#include "long_rows.cuh"
#include "math.cuh"
#include "rows.cuh"
#include "shared_rows.cuh"

namespace oprt::nvidia {
namespace {

enum class Kind { kEmpty, kRows, kSplit, kSplit2, kTwice, kResident, kColumns };

// The plan of a softmax-family op, the base of its descriptor (which adds
// its kName; see softmax_nvidia.cu).
struct SoftmaxFamilyPlan : oprt_descriptor {
  explicit SoftmaxFamilyPlan(uint64_t tag) : oprt_descriptor(tag) {}
  Kind kind = Kind::kRows;
  int32_t dtype = 0;
  int64_t length = 1, src_stride = 1, out_stride = 1, nrows = 0;
  StridedLayout<2> rows;    // rows / split: every other dim; columns: the planes
  int group = 0;            // rows: threads per row (<= 32), or 0 with `block` threads per row
  int block = 256;
  int cluster = 1;          // rows: blocks per row (a thread block cluster)
  int slots = 8;            // rows: 16-byte vectors of a row per thread
  int waves = 4;            // rows: resident grids of blocks in the grid
  int min_blocks = 1;       // rows_block: blocks per SM the register use must allow
  bool stream = false;      // rows_block rows streamed through shared memory (rows_stream)
  int stream_buffers = 1;   // rows_stream: rows in shared memory per block
  bool shift = false;       // rows: rows start at varying alignment
  bool dense = false;       // rows (a block or group per row): rows back to back in both tensors
  bool flat = true;         // dense shifted rows of a block each: the kFlat form (else kShifted)
  int64_t splits = 1, chunk = 0;
  unsigned grid = 0;        // split, resident, twice, stream: the grid
  int64_t cache_vectors = 0;  // resident, twice: 16-byte vectors of shared memory per block
  int ahead = kMaxPieces;     // resident: bulk copies (or rounds of a thread's copies) in flight at a time
  bool resident_copies = false;  // resident: the cache filled by each thread's copies (else bulk copies)
  int tx = 32, ty = 8;      // columns
  int64_t columns = 1, col_tiles = 1, planes = 1, src_col_stride = 1, out_col_stride = 1;
  int column_cluster = 0;   // columns_cluster: blocks per tile (0: the columns kernels)
  int cluster_tx = 8;       // columns_cluster: threads across a tile
  int64_t cluster_chunk = 0, cluster_col_tiles = 0;
  int shared_cluster = 0;     // rows_shared<C>: blocks per row (0: not planned)
  int64_t slice_vectors = 0;  // rows_shared: 16-byte vectors of a row per block
  bool shared_whole = false;  // rows_shared: rows whole vectors long, 16-byte steps apart (no edges if aligned)
};

constexpr int kRowSlots = 8;  // 16-byte vectors of a row kept in registers per thread (clusters, long rows)

// Calls f(T{}, Index{}) for d's dtype and the index type execute uses.
template <class F>
void visit_types(const SoftmaxFamilyPlan& d, F&& f) {
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(std::max(d.nrows, d.planes), [&](auto index) { f(type, index); });
  });
}

// ---- long rows ---------------------------------------------------------------------
// The shared memory a resident block holds its chunk in (on the current device).
template <class E, class T, class Index, bool kBulk = false>
size_t resident_cache_bytes() {
  return opt_in_dynamic_smem<softmax_resident_kernel<E, T, Index, kBulk>>(size_t{kMaxPieces} * kPieceVectors * 16);
}

// Cuts every row into `splits` chunks of whole vectors, about `blocks` in
// all and none shorter than `min_chunk` elements (unless the row is); the
// workspace holds a (max, sum) per chunk.
inline void plan_chunks(SoftmaxFamilyPlan& d, int64_t blocks, int64_t min_chunk, int vec) {
  d.splits = std::clamp<int64_t>(blocks / d.nrows, 1, std::max<int64_t>(1, d.length / min_chunk));
  d.chunk = ceil_div(ceil_div(d.length, d.splits), vec) * vec;
  d.splits = ceil_div(d.length, d.chunk);
  d.workspace_bytes = static_cast<size_t>(d.nrows * d.splits) * sizeof(Stats);
}

// rows_resident: few long rows, one chunk per block of a one-block-per-SM
// cooperative grid. The cache is filled by bulk copies, or
// (`resident_copies`) by each thread's own 16-byte asynchronous copies, 4
// rounds of 32 KB a block in flight, where a chunk is at least 1.5 times
// the cache: bulk copies, 3 in flight, stall while the threads read the
// rest of the chunk with ordinary loads before any of them; copies are
// issued again as each round is read, and the rest is read after them.
// (OPRT_TUNE_SOFTMAX_RESIDENT_COPIES=0 bulk, 1 copies, 2 planned;
// _RESIDENT_CACHE caps the cache, in vectors.)
template <class E>
void plan_resident(SoftmaxFamilyPlan& d, int vec) {
  d.kind = Kind::kResident;
  size_t cache_bytes = 0;
  visit_types(d, [&](auto type, auto index) {
    using T = decltype(type);
    using Index = decltype(index);
    cache_bytes = resident_cache_bytes<E, T, Index>();
    d.grid = resident_grid(softmax_resident_kernel<E, T, Index, false>, kResidentThreads, 1, cache_bytes);
    const int64_t room = static_cast<int64_t>(cache_bytes / 16);
    d.cache_vectors = std::clamp<int64_t>(tuned("SOFTMAX_RESIDENT_CACHE", room), 0, room);
  });
  // At most one chunk per block, each at least a round of the block's loads.
  plan_chunks(d, d.grid, int64_t{kResidentThreads} * vec * kResidentUnroll, vec);
  const int64_t chunk_bytes = d.chunk * (16 / vec), copies = tuned("SOFTMAX_RESIDENT_COPIES", 2);
  d.resident_copies = copies == 1 || (copies == 2 && 2 * chunk_bytes >= 3 * static_cast<int64_t>(cache_bytes));
  d.ahead = d.resident_copies ? 4 : 3;
  d.variant = d.resident_copies ? "rows_resident_copies" : "rows_resident";
}

// rows_twice's row cache: as many 16-byte vectors of shared memory as
// leave the planned blocks per SM resident (at most a row's; capped by
// OPRT_TUNE_SOFTMAX_TWICE_CACHE_KB, 0: none, the kernel without it).
// Planned for float32 rows whose rows in flight pass 256 KB per SM, where
// it ran faster; it always cuts DRAM reads, but the kernel is not
// DRAM-bound (one 1024-thread block per SM), so 16-bit rows ran slower.
constexpr int64_t kTwiceCacheMinBytes = 256 << 10;

template <class E, class T, class Index, int kThreads>
int64_t twice_cache_vectors(const SoftmaxFamilyPlan& d, int vec) {
  constexpr auto kernel = softmax_rows_twice_kernel<E, T, Index, kThreads, true>;
  const bool large = d.length * int64_t{sizeof(T)} * twice_resident_blocks(kThreads) > kTwiceCacheMinBytes;
  const int64_t planned_kb = sizeof(T) == 4 && large ? 1 << 20 : 0;
  const int64_t cap_kb = std::clamp<int64_t>(tuned("SOFTMAX_TWICE_CACHE_KB", planned_kb), 0, 1 << 20);
  if (cap_kb == 0) return 0;  // (the kernel without the cache)
  size_t bytes = std::min<size_t>(opt_in_dynamic_smem<kernel>(), static_cast<size_t>(cap_kb) << 10);
  bytes = std::min<size_t>(bytes, static_cast<size_t>(ceil_div(d.length, vec)) * 16) / 16 * 16;
  while (bytes > 0 && resident_blocks_per_sm(kernel, kThreads, bytes) < twice_resident_blocks(kThreads))
    bytes -= std::min<size_t>(bytes, 4096);
  return static_cast<int64_t>(bytes / 16);
}

// rows_twice: more than two rows per SM, a block per row reading it twice
// (faster there than clusters holding the row in registers and than
// rows_split2). Rows of 4+ rounds of a 1024-thread block's loads take 1024
// threads (one block per SM: more of each row stays in L2); shorter rows
// take 512, as a 1024-thread block's second round would mostly idle. The
// grid holds two resident grids of blocks.
template <class E>
void plan_twice(SoftmaxFamilyPlan& d, int64_t vectors, int vec) {
  d.kind = Kind::kTwice;
  d.variant = "rows_twice";
  d.splits = 1;
  d.chunk = d.length;
  d.block = vectors >= 4 * 1024 * 4 ? 1024 : kTwiceThreads;
  const int64_t per_sm = tuned("SOFTMAX_TWICE_BLOCKS", 2 * twice_resident_blocks(d.block));
  d.grid = grid_for(d.nrows, static_cast<int>(std::clamp<int64_t>(per_sm, 1, 4)));
  visit_types(d, [&](auto type, auto index) {
    using T = decltype(type);
    using Index = decltype(index);
    d.cache_vectors = d.block == 1024 ? twice_cache_vectors<E, T, Index, 1024>(d, vec)
                                      : twice_cache_vectors<E, T, Index, kTwiceThreads>(d, vec);
  });
}

// rows_split2 (OPRT_TUNE_SOFTMAX_SPLIT_LAUNCHES=2, planned): chunks of
// about 128 KB, smaller where that leaves fewer tasks than a resident grid
// of blocks; at least one round of every thread's loads. rows_split (1): a
// resident cooperative grid, every block taking about the same share of
// tasks: one per block when the rows are few, else about 8 (the last
// block's extra task then costs at most 1/8 more time).
template <class E>
void plan_split(SoftmaxFamilyPlan& d, int vec) {
  const int64_t sms = current_device_info().sm_count;
  const int64_t round = int64_t{kSplitThreads} * vec * kSplitUnroll;
  if (tuned("SOFTMAX_SPLIT_LAUNCHES", 2) == 2) {
    d.kind = Kind::kSplit2;
    d.variant = "rows_split2";
    const int64_t chunk = std::max(round, int64_t{128 << 10} / find_dtype(d.dtype)->size);
    plan_chunks(d, std::max(d.nrows * ceil_div(d.length, chunk), sms * (2048 / kSplitThreads)), round, vec);
    d.grid = grid_one_shot(d.nrows * d.splits);
    return;
  }
  d.kind = Kind::kSplit;
  d.variant = "rows_split";
  visit_types(d, [&](auto type, auto index) {
    d.grid = resident_grid(softmax_split_kernel<E, decltype(type), decltype(index)>, kSplitThreads, 8);
  });
  plan_chunks(d, (d.nrows <= d.grid ? 1 : 8) * int64_t{d.grid}, round, vec);
}

// Rows longer than a block's registers hold: rows_twice for many rows, a
// cluster holding the row where one of at most 8 blocks does (at most 4
// with more rows than SMs, where rows_split ran faster;
// OPRT_TUNE_SOFTMAX_CLUSTER_MAX: the largest, 1 none), rows_resident for no
// more rows than SMs (sm_90; OPRT_TUNE_SOFTMAX_RESIDENT=0: not), else the
// split kernels.
template <class E>
void plan_long_rows(SoftmaxFamilyPlan& d, int64_t vectors, int vec) {
  const int64_t sms = current_device_info().sm_count;
  d.slots = kRowSlots;
  if (d.nrows > 2 * sms) return plan_twice<E>(d, vectors, vec);
  const int64_t threads = ceil_div(vectors, kRowSlots);
  const int64_t max_cluster = tuned("SOFTMAX_CLUSTER_MAX", d.nrows <= sms ? kPortableCluster : 4);
  for (int c = 2; c <= std::min<int64_t>(kPortableCluster, max_cluster); c *= 2) {
    if (ceil_div(threads, c) <= max_row_block<half, kRowSlots>()) {
      d.kind = Kind::kRows;
      d.group = 0;
      d.cluster = c;
      d.block = static_cast<int>(ceil_div(ceil_div(threads, c), 32) * 32);
      d.variant = "rows_cluster" + std::to_string(c);
      return;
    }
  }
  if (d.nrows <= sms && current_device_info().cc_major >= 9 && tuned("SOFTMAX_RESIDENT", 1) == 1)
    return plan_resident<E>(d, vec);
  plan_split<E>(d, vec);
}

// ---- rows in registers ---------------------------------------------------------------
// Calls f(NV, MB) (integral constants) for d's block-per-row kernels
// (rows_block, rows_stream): the vector slots per thread (planned 4 or 8)
// and the blocks per SM their registers allow.
template <class T, class F>
void visit_block_shape(const SoftmaxFamilyPlan& d, F f) {
  using std::integral_constant;
  if (d.slots != 4 && d.slots != 8) fail(OPRT_STATUS_INTERNAL_ERROR, "rows: a block per row with %d slots", d.slots);
  if (d.slots == 4) {
    if constexpr (max_row_block<T, 4>() == 512) {
      if (d.min_blocks == 2) return f(integral_constant<int, 4>{}, integral_constant<int, 2>{});
    }
    return f(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  }
  if (d.min_blocks == 2) return f(integral_constant<int, 8>{}, integral_constant<int, 2>{});
  return f(integral_constant<int, 8>{}, integral_constant<int, 1>{});
}

inline size_t stream_smem_bytes(const SoftmaxFamilyPlan& d) {
  return static_cast<size_t>(d.stream_buffers) * static_cast<size_t>(d.length) * find_dtype(d.dtype)->size;
}

// Turns a rows_block plan into rows_stream where it applies: sm_90 and newer,
// rows 16-byte aligned and whole vectors long, `stream_buffers` of them fit
// in a block's shared memory, more rows than the resident grid has blocks
// (with a row per block there is nothing to prefetch), and rows_block would
// keep few blocks on an SM (1; 2 for 16-bit rows): with more, some block
// always has loads in flight anyway. Float32 rows carry half the arithmetic
// per byte: at 2 blocks per SM they stream slower, 16-bit rows faster.
// (OPRT_TUNE_SOFTMAX_STREAM=0: never; _STREAM_BELOW the blocks per SM below
// which to stream, _STREAM_BUFFERS rows in flight, _STREAM_BLOCKS most
// blocks per SM.)
template <class E>
void plan_stream(SoftmaxFamilyPlan& d, bool aligned_rows, int vec) {
  if (tuned("SOFTMAX_STREAM", 1) != 1 || current_device_info().cc_major < 9 || !aligned_rows ||
      d.length % vec != 0 || d.block < 64)
    return;
  d.stream_buffers = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BUFFERS", 1), 1, kMaxStreamBuffers));
  const int max_per_sm = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BLOCKS", 32), 1, 32));
  const int most_row_blocks = static_cast<int>(tuned("SOFTMAX_STREAM_BELOW", find_dtype(d.dtype)->size == 4 ? 2 : 3));
  const size_t smem = stream_smem_bytes(d);
  unsigned grid = 0;
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(d.nrows, [&](auto index) {
      using T = decltype(type);
      using Index = decltype(index);
      visit_block_shape<T>(d, [&](auto nv, auto mb) {
        // of the kernel that runs otherwise (aligned rows: the dense one without shift)
        const int row_blocks =
            d.dense ? resident_blocks_per_sm(softmax_dense_rows_kernel<E, T, 0, nv.value, mb.value>, d.block)
                    : resident_blocks_per_sm(softmax_rows_kernel<E, T, 0, nv.value, 1, Index, mb.value>, d.block);
        constexpr auto kernel = softmax_stream_kernel<E, T, nv.value, Index, mb.value>;
        if (row_blocks < most_row_blocks && opt_in_dynamic_smem<kernel>() >= smem)
          grid = resident_grid(kernel, d.block, max_per_sm, smem);
      });
    });
  });
  if (grid == 0 || d.nrows <= grid) return;
  d.stream = true;
  d.grid = grid;
  d.variant = "rows_stream";
}

// The most threads a block-per-row kernel of `slots` vectors a thread takes.
inline int64_t max_block_for(int element_size, int64_t slots) {
  return element_size == 4 && slots == 4 ? max_row_block<float, 4>() : max_row_block<half, 8>();
}

// Vector slots per thread for rows of `vectors` vectors: 2 for short rows
// (more threads per row); float32 rows a warp holds with 8 take 8; other
// rows a block holds with 4 take 4: 16-bit rows then keep exp(x - max) in
// float registers (one exp per element instead of two), float32 rows get
// up to 1024 threads, 32 warps per SM where 8 slots leave 16. 16-bit dense
// rows a block holds take 8 after all: the dense kernel holds them without
// spilling, in blocks half as large. (OPRT_TUNE_SOFTMAX_SLOTS: 2, 4 or 8,
// where the row fits.)
inline int row_slots(const SoftmaxFamilyPlan& d, int64_t vectors, int element_size) {
  int64_t nv = 8;
  if (vectors <= 2 * 32) {
    nv = 2;
  } else if (!(element_size == 4 && ceil_div(vectors, 8) <= 32) &&
             ceil_div(vectors, 4) <= max_block_for(element_size, 4)) {
    nv = 4;
    if (element_size < 4 && d.dense && ceil_div(vectors, 8) > 32) nv = 8;
  }
  const int64_t forced = tuned("SOFTMAX_SLOTS", nv);
  if ((forced == 2 || forced == 4 || forced == 8) &&
      ceil_div(vectors, forced) <= (forced == 2 ? 32 : max_block_for(element_size, forced)))
    nv = forced;
  return static_cast<int>(nv);
}

// Rows contiguous along the dim: in registers (rows_warp, rows_block,
// rows_stream) where a block holds them, else plan_long_rows.
// OPRT_TUNE_SOFTMAX_DENSE=0 plans the general rows kernel on dense rows,
// _FLAT=0 the kShifted form where kFlat is planned.
template <class E>
void plan_contiguous_rows(SoftmaxFamilyPlan& d, const SoftmaxProblem& p) {
  const int element_size = p.src.element_size();
  const int vec = 16 / element_size;
  // Rows start 16-byte aligned (given an aligned base) when every row stride is a multiple of 16 bytes.
  const bool aligned_rows = strides_aligned16(p.rows, element_size);
  d.dense = tuned("SOFTMAX_DENSE", 1) == 1 && d.out_stride == 1 &&
            (p.rows.ndim == 0 ||
             (p.rows.ndim == 1 && p.rows.strides[0][0] == d.length && p.rows.strides[1][0] == d.length));
  // (the dense kernel without shift takes rows of whole vectors only; a single row may not be)
  d.shift = !aligned_rows || (d.dense && d.length % vec != 0);
  d.flat = tuned("SOFTMAX_FLAT", 1) == 1;
  const int64_t vectors = ceil_div(d.length + (d.shift ? vec - 1 : 0), vec);
  const int nv = row_slots(d, vectors, element_size);
  d.slots = nv;
  // Resident grids in the grid, and 16-bit rows of 4 slots in blocks
  // capped at 64 registers (2 blocks of 512 per SM): both ran faster.
  d.waves = d.dense ? 64 : element_size == 4 && nv == 2 ? 16 : 4;
  d.min_blocks = max_block_for(element_size, nv) == 512 && element_size < 4 && nv == 4 ? 2 : 1;
  const int64_t threads = ceil_div(vectors, nv);
  d.kind = Kind::kRows;
  if (threads <= 32) {
    d.group = static_cast<int>(ceil_pow2(threads));
    d.block = 256;
    d.variant = d.dense ? "rows_warp_dense" : "rows_warp";
    return;
  }
  if (threads <= max_block_for(element_size, nv)) {
    d.group = 0;
    d.block = static_cast<int>(ceil_div(threads, 32) * 32);
    d.variant = d.dense ? "rows_block_dense" : "rows_block";
    return plan_stream<E>(d, aligned_rows, vec);
  }
  plan_long_rows<E>(d, vectors, vec);
}

// ---- columns -------------------------------------------------------------------------
// Turns a columns plan into columns_cluster where it applies: sm_90 and
// newer, contiguous columns, every row of a tile 16-byte aligned (the bases
// are checked at execute), and a tile's rows fit in the shared memory of at
// most 16 blocks (100 KB each). The smallest such cluster with at least a
// block per SM in all. Threads across a tile: 8 in float32 (128 bytes), 4
// in 16-bit (64 bytes), the faster widths
// (OPRT_TUNE_SOFTMAX_COLUMN_CLUSTER_TX sets it; _COLUMN_CLUSTER=0: none).
template <class E>
void plan_columns_cluster(SoftmaxFamilyPlan& d, int element_size, int vec) {
  if (tuned("SOFTMAX_COLUMN_CLUSTER", 1) != 1 || current_device_info().cc_major < 9 || d.src_col_stride != 1 ||
      d.out_col_stride != 1)
    return;
  if ((d.src_stride * element_size) % 16 != 0 || (d.out_stride * element_size) % 16 != 0 ||
      !strides_aligned16(d.rows, element_size))
    return;
  const int64_t planned_tx = element_size == 4 ? 8 : 4;
  const int64_t max_tx = std::clamp<int64_t>(floor_pow2(tuned("SOFTMAX_COLUMN_CLUSTER_TX", planned_tx)), 1, 32);
  const int tx = static_cast<int>(std::min<int64_t>(max_tx, ceil_pow2(ceil_div(d.columns, vec))));
  const int64_t col_tiles = ceil_div(d.columns, int64_t{tx} * vec);
  const int64_t tiles = d.planes * col_tiles;
  visit_types(d, [&](auto type, auto index) {
    using T = decltype(type);
    using Index = decltype(index);
    for (int c = 1; c <= kLargestCluster; c *= 2) {
      const int64_t chunk = ceil_div(d.length, c);
      const size_t smem = columns_cluster_smem<T>(chunk, tx);
      if (smem > size_t{100} << 10) continue;
      if (tiles * c < current_device_info().sm_count) continue;  // a larger cluster, more blocks
      if (tiles * c > INT32_MAX) return;
      visit_pow2<1, kLargestCluster>(c, "columns_cluster: blocks per tile", [&](auto cc) {
        constexpr auto kernel = softmax_columns_cluster_kernel<E, T, cc.value, Index>;
        if (cc.value > kPortableCluster) allow_large_clusters<kernel>();
        if (opt_in_dynamic_smem<kernel>() < smem || resident_clusters(kernel, c, kColumnsThreads, smem) == 0) return;
        d.column_cluster = c;
      });
      if (d.column_cluster == 0) return;
      d.cluster_tx = tx;
      d.cluster_chunk = chunk;
      d.cluster_col_tiles = col_tiles;
      d.variant = "columns_cluster" + std::to_string(c);
      return;
    }
  });
}

// The dim is not the contiguous one: the rows layout's innermost dim are
// the columns (strided if not contiguous), tiles of up to 32 vectors of
// them; the dim is split over blocks for about 16 tasks per SM
// (OPRT_TUNE_SOFTMAX_COLUMN_SPLITS, tests: fewer, for long chains per thread).
template <class E>
void plan_columns(SoftmaxFamilyPlan& d, const SoftmaxProblem& p) {
  const int element_size = p.src.element_size();
  const int vec = 16 / element_size;
  d.kind = Kind::kColumns;
  const StridedLayout<2>& r = p.rows;
  d.columns = r.ndim ? r.inner_size() : 1;
  d.out_col_stride = r.ndim ? r.inner_stride(0) : 1;
  d.src_col_stride = r.ndim ? r.inner_stride(1) : 1;
  d.variant = d.src_col_stride == 1 ? "columns" : "strided";
  d.rows = outer_dims(r);
  d.planes = d.rows.numel();
  d.tx = static_cast<int>(std::min<int64_t>(32, ceil_pow2(ceil_div(d.columns, vec))));
  d.ty = kColumnsThreads / d.tx;
  d.col_tiles = ceil_div(d.columns, int64_t{d.tx} * vec);
  const int64_t tiles = d.planes * d.col_tiles;
  const int64_t want = tuned("SOFTMAX_COLUMN_SPLITS", ceil_div(current_device_info().sm_count * 16, tiles));
  d.splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, d.length / (int64_t{d.ty} * 8)));
  d.chunk = ceil_div(d.length, d.splits);
  d.splits = ceil_div(d.length, d.chunk);
  d.workspace_bytes = static_cast<size_t>(tiles * d.splits * d.tx * vec) * sizeof(Stats);
  if (d.splits > 1) d.variant += "_split";
  plan_columns_cluster<E>(d, element_size, vec);
}

// ---- rows_shared ---------------------------------------------------------------------
// Turns a long-row plan into rows_shared<C> where it applies: sm_90 and
// newer, out contiguous along the dim, its rows at src's 16-byte alignment
// (the bases are checked at execute, else the plan runs), and a row's
// whole vectors cut into the fewest slices of at most 80 KB (a power of two
// of them, at most kLargestCluster) whose cluster the device holds; a whole
// row of up to 110 KB in one block (no cluster barrier to wait on).
// Smaller slices, more blocks per row, wait longer on the cluster's slowest
// block; so do few rows, which keep the same slices: with too few blocks for
// half the SMs the plan under it (rows_resident, rows_split2) spreads them
// over every SM. (OPRT_TUNE_SOFTMAX_SHARED=0: never; _SHARED_KB,
// _SHARED_ONE_KB: the two caps.)
template <class E>
void plan_shared_rows(SoftmaxFamilyPlan& d) {
  const int element_size = find_dtype(d.dtype)->size;
  const int vec = 16 / element_size;
  const bool rows_in_step = strides_congruent16(d.rows, 0, 1, element_size);  // out's rows at src's alignment
  if (tuned("SOFTMAX_SHARED", 1) != 1 || current_device_info().cc_major < 9 || !rows_in_step || d.out_stride != 1)
    return;
  const int64_t cap = std::max<int64_t>(1, tuned("SOFTMAX_SHARED_KB", 80)) << 10;
  const int64_t one_block_cap = std::max<int64_t>(1, tuned("SOFTMAX_SHARED_ONE_KB", 110)) << 10;
  const int64_t row_vectors = d.length / vec;
  const int64_t min_blocks = current_device_info().sm_count / 2;
  for (int c = 1; c <= kLargestCluster; c *= 2) {
    const int64_t slice = ceil_div(row_vectors, int64_t{c});
    const size_t smem = static_cast<size_t>(slice) * sizeof(Raw16);
    if (static_cast<int64_t>(smem) > (c == 1 ? std::max(cap, one_block_cap) : cap) ||
        ceil_div(slice, int64_t{kSharedPieceVectors}) > kMaxSharedPieces)
      continue;
    if (d.nrows * c > INT32_MAX || d.nrows * c < min_blocks) return;
    dispatch_dtype(d.dtype, [&](auto type) {
      dispatch_index(d.nrows, [&](auto index) {  // as execute does
        visit_pow2<1, kLargestCluster>(c, "rows_shared: blocks per row", [&](auto cc) {
          constexpr auto kernel = softmax_rows_shared_kernel<E, decltype(type), cc.value, true, decltype(index)>;
          if (cc.value > kPortableCluster) allow_large_clusters<kernel>();
          if (opt_in_dynamic_smem<kernel>() >= smem && resident_clusters(kernel, c, kSharedThreads, smem) > 0)
            d.shared_cluster = c;
        });
      });
    });
    if (d.shared_cluster == 0) continue;  // (a larger cluster, smaller slices)
    d.slice_vectors = slice;
    d.shared_whole = d.length % vec == 0 && strides_aligned16(d.rows, element_size);
    d.variant = "rows_shared" + std::to_string(c);
    return;
  }
}

// ---- create --------------------------------------------------------------------------
// The descriptor D (a SoftmaxFamilyPlan) of op epilogue E for out = op(src)
// along dim: validated, planned; rows_shared, where it applies, takes the
// rows planned to be read twice or held in a cluster's registers (the plan
// stays, for a misaligned base).
template <class D, class E>
D* create_softmax_family(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  const SoftmaxProblem p = plan_softmax(out, src, dim);
  require_nvidia_dtype(p.src, "src");
  auto d = std::make_unique<D>();
  d->dtype = p.src.dtype;
  d->length = p.length;
  d->src_stride = p.length == 1 ? 1 : p.src_stride;
  d->out_stride = p.length == 1 ? 1 : p.out_stride;
  d->rows = p.rows;
  d->nrows = p.rows.numel();
  if (p.src.numel == 0) {
    d->kind = Kind::kEmpty;
    d->variant = "empty";
    return d.release();
  }
  if (d->src_stride != 1) {
    plan_columns<E>(*d, p);
    return d.release();
  }
  plan_contiguous_rows<E>(*d, p);
  const bool long_rows = d->kind == Kind::kTwice || d->kind == Kind::kResident || d->kind == Kind::kSplit ||
                         d->kind == Kind::kSplit2 || (d->kind == Kind::kRows && d->cluster > 1);
  if (long_rows) plan_shared_rows<E>(*d);
  return d.release();
}

}  // namespace
}  // namespace oprt::nvidia

#endif
