// softmax on NVIDIA GPUs, computed in float, rounded once on store. The
// plan (softmax_plan.h) gives the softmax dim (length, strides) and the other
// dims coalesced ("rows"). Variants:
//   rows_warp / rows_block  src contiguous along the dim and the row fits in
//            registers (up to 16K float32 / 32K 16-bit elements): a group of
//            threads per row (a few lanes of a warp, or a whole block) reads
//            the row once into registers, in its own dtype, and keeps it
//            through max, sum and scale, writes it once. exp(x - max) stays
//            in float registers too where they hold it (float32, and 16-bit
//            rows up to 16K); longer 16-bit rows recompute it on the way out.
//            Dense rows (back to back in both tensors, bases equally
//            aligned at execute) run a kernel without the general layout's
//            offsets and per-vector alignment tests
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
//            softmax dim, split over blocks through the workspace
//   strided  the columns kernels with scalar loads, for any other layout
// Special values follow torch: a row holding NaN or +inf, or all -inf, is NaN.
// The kernels live in softmax_{math,rows,long_rows,shared_rows,columns}.cuh;
// this file plans (create) and launches (execute).
#include "softmax_nvidia.h"

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

#include "../../common/descriptor.h"
#include "../../common/tuning.h"
#include "../../common/nvidia/cuda_types.cuh"
#include "../../common/nvidia/launch.cuh"
#include "../../common/nvidia/offset_calc.cuh"
#include "../softmax_plan.h"
#include "softmax_columns.cuh"
#include "softmax_long_rows.cuh"
#include "softmax_math.cuh"
#include "softmax_rows.cuh"
#include "softmax_shared_rows.cuh"

