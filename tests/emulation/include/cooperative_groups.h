// Stand-in for <cooperative_groups.h> on the emulated GPU (emulated_gpu.h):
// the cluster and grid groups the kernels use.
#ifndef OPRT_EMULATION_COOPERATIVE_GROUPS_H_
#define OPRT_EMULATION_COOPERATIVE_GROUPS_H_

#include "emulated_gpu.h"

namespace cooperative_groups {

// A launch's blocks run one cluster at a time: the group is the cluster.
struct cluster_group {
  void sync() const { emu::arrive_and_wait(emu::engine.group_barrier, "cluster.sync()"); }
  unsigned num_blocks() const { return emu::engine.cluster; }
  unsigned block_rank() const { return static_cast<unsigned>(emu::current_fiber().block_in_group); }
  template <class T>
  T* map_shared_rank(T* p, unsigned rank) const {
    return emu::shared_of_block(p, static_cast<int>(rank));
  }
};
inline cluster_group this_cluster() {
  if (emu::engine.whole_grid || emu::engine.group_blocks != static_cast<int>(emu::engine.cluster))
    emu::die("this_cluster() outside a cluster launch");
  return {};
}

// A cooperative launch runs the whole grid at once.
struct grid_group {
  void sync() const {
    if (!emu::engine.whole_grid) emu::die("grid.sync() outside a cooperative launch");
    emu::arrive_and_wait(emu::engine.group_barrier, "grid.sync()");
  }
  bool is_valid() const { return emu::engine.whole_grid; }
};
inline grid_group this_grid() { return {}; }

}  // namespace cooperative_groups

// Split cluster barrier (sm_90): arrive, do other work, wait.
inline void __cluster_barrier_arrive() {
  (void)cooperative_groups::this_cluster();
  emu::current_fiber().cluster_arrival = emu::arrive(emu::engine.group_barrier);
}
inline void __cluster_barrier_wait() {
  emu::wait(emu::engine.group_barrier, emu::current_fiber().cluster_arrival, "__cluster_barrier_wait()");
}

#endif
