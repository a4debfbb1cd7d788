// Which launch shape streams fastest? float32 copy and add of 256M elements
// with grid-stride and one-shot grids, block sizes and vectors per thread,
// 16-byte stores written in PTX as in ops/common/nvidia/cuda_types.cuh.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/launch_shapes scripts/launch_shapes.cu && /tmp/launch_shapes
// Chose the dense elementwise kernel's shape (elementwise.cuh); H200 numbers in docs/nvidia.md.
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include <algorithm>
__device__ __forceinline__ void st(float4* p, float4 v) {
  asm volatile("st.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
__device__ __forceinline__ void st_cs(float4* p, float4 v) {
  asm volatile("st.global.cs.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
template <int U, bool CS, bool TWO>
__global__ void add_gs(float4* o, const float4* a, const float4* b, long n) {
  for (long base = (long)blockIdx.x * blockDim.x * U + threadIdx.x; base < n; base += (long)gridDim.x * blockDim.x * U) {
    float4 x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { long v = base + (long)u * blockDim.x; if (v < n) { x[u] = a[v]; if (TWO) y[u] = b[v]; } }
#pragma unroll
    for (int u = 0; u < U; ++u) { long v = base + (long)u * blockDim.x; if (v < n) {
      float4 r = x[u]; if (TWO) { r.x += y[u].x; r.y += y[u].y; r.z += y[u].z; r.w += y[u].w; }
      if (CS) st_cs(o + v, r); else st(o + v, r); } }
  }
}
int main() {
  const long N = 256l << 20, n = N / 4;
  float4 *a, *b, *o;
  cudaMalloc(&a, N * 4); cudaMalloc(&b, N * 4); cudaMalloc(&o, N * 4);
  cudaMemset(a, 0, N * 4); cudaMemset(b, 0, N * 4);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto time = [&](const char* name, double bytes, auto launch) {
    for (int i = 0; i < 3; ++i) launch();
    std::vector<float> ts;
    for (int r = 0; r < 15; ++r) { cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms); }
    std::sort(ts.begin(), ts.end());
    printf("%-44s %8.1f us %6.3f TB/s  %s\n", name, ts[7] * 1e3, bytes / (ts[7] * 1e-3) / 1e12, cudaGetErrorString(cudaGetLastError()));
  };
  const double add_bytes = 3.0 * N * 4, copy_bytes = 2.0 * N * 4;
  time("memcpy", copy_bytes, [&] { cudaMemcpyAsync(o, a, N * 4, cudaMemcpyDeviceToDevice); });
  for (int two = 0; two < 2; ++two) {
    double bytes = two ? add_bytes : copy_bytes;
    const char* op = two ? "add " : "copy";
#define RUN(U, CS, BLOCK, GRID, label) { char nm[96]; snprintf(nm, 96, "%s %s", op, label); \
    if (two) time(nm, bytes, [&] { add_gs<U, CS, true><<<GRID, BLOCK>>>(o, a, b, n); }); \
    else time(nm, bytes, [&] { add_gs<U, CS, false><<<GRID, BLOCK>>>(o, a, b, n); }); }
    RUN(4, false, 256, sms * 16, "gs 256t U4 grid=sms*16 (current)");
    RUN(4, false, 256, (unsigned)((n + 1023) / 1024), "one-shot 256t U4");
    RUN(4, false, 128, (unsigned)((n + 511) / 512), "one-shot 128t U4 (torch-like)");
    RUN(2, false, 128, (unsigned)((n + 255) / 256), "one-shot 128t U2");
    RUN(8, false, 256, sms * 8, "gs 256t U8 grid=sms*8");
    RUN(4, false, 256, sms * 8, "gs 256t U4 grid=sms*8");
    RUN(4, false, 256, sms * 32, "gs 256t U4 grid=sms*32");
    RUN(4, false, 512, sms * 4, "gs 512t U4 grid=sms*4");
    RUN(4, true, 256, sms * 16, "gs 256t U4 grid=sms*16 st.cs");
    RUN(4, true, 128, (unsigned)((n + 511) / 512), "one-shot 128t U4 st.cs");
  }
  return 0;
}
