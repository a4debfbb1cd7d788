// Grid sizing shared by the kernels: enough blocks to fill every SM a few
// times over, never more than the work needs.
#ifndef OPRT_COMMON_NVIDIA_LAUNCH_CUH_
#define OPRT_COMMON_NVIDIA_LAUNCH_CUH_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

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
// kernels this moves more bytes per second than a grid of a few blocks per
// SM striding over the work.
inline unsigned grid_one_shot(int64_t tasks) {
  return static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, (int64_t{1} << 31) - 1));
}

// Calls f(std::integral_constant<int, N>{}) for N == n, a power of two from
// kMin to kMax: how a planned group size (threads or lanes per row) picks
// its kernel instance. Any other n is a planning bug and fails.
template <int kMin, int kMax, class F>
void visit_pow2(int n, const char* what, F&& f) {
  if (n == kMin) return f(std::integral_constant<int, kMin>{});
  if constexpr (kMin < kMax) {
    return visit_pow2<kMin * 2, kMax>(n, what, f);
  } else {
    fail(OPRT_STATUS_INTERNAL_ERROR, "%s: %d is not a planned power of two", what, n);
  }
}

// Launches kernel<<<grid, block, smem, stream>>>(args...) with one launch
// attribute: a thread block cluster shape, or cooperative (every block
// resident at once, so the blocks may wait for each other at a grid-wide
// barrier; a grid too large to be resident fails instead of hanging).
// (The launch configuration with one attribute, which must outlive it.)
inline cudaLaunchConfig_t config_with(const cudaLaunchAttribute& attribute, unsigned grid, dim3 block,
                                      size_t smem, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = const_cast<cudaLaunchAttribute*>(&attribute);
  config.numAttrs = 1;
  return config;
}
template <class... Params, class... Args>
void launch_with(cudaLaunchAttribute attribute, void (*kernel)(Params...), unsigned grid, dim3 block,
                 size_t smem, cudaStream_t stream, Args... args) {
  const cudaLaunchConfig_t config = config_with(attribute, grid, block, smem, stream);
  OPRT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}

// Thread block cluster sizes (blocks): any kernel may use the portable
// size; up to the largest once allow_large_clusters() has let it (sm_90).
constexpr int kPortableCluster = 8;
constexpr int kLargestCluster = 16;

inline cudaLaunchAttribute cluster_attribute(unsigned blocks) {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = blocks;
  a.val.clusterDim.y = 1;
  a.val.clusterDim.z = 1;
  return a;
}

inline cudaLaunchAttribute cooperative_attribute() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeCooperative;
  a.val.cooperative = 1;
  return a;
}

// Programmatic dependent launch (sm_90 and later): a kernel launched with
// early_launch_attribute() may start while the kernel before it on the
// stream still runs, once every block of that one has called
// allow_early_launch(); it must call wait_for_prior_grid() before touching
// memory the earlier kernel writes or reads (the wait returns once that
// kernel has finished and its writes are visible). This hides the launch
// gap between a split reduction and its finishing kernel. Elsewhere, and
// without the attribute, both calls do nothing.
__device__ __forceinline__ void allow_early_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
inline cudaLaunchAttribute early_launch_attribute() {
  cudaLaunchAttribute a = {};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

// Launches kernel<<<grid, block, smem, stream>>>(args...), with
// early_launch_attribute() when `early` and the device has it (sm_90+).
template <class... Params, class... Args>
void launch_early_if(bool early, void (*kernel)(Params...), unsigned grid, dim3 block, size_t smem,
                     cudaStream_t stream, Args... args) {
  const cudaLaunchAttribute attribute = early_launch_attribute();
  cudaLaunchConfig_t config = config_with(attribute, grid, block, smem, stream);
  if (!early || current_device_info().cc_major < 9) config.numAttrs = 0;
  OPRT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}

// Blocks of `kernel` (with `block` threads, `smem` bytes of dynamic shared
// memory) one SM holds at once on the current device.
template <class Kernel>
int resident_blocks_per_sm(Kernel kernel, int block, size_t smem = 0) {
  int per_sm = 0;
  OPRT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem));
  return per_sm;
}

// The largest grid of `kernel` (with `block` threads) that is resident at
// once, at most `max_per_sm` blocks per SM: the grid of a cooperative launch.
template <class Kernel>
unsigned resident_grid(Kernel kernel, int block, int max_per_sm, size_t smem = 0) {
  const int per_sm = resident_blocks_per_sm(kernel, block, smem);
  return static_cast<unsigned>(current_device_info().sm_count * std::clamp(per_sm, 1, max_per_sm));
}

// Lets Kernel use as much dynamic shared memory as a block may opt in to on
// the current device past its static shared memory, at most `cap` bytes
// (whole 16-byte words). Set once per device, on the first call (the first
// cap wins); returns the bytes.
template <auto Kernel>
size_t opt_in_dynamic_smem(size_t cap = SIZE_MAX) {
  static std::atomic<size_t> set_on[kMaxDevices] = {};  // bytes, per device; 0: not yet
  const DeviceInfo& info = current_device_info();       // (fails for a device index past kMaxDevices)
  int device = 0;
  OPRT_CUDA_CHECK(cudaGetDevice(&device));
  if (const size_t bytes = set_on[device].load()) return bytes;
  cudaFuncAttributes attributes = {};
  OPRT_CUDA_CHECK(cudaFuncGetAttributes(&attributes, Kernel));
  const int64_t room = info.max_smem_per_block_optin - static_cast<int64_t>(attributes.sharedSizeBytes);
  const size_t bytes = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(room, 0)), cap) / 16 * 16;
  OPRT_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  set_on[device].store(bytes);
  return bytes;
}

// Lets Kernel run in clusters of up to kLargestCluster blocks (past
// kPortableCluster); set once per device.
template <auto Kernel>
void allow_large_clusters() {
  static std::atomic<bool> set_on[kMaxDevices] = {};
  (void)current_device_info();  // (fails for a device index past kMaxDevices)
  int device = 0;
  OPRT_CUDA_CHECK(cudaGetDevice(&device));
  if (set_on[device].load()) return;
  OPRT_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  set_on[device].store(true);
}

// Clusters of `cluster` blocks of `kernel` the current device holds at once
// (0: such a cluster cannot run there).
template <class Kernel>
int resident_clusters(Kernel kernel, unsigned cluster, unsigned block, size_t smem) {
  const cudaLaunchAttribute attribute = cluster_attribute(cluster);
  const cudaLaunchConfig_t config = config_with(attribute, cluster, block, smem, nullptr);
  int clusters = 0;
  OPRT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  return clusters;
}

}  // namespace oprt::nvidia

#endif
