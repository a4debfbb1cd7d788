// CPU stand-in for ops/common/nvidia/launch.cuh: the grid-size helpers, on a
// pretend GPU of kEmulatedSms SMs (few, so grid-stride loops go round).
#ifndef OPRT_EMULATION_LAUNCH_CUH_
#define OPRT_EMULATION_LAUNCH_CUH_

#include <algorithm>
#include <cstdint>

#include "cuda_runtime_shim.h"

namespace oprt::nvidia {

constexpr int kEmulatedSms = 3;

inline unsigned grid_for(int64_t tasks, int blocks_per_sm, int waves = 1) {
  const int64_t cap = int64_t{kEmulatedSms} * blocks_per_sm * waves;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(tasks, cap)));
}
inline unsigned grid_one_shot(int64_t tasks) {
  return static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, (int64_t{1} << 31) - 1));
}
inline void check_launch(const char*) {}

}  // namespace oprt::nvidia

#endif
