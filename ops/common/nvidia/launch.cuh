// Grid sizing shared by the kernels: enough blocks to fill every SM a few
// times over, never more than the work needs.
#ifndef OPRT_COMMON_NVIDIA_LAUNCH_CUH_
#define OPRT_COMMON_NVIDIA_LAUNCH_CUH_

#include <algorithm>
#include <cstdint>

#include "cuda_check.cuh"

namespace oprt::nvidia {

// Blocks for `tasks` independent block-sized tasks in a grid-stride loop:
// at most `blocks_per_sm` resident blocks on every SM (times `waves`).
inline unsigned grid_for(int64_t tasks, int blocks_per_sm, int waves = 1) {
  const int64_t cap = int64_t{current_device_info().sm_count} * blocks_per_sm * waves;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(tasks, cap)));
}

// Blocks for `tasks` tasks, one each (the kernel keeps a grid-stride loop,
// which runs once unless there are more than 2^31 - 1 tasks). For streaming
// kernels this beat a grid of a few blocks per SM striding over the work
// (scripts/launch_shapes.cu: float32 add 4.37 vs 4.13 TB/s on the H200).
inline unsigned grid_one_shot(int64_t tasks) {
  return static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, (int64_t{1} << 31) - 1));
}

}  // namespace oprt::nvidia

#endif
