// The unit of work of the column kernels (sums and softmax over a dim that is
// not the contiguous one): one split of the reduced range, for one tile of
// columns of one plane. Tasks are numbered (plane, tile, split), split
// fastest; or, given tile_tasks (= planes * col_tiles), (split, plane, tile),
// tile fastest, so that blocks running at the same time read neighbouring
// tiles of the same rows.
#ifndef OPRT_COMMON_NVIDIA_COLUMN_TASK_CUH_
#define OPRT_COMMON_NVIDIA_COLUMN_TASK_CUH_

#include <cstdint>

namespace oprt::nvidia {

struct ColumnTask {
  int64_t tile_task;  // plane * col_tiles + tile: indexes per-tile partials
  int64_t split, plane, tile;
};

__device__ __forceinline__ ColumnTask column_task(int64_t task, int64_t splits, int64_t col_tiles,
                                                  int64_t tile_tasks = 0) {
  ColumnTask t;
  if (tile_tasks > 0) {
    t.split = task / tile_tasks;
    t.tile_task = task - t.split * tile_tasks;
  } else {
    t.tile_task = task / splits;
    t.split = task - t.tile_task * splits;
  }
  t.plane = t.tile_task / col_tiles;
  t.tile = t.tile_task - t.plane * col_tiles;
  return t;
}

}  // namespace oprt::nvidia

#endif
