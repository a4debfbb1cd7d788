// The CUDA keywords, built-in variables and intrinsics the emulated kernels
// use, for a host compiler. A launch runs every block and thread of the grid
// in turn: valid for kernels with no barriers, shuffles or shared memory.
#ifndef OPRT_EMULATION_CUDA_RUNTIME_SHIM_H_
#define OPRT_EMULATION_CUDA_RUNTIME_SHIM_H_

#include <cstdint>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

using cudaStream_t = void*;

struct EmulatedDim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline EmulatedDim3 blockIdx, threadIdx, gridDim, blockDim;

inline uint32_t __umulhi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }

// kernel<<<grid, block, shared, stream>>>(args...) is rewritten to this.
template <class... Params, class... Args>
void emulate_launch(void (*kernel)(Params...), unsigned grid, unsigned block, int /*shared*/, cudaStream_t,
                    Args... args) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t) {
      blockIdx.x = b;
      threadIdx.x = t;
      kernel(args...);
    }
}

#endif