namespace oprt::nvidia {
namespace {

// ---- planning ----------------------------------------------------------------------
enum class Kind { kEmpty, kRows, kSplit, kSplit2, kTwice, kResident, kColumns };

struct SoftmaxNvidia : oprt_descriptor {
  static constexpr const char* kName = "softmax/nvidia";
  SoftmaxNvidia() : oprt_descriptor(descriptor_tag(kName)) {}
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
  int split_unroll = 4;     // split: vectors in flight per thread
  bool stream = false;      // rows_block rows streamed through shared memory (rows_stream)
  int stream_buffers = 1;   // rows_stream: rows in shared memory per block
  bool shift = false;       // rows: rows start at varying alignment
  bool dense = false;       // rows (a block or group per row): rows back to back in both tensors
  bool flat = true;         // dense shifted rows of a block each: the kFlat form (A/B: OPRT_TUNE_SOFTMAX_FLAT=0)
  int64_t splits = 1, chunk = 0;
  bool evict_first = false; // twice, resident: the write pass marks its lines first to leave L2
  unsigned grid = 0;        // split, resident: the cooperative grid
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

constexpr int kRowSlots = 8;  // 16-byte vectors of a row kept in registers per thread

// The shared memory a resident block holds its chunk in (on the current device).
template <class T, class Index, bool kBulk = false>
size_t resident_cache_bytes() {
  return opt_in_dynamic_smem<softmax_resident_kernel<T, Index, kBulk>>(size_t{kMaxPieces} * kPieceVectors * 16);
}

// Cuts every row into `splits` chunks of whole vectors, about `blocks` in
// all and none shorter than `min_chunk` elements (unless the row is); the
// workspace holds a (max, sum) per chunk.
void plan_chunks(SoftmaxNvidia& d, int64_t blocks, int64_t min_chunk, int vec) {
  d.splits = std::clamp<int64_t>(blocks / d.nrows, 1, std::max<int64_t>(1, d.length / min_chunk));
  d.chunk = ceil_div(ceil_div(d.length, d.splits), vec) * vec;
  d.splits = ceil_div(d.length, d.chunk);
  d.workspace_bytes = static_cast<size_t>(d.nrows * d.splits) * sizeof(Stats);
}

// Few long rows: one chunk per block of a one-block-per-SM cooperative grid.
// The cache is filled by bulk copies, or (`resident_copies`) by each
// thread's own 16-byte asynchronous copies, 4 rounds of 32 KB a block in
// flight, where a chunk is at least 1.5 times the cache: bulk copies, 3 in
// flight, stall while the threads read the rest of the chunk with ordinary
// loads before any of them; copies are issued again as each round is read,
// and the rest is read after them. H200, scripts/nvidia_ab.py, us, copies
// vs bulk: 4 x 4M float32 (508 KB chunks) 43.8 vs 49.6, 1 x 16M float32
// 44.0 vs 50.0, 32 x 1M bf16 46.5 vs 53.3; where the chunk about fits the
// cache, even or behind: 4 x 4M bf16 (254 KB) 27.6 vs 28.1, 5 x 3M+7 bf16
// (242 KB) 32.1 vs 28.7 (A/B: OPRT_TUNE_SOFTMAX_RESIDENT_COPIES=0 bulk, 1
// copies; _AHEAD the rounds or copies in flight).
void plan_resident(SoftmaxNvidia& d, int vec) {
  d.kind = Kind::kResident;
  size_t cache_bytes = 0;
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(d.nrows, [&](auto index) {
      using T = decltype(type);
      using Index = decltype(index);
      cache_bytes = resident_cache_bytes<T, Index>();
      d.grid = resident_grid(softmax_resident_kernel<T, Index, false>, kResidentThreads, 1, cache_bytes);
      const int64_t room = static_cast<int64_t>(cache_bytes / 16);
      d.cache_vectors = std::clamp<int64_t>(tuned("SOFTMAX_RESIDENT_CACHE", room), 0, room);
      // The write pass marked first to leave L2, as in rows_twice: the rest
      // of a chunk stays longer (H200: 4 x 4M bf16 29.1 vs 31.3 us, 5 x
      // 3M+7 bf16 28.6 vs 30.5; float32 49.4 vs 49.9).
      d.evict_first = tuned("SOFTMAX_RESIDENT_EVICT_FIRST", 1) == 1;
    });
  });
  // At most one chunk per block, each at least a round of the block's loads.
  plan_chunks(d, d.grid, int64_t{kResidentThreads} * vec * kResidentUnroll, vec);
  const int64_t chunk_bytes = d.chunk * (16 / vec), copies = tuned("SOFTMAX_RESIDENT_COPIES", 2);
  d.resident_copies = copies == 1 || (copies == 2 && 2 * chunk_bytes >= 3 * static_cast<int64_t>(cache_bytes));
  d.ahead = static_cast<int>(
      std::clamp<int64_t>(tuned("SOFTMAX_RESIDENT_AHEAD", d.resident_copies ? 4 : 3), 1, kMaxPieces));
  d.variant = d.resident_copies ? "rows_resident_copies" : "rows_resident";
}

// rows_twice's row cache: as many 16-byte vectors of shared memory as
// leave the planned blocks per SM resident (at most a row's; capped by
// OPRT_TUNE_SOFTMAX_TWICE_CACHE_KB, 0: none, the kernel without it).
// Planned where it ran faster: float32 rows whose rows in flight pass 256
// KB per SM (H200, scripts/nvidia_ab.py, us, cached vs not: vocab 4096 x
// 151936 float32 1636 vs 1720, 4096 x 40000 float32 (two 160 KB rows per
// SM) 370 vs 403; 2048 x 65536 float32 (one 256 KB row) 356 vs 340; 16-bit
// rows slower at every size tried: vocab bf16 870 vs 827, 4096 x 40000
// bf16 238 vs 228). The cache always cuts DRAM reads (Nsight Compute,
// vocab bf16: 1.69 -> 1.25 GB, the input once; float32 4.40 -> 3.03), but
// the kernel is not DRAM-bound (one 1024-thread block per SM, L1 hit
// under 8% either way), so the bytes saved do not always turn into time.
constexpr int64_t kTwiceCacheMinBytes = 256 << 10;

template <class T, class Index, int kThreads>
int64_t twice_cache_vectors(const SoftmaxNvidia& d, int vec) {
  constexpr auto kernel = softmax_rows_twice_kernel<T, Index, kThreads, true>;
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

// Calls f(NV, MB) (integral constants) for d's block-per-row kernels
// (rows_block, rows_stream): the vector slots per thread (planned 4 or 8)
// and the blocks per SM their registers allow.
template <class T, class F>
void visit_block_shape(const SoftmaxNvidia& d, F f) {
  using std::integral_constant;
  if (d.slots != 4 && d.slots != 8) fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows: a block per row with %d slots", d.slots);
  if (d.slots == 4) {
    if constexpr (max_row_block<T, 4>() == 512) {
      if (d.min_blocks == 2) return f(integral_constant<int, 4>{}, integral_constant<int, 2>{});
    }
    return f(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  }
  if (d.min_blocks == 2) return f(integral_constant<int, 8>{}, integral_constant<int, 2>{});
  return f(integral_constant<int, 8>{}, integral_constant<int, 1>{});
}

size_t stream_smem_bytes(const SoftmaxNvidia& d) {
  return static_cast<size_t>(d.stream_buffers) * static_cast<size_t>(d.length) * find_dtype(d.dtype)->size;
}

// Turns a rows_block plan into rows_stream where it applies: sm_90 and newer,
// rows 16-byte aligned and whole vectors long, `stream_buffers` of them fit
// in a block's shared memory, more rows than the resident grid has blocks
// (with a row per block there is nothing to prefetch), and rows_block would
// keep few blocks on an SM (1; 2 for 16-bit rows): with more, some block
// always has loads in flight anyway. H200 (scripts/nvidia_ab.py, rows_block
// vs one buffer): 16384^2 float32 591.6 vs 552.5 us (1 block per SM), bf16
// 305.6 vs 280.4 (2), 4096x32768 bf16 194.3 vs 147.3 (1); slower at 8192^2,
// float32 136.9 vs 140.7 (2), bf16 72.0 vs 73.2 (4). Two buffers: 545.9 /
// 291.8 / 150.3.
void plan_stream(SoftmaxNvidia& d, bool aligned_rows, int vec) {
  if (tuned("SOFTMAX_STREAM", 1) != 1 || current_device_info().cc_major < 9 || !aligned_rows ||
      d.length % vec != 0 || d.block < 64)
    return;
  d.stream_buffers = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BUFFERS", 1), 1, kMaxStreamBuffers));
  const int max_per_sm = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_STREAM_BLOCKS", 32), 1, 32));
  // rows_block blocks per SM below which to stream (float32 rows carry half
  // the arithmetic per byte: at 2 blocks they stream slower, 16-bit faster)
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
            d.dense ? resident_blocks_per_sm(softmax_dense_rows_kernel<T, 0, nv.value, mb.value>, d.block)
                    : resident_blocks_per_sm(softmax_rows_kernel<T, 0, nv.value, 1, Index, mb.value>, d.block);
        constexpr auto kernel = softmax_stream_kernel<T, nv.value, Index, mb.value>;
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

// Turns a columns plan into columns_cluster where it applies: sm_90 and
// newer, contiguous columns, every row of a tile 16-byte aligned (the bases
// are checked at execute), and a tile's rows fit in the shared memory of at
// most 16 blocks (`SOFTMAX_COLUMN_CLUSTER_KB` each). The smallest such
// cluster with at least a block per SM in all.
void plan_columns_cluster(SoftmaxNvidia& d, int element_size, int vec) {
  if (tuned("SOFTMAX_COLUMN_CLUSTER", 1) != 1 || current_device_info().cc_major < 9 || d.src_col_stride != 1 ||
      d.out_col_stride != 1)
    return;
  if ((d.src_stride * element_size) % 16 != 0 || (d.out_stride * element_size) % 16 != 0 ||
      !strides_aligned16(d.rows, element_size))
    return;
  // Threads across a tile: 8 in float32 (128 bytes), 4 in 16-bit (64
  // bytes). H200, scripts/nvidia_ab.py, 64 vs 128-byte tiles: 8192^2 over
  // dim 0 float32 191 vs 178 us; bf16 109.6-111.7 vs 111.9-114.0, fp16
  // 108.2-110.1 vs 109.8-111.1, 32 x 2048 x 512 bf16 51.3-52.1 vs 54.1-55.1.
  const int64_t planned_tx = element_size == 4 ? 8 : 4;
  const int64_t max_tx = std::clamp<int64_t>(floor_pow2(tuned("SOFTMAX_COLUMN_CLUSTER_TX", planned_tx)), 1, 32);
  const int tx = static_cast<int>(std::min<int64_t>(max_tx, ceil_pow2(ceil_div(d.columns, vec))));
  const int64_t max_c =
      std::clamp<int64_t>(floor_pow2(tuned("SOFTMAX_COLUMN_CLUSTER_MAX", kLargestCluster)), 1, kLargestCluster);
  const int64_t col_tiles = ceil_div(d.columns, int64_t{tx} * vec);
  const int64_t tiles = d.planes * col_tiles;
  dispatch_dtype(d.dtype, [&](auto type) {
    dispatch_index(std::max(d.nrows, d.planes), [&](auto index) {  // as execute does
      using T = decltype(type);
      using Index = decltype(index);
      for (int c = 1; c <= max_c; c *= 2) {
        const int64_t chunk = ceil_div(d.length, c);
        const size_t smem = columns_cluster_smem<T>(chunk, tx);
        if (smem > static_cast<size_t>(tuned("SOFTMAX_COLUMN_CLUSTER_KB", 100) << 10)) continue;
        if (tiles * c < current_device_info().sm_count) continue;  // a larger cluster, more blocks
        if (tiles * c > INT32_MAX) return;
        visit_pow2<1, kLargestCluster>(c, "softmax columns_cluster: blocks per tile", [&](auto cc) {
          constexpr auto kernel = softmax_columns_cluster_kernel<T, cc.value, Index>;
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
  });
}

// Turns a long-row plan into rows_shared<C> where it applies: sm_90 and
// newer, out contiguous along the dim, its rows at src's 16-byte alignment
// (the bases are checked at execute, else the plan runs), and a row's
// whole vectors cut into the fewest slices of at most SOFTMAX_SHARED_KB (a
// power of two of them, at most kLargestCluster) whose cluster the device holds.
// Slices of 64-80 KB (2 blocks per SM) ran fastest; smaller ones, more
// blocks per row, wait longer on the cluster's slowest block (H200,
// scripts/nvidia_ab.py, us, 80 / 40 / 20 KB against rows_twice: vocab 4096 x
// 151936 bf16 716 / 784 / 1150 vs 798, float32 1356 / 1547 / - vs 1633;
// 2048 x 65536 bf16 145 / 159 / 216 vs 166; 4096 x 40000 bf16 171 / 180 /
// 243 vs 214; 160 KB slices: vocab bf16 832, 4096 x 40000 float32 340 vs 346).
// Few rows keep the same slices: smaller ones in clusters of 16, to fill
// the GPU, ran slower (32 x 151936 bf16 17.2 vs 15.6, float32 20.5 vs 18.8;
// 64 x 50000 bf16 21.5 vs 11.4; against rows_cluster / rows_resident 19.2,
// 19.5, 11.4); under half the SMs' worth of blocks, the plan stays (3 x
// 300000: rows_resident 11.9-12.2 us vs 11.5-12.3, even).
void plan_shared_rows(SoftmaxNvidia& d) {
  const int element_size = find_dtype(d.dtype)->size;
  const int vec = 16 / element_size;
  const bool rows_in_step = strides_congruent16(d.rows, 0, 1, element_size);  // out's rows at src's alignment
  if (tuned("SOFTMAX_SHARED", 1) != 1 || current_device_info().cc_major < 9 || !rows_in_step || d.out_stride != 1)
    return;
  // Slices of at most 80 KB (2-3 blocks per SM); a whole row of up to 110 KB
  // in one block (2 per SM): no cluster barrier to wait on. H200,
  // scripts/nvidia_ab.py, us: 4096 x 50257 bf16 214.6 (one 100 KB block)
  // vs 249.1 (two of 50 KB), 4096 x 50264 bf16 214.5 vs 229.0.
  const int64_t cap = std::max<int64_t>(1, tuned("SOFTMAX_SHARED_KB", 80)) << 10;
  const int64_t one_block_cap = std::max<int64_t>(1, tuned("SOFTMAX_SHARED_ONE_KB", 110)) << 10;
  const int64_t max_c =
      std::clamp<int64_t>(floor_pow2(tuned("SOFTMAX_SHARED_MAX", kLargestCluster)), 1, kLargestCluster);
  const int64_t row_vectors = d.length / vec;
  // (too few blocks for half the SMs: the plan under it, rows_resident or
  // rows_split2, spreads such rows over every SM)
  const int64_t min_blocks = tuned("SOFTMAX_SHARED_MIN_BLOCKS", current_device_info().sm_count / 2);
  for (int c = 1; c <= max_c; c *= 2) {
    const int64_t slice = ceil_div(row_vectors, int64_t{c});
    const size_t smem = static_cast<size_t>(slice) * sizeof(Raw16);
    if (static_cast<int64_t>(smem) > (c == 1 ? std::max(cap, one_block_cap) : cap) ||
        ceil_div(slice, int64_t{kSharedPieceVectors}) > kMaxSharedPieces)
      continue;
    if (d.nrows * c > INT32_MAX || d.nrows * c < min_blocks) return;
    dispatch_dtype(d.dtype, [&](auto type) {
      dispatch_index(d.nrows, [&](auto index) {  // as execute does
        visit_pow2<1, kLargestCluster>(c, "softmax rows_shared: blocks per row", [&](auto cc) {
          constexpr auto kernel = softmax_rows_shared_kernel<decltype(type), cc.value, true, decltype(index)>;
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

SoftmaxNvidia* plan(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  SoftmaxProblem p = plan_softmax(out, src, dim);
  require_nvidia_dtype(p.src, "src");
  auto* d = new SoftmaxNvidia;
  d->dtype = p.src.dtype;
  d->length = p.length;
  d->src_stride = p.length == 1 ? 1 : p.src_stride;
  d->out_stride = p.length == 1 ? 1 : p.out_stride;
  d->rows = p.rows;
  d->nrows = p.rows.numel();
  if (p.src.numel == 0) {
    d->kind = Kind::kEmpty;
    d->variant = "empty";
    return d;
  }
  const int element_size = p.src.element_size();
  const int vec = 16 / element_size;
  const int64_t sms = current_device_info().sm_count;
  if (d->src_stride == 1) {
    // Rows start 16-byte aligned (given an aligned base) when every row stride is a multiple of 16 bytes.
    const bool aligned_rows = strides_aligned16(p.rows, element_size);
    d->dense = tuned("SOFTMAX_DENSE", 1) == 1 && d->out_stride == 1 &&
               (p.rows.ndim == 0 || (p.rows.ndim == 1 && p.rows.strides[0][0] == d->length &&
                                     p.rows.strides[1][0] == d->length));
    // (the dense kernel without shift takes rows of whole vectors only; a single row may not be)
    d->shift = !aligned_rows || (d->dense && d->length % vec != 0);
    d->flat = tuned("SOFTMAX_FLAT", 1) == 1;
    const int64_t vectors = ceil_div(d->length + (d->shift ? vec - 1 : 0), vec);
    const auto max_block = [&](int64_t slots) -> int64_t {
      return element_size == 4 && slots == 4 ? max_row_block<float, 4>() : max_row_block<half, 8>();
    };
    // Vector slots per thread: 2 for short rows (more threads per row);
    // float32 rows a warp holds with 8 take 8; other rows a block holds with
    // 4 take 4: 16-bit rows then keep exp(x - max) in float registers (one
    // exp per element instead of two), float32 rows get up to 1024 threads,
    // 32 warps per SM where 8 slots left 16 (H200, scripts/nvidia_ab.py:
    // 16384^2 596 vs 615 us, 8192^2 137 vs 139; with the serial combine of
    // 32 warps' results block_allreduce had before, 687 and 141).
    int64_t nv = 8;
    if (vectors <= 2 * 32) {
      nv = 2;
    } else if (!(element_size == 4 && ceil_div(vectors, 8) <= 32) && ceil_div(vectors, 4) <= max_block(4)) {
      nv = 4;
      // 16-bit dense rows a block holds: 8 slots after all. The dense
      // kernel holds them without spilling, in blocks half as large; exp is
      // computed twice (H200, scripts/nvidia_ab.py: 16384x12289 bf16 292 vs
      // 223 us, 8192^2 67.4 vs 66.4).
      if (element_size < 4 && d->dense && ceil_div(vectors, 8) > 32) nv = 8;
    }
    const int64_t forced = tuned("SOFTMAX_SLOTS", nv);
    if ((forced == 2 || forced == 4 || forced == 8) &&
        ceil_div(vectors, forced) <= (forced == 2 ? 32 : max_block(forced)))
      nv = forced;
    d->slots = static_cast<int>(nv);
    // Measured on the H200 (scripts/nvidia_ab.py): 16-bit rows in blocks
    // capped at 64 registers (2 blocks of 512 per SM) ran 2-10% faster than
    // with the registers the compiler picks; float32 128-wide rows with a
    // one-block-per-task grid 5% faster than 4 resident grids.
    const int64_t waves = d->dense ? 64 : element_size == 4 && nv == 2 ? 16 : 4;
    d->waves = static_cast<int>(std::clamp<int64_t>(tuned("SOFTMAX_WAVES", waves), 1, 64));
    // (Blocks of up to 1024 threads run one per SM.)
    d->min_blocks = max_block(nv) == 512 && tuned("SOFTMAX_MIN_BLOCKS", element_size < 4 && nv == 4 ? 2 : 1) == 2 ? 2 : 1;
    const int64_t threads = ceil_div(vectors, nv);
    if (threads <= 32) {
      d->kind = Kind::kRows;
      d->group = static_cast<int>(ceil_pow2(threads));
      d->block = 256;
      d->variant = d->dense ? "rows_warp_dense" : "rows_warp";
      return d;
    }
    if (threads <= max_block(nv)) {
      d->kind = Kind::kRows;
      d->group = 0;
      d->block = static_cast<int>(ceil_div(threads, 32) * 32);
      d->variant = d->dense ? "rows_block_dense" : "rows_block";
      plan_stream(*d, aligned_rows, vec);
      return d;
    }
    d->slots = kRowSlots;  // clusters and split rows hold 8 slots
    const int64_t threads8 = ceil_div(vectors, kRowSlots);
    // rows_twice: more than two rows per SM, a block per row reading it
    // twice (the second time partly from L2). Faster than clusters holding
    // the row in registers and than rows_split2 (H200, scripts/nvidia_ab.py,
    // us, 512 threads: vocab 4096 x 151936 bf16 874 vs 1001 with
    // rows_split2, 886 with a grid of one resident grid, 983-990 with one
    // block per SM; float32 1795 vs 1868-1877; 2048 x 65536 float32 / bf16
    // 373 / 183 vs 426 / 232 in clusters of 4 / 2; 4096 x 40000 435 / 226
    // vs 663 / 361).
    if (tuned("SOFTMAX_TWICE", 1) == 1 && d->nrows > 2 * sms) {
      d->kind = Kind::kTwice;
      d->variant = "rows_twice";
      d->splits = 1;
      d->chunk = d->length;
      // Rows of 4+ rounds of a 1024-thread block's loads take 1024 threads
      // (one block per SM: half the rows in flight, more of each in L2):
      // vocab float32 / bf16 1744 / 836 us vs 1788 / 876 with 512, 2048 x
      // 65536 float32 356 vs 374; shorter rows ran slower so (4096 x 40000
      // bf16 323 vs 225: a block's second round mostly idle). The grid
      // holds two resident grids of blocks.
      const int64_t twice_threads = tuned("SOFTMAX_TWICE_THREADS", vectors >= 4 * 1024 * 4 ? 1024 : kTwiceThreads);
      d->block = twice_threads == 1024 ? 1024 : kTwiceThreads;
      const int64_t per_sm = tuned("SOFTMAX_TWICE_BLOCKS", 2 * twice_resident_blocks(d->block));
      d->grid = grid_for(d->nrows, static_cast<int>(std::clamp<int64_t>(per_sm, 1, 4)));
      // The write pass loads and stores marked first to leave L2, so they
      // push out less of the rows other blocks will read again (H200,
      // scripts/nvidia_ab.py, us, two rounds: vocab 4096 x 151936 float32
      // 1712 vs 1726-1744, bf16 815-830 vs 836; 2048 x 65536 337-343 /
      // 173-174 vs 356 / 180-182; 4096 x 40000 float32 402-404 vs 433-438,
      // bf16 225-229 vs 227).
      d->evict_first = tuned("SOFTMAX_TWICE_EVICT_FIRST", 1) == 1;
      dispatch_dtype(d->dtype, [&](auto type) {
        dispatch_index(d->nrows, [&](auto index) {
          using T = decltype(type);
          using Index = decltype(index);
          d->cache_vectors = d->block == 1024 ? twice_cache_vectors<T, Index, 1024>(*d, vec)
                                              : twice_cache_vectors<T, Index, kTwiceThreads>(*d, vec);
        });
      });
      return d;
    }
    // Clusters of 8 only for rows no more than SMs: with more rows,
    // rows_split ran faster (H200, scripts/nvidia_ab.py, two runs: 4096 x
    // 151936 bf16 1001-1004 us vs 1133-1142 with rows_cluster8, before
    // rows_twice took such rows); clusters of 2 and 4 stay.
    const int64_t max_cluster = tuned("SOFTMAX_CLUSTER_MAX", d->nrows <= sms ? kPortableCluster : 4);  // (1: none)
    for (int c = 2; c <= std::min<int64_t>(kPortableCluster, max_cluster); c *= 2) {
      if (ceil_div(threads8, c) <= max_block(kRowSlots)) {
        d->kind = Kind::kRows;
        d->group = 0;
        d->cluster = c;
        d->block = static_cast<int>(ceil_div(ceil_div(threads8, c), 32) * 32);
        d->variant = "rows_cluster" + std::to_string(c);
        return d;
      }
    }
    // rows_resident keeps ~224 KB of each SM's chunk on chip (~30 MB in
    // all) and reads the rest twice. With bulk copies it lost to rows_split2
    // past ~96 MB (H200: 16 x 4M float32 237.2 vs 202.6 us, bf16 116.7 vs
    // 112.0); such chunks (over 700 KB) take per-thread copies, which win
    // (16 x 4M float32 200.3 vs 202.0, bf16 102.6 vs 112.0; 32 x 1M float32
    // 96.9 vs 106.3), so no size limit is planned
    // (OPRT_TUNE_SOFTMAX_RESIDENT_MAX_MB sets one).
    const int64_t resident_max_bytes = tuned("SOFTMAX_RESIDENT_MAX_MB", int64_t{1} << 40) << 20;
    if (d->nrows <= sms && current_device_info().cc_major >= 9 && tuned("SOFTMAX_RESIDENT", 1) == 1 &&
        d->nrows * d->length * element_size <= resident_max_bytes) {
      plan_resident(*d, vec);
      return d;
    }
    if (tuned("SOFTMAX_SPLIT_LAUNCHES", 2) == 2) {
      // rows_split2: chunks of about 128 KB (TileLang's split rows: 32768
      // elements of 512 threads), smaller where that leaves fewer tasks
      // than a resident grid of blocks; at least one round of every
      // thread's loads.
      d->kind = Kind::kSplit2;
      d->variant = "rows_split2";
      const int64_t round = int64_t{kSplitThreads} * vec * 4;
      const int64_t chunk = std::max(round, (tuned("SOFTMAX_SPLIT2_KB", 128) << 10) / element_size);
      plan_chunks(*d, std::max(d->nrows * ceil_div(d->length, chunk), sms * (2048 / kSplitThreads)), round, vec);
      d->grid = grid_one_shot(d->nrows * d->splits);
      return d;
    }
    d->kind = Kind::kSplit;
    d->variant = "rows_split";
    // A resident grid; every block takes about the same share of tasks.
    d->split_unroll = tuned("SOFTMAX_SPLIT_UNROLL", 4) == 8 ? 8 : 4;
    dispatch_dtype(d->dtype, [&](auto type) {
      dispatch_index(d->nrows, [&](auto index) {
        d->grid = d->split_unroll == 8
                      ? resident_grid(softmax_split_kernel<decltype(type), decltype(index), 8>, kSplitThreads, 8)
                      : resident_grid(softmax_split_kernel<decltype(type), decltype(index), 4>, kSplitThreads, 8);
      });
    });
    // One task per block when the rows are few, else about 8 (the last
    // block's extra task then costs at most 1/8 more time); a task is at
    // least one round of loads of the whole block.
    const int64_t per_block = std::max<int64_t>(1, tuned("SOFTMAX_SPLIT_PER_BLOCK", d->nrows <= d->grid ? 1 : 8));
    plan_chunks(*d, per_block * d->grid, int64_t{kSplitThreads} * vec * 4, vec);
    return d;
  }
  // columns: the rows layout's innermost dim are the columns (strided if not contiguous).
  d->kind = Kind::kColumns;
  const StridedLayout<2>& r = p.rows;
  d->columns = r.ndim ? r.inner_size() : 1;
  d->out_col_stride = r.ndim ? r.inner_stride(0) : 1;
  d->src_col_stride = r.ndim ? r.inner_stride(1) : 1;
  d->variant = d->src_col_stride == 1 ? "columns" : "strided";
  d->rows = outer_dims(r);
  d->planes = d->rows.numel();
  const int64_t col_vectors = ceil_div(d->columns, vec);
  const int64_t max_tx = std::clamp<int64_t>(floor_pow2(tuned("SOFTMAX_COLUMN_TX", 32)), 1, 32);
  d->tx = static_cast<int>(std::min<int64_t>(max_tx, ceil_pow2(col_vectors)));
  d->ty = kColumnsThreads / d->tx;
  d->col_tiles = ceil_div(d->columns, int64_t{d->tx} * vec);
  const int64_t tiles = d->planes * d->col_tiles;
  const int64_t want = ceil_div(sms * std::max<int64_t>(1, tuned("SOFTMAX_COLUMN_TASKS", 16)), tiles);
  d->splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, d->length / (int64_t{d->ty} * 8)));
  d->chunk = ceil_div(d->length, d->splits);
  d->splits = ceil_div(d->length, d->chunk);
  d->workspace_bytes = static_cast<size_t>(tiles * d->splits * d->tx * vec) * sizeof(Stats);
  if (d->splits > 1) d->variant += "_split";
  plan_columns_cluster(*d, element_size, vec);
  return d;
}

// rows_shared where it applies takes the rows planned to be read twice or
// held in a cluster's registers (the plan stays, for a misaligned base).
SoftmaxNvidia* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, int32_t dim) {
  std::unique_ptr<SoftmaxNvidia> d(plan(out, src, dim));
  const bool long_rows = d->kind == Kind::kTwice || d->kind == Kind::kResident ||
                         d->kind == Kind::kSplit || d->kind == Kind::kSplit2 ||
                         (d->kind == Kind::kRows && d->cluster > 1);
  if (long_rows) plan_shared_rows(*d);
  return d.release();
}

// ---- launch --------------------------------------------------------------------------
// rows_warp / rows_block: the dense kernel where d.dense and the bases are
// equally aligned (both aligned, unless the rows are shifted anyway).
template <class T, int G, int NV, class Index, int MB = 1>
void launch_rows_group(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  const int groups = G ? d.block / G : 1;
  const unsigned grid = grid_for(ceil_div(d.nrows, groups), std::max(1, 2048 / d.block), d.waves);
  if (d.dense && misalignment16(out) == misalignment16(src) && (d.shift || aligned16(src))) {
    // (rows of a block each: kFlat, unless told otherwise for an A/B)
    constexpr RowForm kShiftedForm = G == 0 ? RowForm::kFlat : RowForm::kShifted;
    const auto kernel = !d.shift  ? softmax_dense_rows_kernel<T, G, NV, MB>
                        : d.flat ? softmax_dense_rows_kernel<T, G, NV, MB, kShiftedForm>
                                 : softmax_dense_rows_kernel<T, G, NV, MB, RowForm::kShifted>;
    kernel<<<grid, d.block, 0, stream>>>(out, src, d.nrows, static_cast<int>(d.length));
    check_launch("softmax_dense_rows_kernel");
    return;
  }
  softmax_rows_kernel<T, G, NV, 1, Index, MB><<<grid, d.block, 0, stream>>>(
      out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride, d.shift);
  check_launch("softmax_rows_kernel");
}

template <class T, class Index>
void launch_rows_stream(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  visit_block_shape<T>(d, [&](auto nv, auto mb) {
    constexpr auto kernel = softmax_stream_kernel<T, nv.value, Index, mb.value>;
    const size_t smem = stream_smem_bytes(d);
    if (opt_in_dynamic_smem<kernel>() < smem)  // on this device (the descriptor may be another's)
      fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows_stream: %zu bytes of shared memory do not fit", smem);
    kernel<<<d.grid, d.block, smem, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride,
                                              d.stream_buffers);
    check_launch("softmax_stream_kernel");
  });
}

// rows_warp: G threads per row (a power of two up to a warp).
template <class T, int NV, class Index>
void launch_rows_slots(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  visit_pow2<1, 32>(d.group, "softmax rows_warp: threads per row", [&](auto group) {
    launch_rows_group<T, group.value, NV, Index>(d, out, src, stream);
  });
}

template <class T, int C, class Index>
void launch_rows_cluster(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  constexpr int NV = kRowSlots;
  const int64_t clusters = std::max<int64_t>(1, grid_for(d.nrows * C, std::max(1, 2048 / d.block), 2) / C);
  launch_with(cluster_attribute(C), softmax_rows_kernel<T, 0, NV, C, Index>, static_cast<unsigned>(clusters * C),
              d.block, 0, stream, out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride, d.shift);
}

template <class T, class Index>
void launch_rows_shared(const SoftmaxNvidia& d, T* out, const T* src, cudaStream_t stream) {
  visit_pow2<1, kLargestCluster>(d.shared_cluster, "softmax rows_shared: blocks per row", [&](auto c) {
    const auto run = [&](auto edges) {
      constexpr auto kernel = softmax_rows_shared_kernel<T, c.value, decltype(edges)::value, Index>;
      if (c.value > kPortableCluster) allow_large_clusters<kernel>();  // on this device (the descriptor may be another's)
      const size_t smem = static_cast<size_t>(d.slice_vectors) * sizeof(Raw16);
      if (opt_in_dynamic_smem<kernel>() < smem)
        fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows_shared: %zu bytes of shared memory do not fit", smem);
      const SharedRowsArgs args{d.length, d.slice_vectors};
      launch_with(cluster_attribute(c.value), kernel, static_cast<unsigned>(d.nrows * c.value), kSharedThreads, smem,
                  stream, out, src, OffsetCalc<2, Index>(d.rows), args);
    };
    if (d.shared_whole && aligned16(src))
      run(std::false_type{});
    else
      run(std::true_type{});
  });
}

void launch_combine(Stats* partials, int64_t groups, int64_t splits, int64_t width, cudaStream_t stream) {
  if (splits == 1) return;  // a single split is already final
  combine_stats_kernel<<<grid_for(ceil_div(groups * width, 8), 8, 2), 256, 0, stream>>>(partials, groups, splits,
                                                                                      width);
  check_launch("combine_stats_kernel");
}

template <class T, class Index>
void launch(const SoftmaxNvidia& d, void* workspace, T* out, const T* src, cudaStream_t stream) {
  // rows_shared stores the vectors it bulk-copied: out and src equally aligned; else the plan under it
  if (d.shared_cluster > 0 && misalignment16(out) == misalignment16(src))
    return launch_rows_shared<T, Index>(d, out, src, stream);
  if (d.kind == Kind::kRows) {
    if (d.cluster > 1) {  // rows_cluster<C>
      return visit_pow2<2, kPortableCluster>(d.cluster, "softmax rows_cluster: blocks per row", [&](auto c) {
        launch_rows_cluster<T, c.value, Index>(d, out, src, stream);
      });
    }
    if (d.group == 0) {  // a block per row
      // rows_stream bulk-copies rows, which must start 16-byte aligned; else rows_block.
      if (d.stream && aligned16(src)) return launch_rows_stream<T, Index>(d, out, src, stream);
      return visit_block_shape<T>(d, [&](auto nv, auto mb) {
        launch_rows_group<T, 0, nv.value, Index, mb.value>(d, out, src, stream);
      });
    }
    switch (d.slots) {
      case 2: return launch_rows_slots<T, 2, Index>(d, out, src, stream);
      case 4: return launch_rows_slots<T, 4, Index>(d, out, src, stream);
      default: return launch_rows_slots<T, 8, Index>(d, out, src, stream);
    }
  }
  if (d.kind == Kind::kSplit || d.kind == Kind::kSplit2 || d.kind == Kind::kTwice || d.kind == Kind::kResident) {
    const SplitArgs args{d.nrows, d.length, d.out_stride, d.splits, d.chunk, static_cast<Stats*>(workspace),
                         d.evict_first};
    const OffsetCalc<2, Index> rows(d.rows);
    if (d.kind == Kind::kTwice) {
      const auto run = [&](auto threads) {
        constexpr int kThreads = decltype(threads)::value;
        if (d.cache_vectors == 0)
          return softmax_rows_twice_kernel<T, Index, kThreads, false><<<d.grid, kThreads, 0, stream>>>(
              out, src, rows, args, 0);
        constexpr auto kernel = softmax_rows_twice_kernel<T, Index, kThreads, true>;
        const size_t smem = static_cast<size_t>(d.cache_vectors) * sizeof(Raw16);
        if (opt_in_dynamic_smem<kernel>() < smem)  // on this device (the descriptor may be another's)
          fail(OPRT_STATUS_INTERNAL_ERROR, "softmax rows_twice: %zu bytes of shared memory do not fit", smem);
        kernel<<<d.grid, kThreads, smem, stream>>>(out, src, rows, args, d.cache_vectors);
      };
      if (d.block == 1024)
        run(std::integral_constant<int, 1024>{});
      else
        run(std::integral_constant<int, kTwiceThreads>{});
      return check_launch("softmax_rows_twice_kernel");
    }
    if (d.kind == Kind::kSplit2) {
      softmax_split_stats_kernel<T, Index><<<d.grid, kSplitThreads, 0, stream>>>(src, rows, args);
      check_launch("softmax_split_stats_kernel");
      return launch_early_if(true, softmax_split_apply_kernel<T, Index>, d.grid, kSplitThreads, 0, stream, out, src,
                             rows, args);
    }
    if (d.kind == Kind::kResident) {
      const auto run = [&](auto bulk) {
        constexpr bool kBulk = decltype(bulk)::value;
        const size_t bytes = resident_cache_bytes<T, Index, kBulk>();  // on this device (the descriptor may be another's)
        return launch_with(cooperative_attribute(), softmax_resident_kernel<T, Index, kBulk>, d.grid,
                           kResidentThreads, bytes, stream, out, src, OffsetCalc<2, Index>(d.rows), args,
                           std::min<int64_t>(d.cache_vectors, static_cast<int64_t>(bytes / 16)), d.ahead);
      };
      return d.resident_copies ? run(std::false_type{}) : run(std::true_type{});
    }
    if (d.split_unroll == 8)
      return launch_with(cooperative_attribute(), softmax_split_kernel<T, Index, 8>, d.grid, kSplitThreads, 0,
                         stream, out, src, OffsetCalc<2, Index>(d.rows), args);
    return launch_with(cooperative_attribute(), softmax_split_kernel<T, Index, 4>, d.grid, kSplitThreads, 0, stream,
                       out, src, OffsetCalc<2, Index>(d.rows), args);
  }
  if (d.column_cluster && aligned16(out) && aligned16(src)) {
    return visit_pow2<1, kLargestCluster>(d.column_cluster, "softmax columns_cluster: blocks per tile", [&](auto c) {
      constexpr auto kernel = softmax_columns_cluster_kernel<T, c.value, Index>;
      if (c.value > kPortableCluster) allow_large_clusters<kernel>();  // on this device (the descriptor may be another's)
      const size_t smem = columns_cluster_smem<T>(d.cluster_chunk, d.cluster_tx);
      if (opt_in_dynamic_smem<kernel>() < smem)
        fail(OPRT_STATUS_INTERNAL_ERROR, "softmax columns_cluster: %zu bytes of shared memory per block", smem);
      const ClusterColumnsArgs args{d.columns, d.cluster_col_tiles, d.length, d.cluster_chunk,
                                    d.src_stride, d.out_stride, d.cluster_tx};
      launch_with(cluster_attribute(c.value), kernel, static_cast<unsigned>(d.planes * d.cluster_col_tiles * c.value),
                  kColumnsThreads, smem, stream, out, src, OffsetCalc<2, Index>(d.rows), args);
    });
  }
  ColumnsArgs args{d.columns, d.col_tiles, d.planes, d.length, d.splits, d.chunk,
                   d.src_col_stride, d.out_col_stride, d.src_stride, d.out_stride, static_cast<Stats*>(workspace)};
  const unsigned grid = grid_for(d.planes * d.col_tiles * d.splits, 8, 2);
  const dim3 block(d.tx, d.ty);
  softmax_columns_stats_kernel<T, Index><<<grid, block, 0, stream>>>(src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_stats_kernel");
  launch_combine(args.partials, d.planes * d.col_tiles, d.splits, int64_t{d.tx} * kVec16<T>, stream);
  softmax_columns_write_kernel<T, Index><<<grid, block, 0, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_write_kernel");
}

void execute(const SoftmaxNvidia& d, void* workspace, void* out, const void* src, cudaStream_t stream) {
  const int64_t numel = d.nrows * d.length;
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  if (d.kind == Kind::kEmpty) return;
  StreamDeviceGuard device(stream);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    dispatch_index(std::max(d.nrows, d.planes), [&](auto index) {
      launch<T, decltype(index)>(d, workspace, static_cast<T*>(out), static_cast<const T*>(src), stream);
    });
  });
}

}  // namespace
}  // namespace oprt::nvidia

using oprt::nvidia::SoftmaxNvidia;

extern "C" {

oprt_status_t oprt_create_softmax_descriptor_nvidia(oprt_descriptor_t* desc, const oprt_tensor_view_t* out,
                                                    const oprt_tensor_view_t* src, int32_t dim) {
  return oprt::create_descriptor<SoftmaxNvidia>(__func__, desc, [&] { return oprt::nvidia::create(out, src, dim); });
}

oprt_status_t oprt_get_softmax_workspace_size_nvidia(oprt_descriptor_t desc, size_t* workspace_bytes) {
  return oprt::get_workspace_size<SoftmaxNvidia>(__func__, desc, workspace_bytes);
}

oprt_status_t oprt_execute_softmax_nvidia(oprt_descriptor_t desc, void* workspace, size_t workspace_bytes, void* out,
                                          const void* src, void* stream) {
  return oprt::execute_descriptor<SoftmaxNvidia>(
      __func__, desc, workspace, workspace_bytes, [&](const SoftmaxNvidia& d) {
        oprt::nvidia::execute(d, workspace, out, src, static_cast<cudaStream_t>(stream));
      });
}

oprt_status_t oprt_destroy_softmax_descriptor_nvidia(oprt_descriptor_t desc) {
  return oprt::destroy_descriptor<SoftmaxNvidia>(__func__, desc);
}

}  // extern "C"
