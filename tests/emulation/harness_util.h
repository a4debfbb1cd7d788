// What the harnesses of the emulated NVIDIA ops share: strided views over
// 64-byte aligned buffers poisoned with NaN bytes, the dtype codecs (the
// emulation's own 16-bit conversions, checked here against known
// encodings) and C views for the ops' entry points.
#ifndef OPRT_EMULATION_HARNESS_UTIL_H_
#define OPRT_EMULATION_HARNESS_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "operator_runtime/operator_runtime.h"

namespace harness {

struct View {
  std::vector<int64_t> shape, strides;  // strides empty: contiguous
  int64_t shift = 0;                    // elements from the buffer's (64-byte aligned) start to element 0
};
inline int element_size(int dtype) { return dtype == OPRT_DTYPE_F32 ? 4 : 2; }
inline const char* dtype_name(int dtype) {
  return dtype == OPRT_DTYPE_F32 ? "float32" : dtype == OPRT_DTYPE_F16 ? "float16" : "bfloat16";
}
inline double decode(int dtype, const unsigned char* p) {
  if (dtype == OPRT_DTYPE_F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return dtype == OPRT_DTYPE_F16 ? __half2float(__half{bits}) : __bfloat162float(__nv_bfloat16{bits});
}
inline void encode(int dtype, float x, unsigned char* p) {
  if (dtype == OPRT_DTYPE_F32) return (void)std::memcpy(p, &x, 4);
  const uint16_t bits = dtype == OPRT_DTYPE_F16 ? __float2half_rn(x).bits : __float2bfloat16_rn(x).bits;
  std::memcpy(p, &bits, 2);
}
// Unit roundoff of the dtype: the error of rounding a float sum into it.
inline double roundoff(int dtype) { return dtype == OPRT_DTYPE_F32 ? 0x1p-24 : dtype == OPRT_DTYPE_F16 ? 0x1p-11 : 0x1p-8; }

inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t running = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = running;
    running *= std::max<int64_t>(shape[d], 1);
  }
  return s;
}
// v's strides: its own, or contiguous where it gives none.
inline std::vector<int64_t> strides_of(const View& v) { return v.strides.empty() ? contiguous_strides(v.shape) : v.strides; }

// A view's elements inside a 64-byte aligned allocation: [first, end) element offsets.
struct Buffer {
  std::vector<unsigned char> bytes;
  unsigned char* origin = nullptr;  // element 0 of the view
  int64_t first = 0, end = 0;
  Buffer(const View& v, int esize) {
    const std::vector<int64_t> strides = strides_of(v);
    int64_t lo = 0, hi = 1;
    bool empty = false;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      empty = empty || v.shape[d] == 0;
      (strides[d] < 0 ? lo : hi) += (v.shape[d] - 1) * strides[d];
    }
    if (empty) lo = 0, hi = 0;
    first = lo - v.shift;
    end = hi;
    bytes.assign(static_cast<size_t>((end - first) * esize + 64), 0xff);
    unsigned char* p = bytes.data();
    while (reinterpret_cast<uintptr_t>(p) % 64 != 0) ++p;
    origin = p - first * esize;
  }
};

// Offsets of every element of a view, in row-major index order.
inline std::vector<int64_t> offsets_of(const View& v) {
  const std::vector<int64_t> strides = strides_of(v);
  std::vector<int64_t> offsets = {0};
  for (size_t d = 0; d < v.shape.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t o : offsets)
      for (int64_t i = 0; i < v.shape[d]; ++i) next.push_back(o + i * strides[d]);
    offsets.swap(next);
  }
  return offsets;
}

inline oprt_tensor_view_t c_view(const View& v, int dtype, void* data) {
  oprt_tensor_view_t c = {};
  c.data = data;
  c.dtype = dtype;
  c.ndim = static_cast<int32_t>(v.shape.size());
  const std::vector<int64_t> strides = strides_of(v);
  for (size_t d = 0; d < v.shape.size(); ++d) c.shape[d] = v.shape[d], c.strides[d] = strides[d];
  return c;
}

// Fills a view's buffer (every element of [first, end)) with values of
// magnitude 0.5 to 1 times `scale`, random signs.
inline void fill_random(Buffer& b, int dtype, uint32_t seed, float scale = 1.0f) {
  const int esize = element_size(dtype);
  uint32_t state = seed;
  for (int64_t j = b.first; j < b.end; ++j) {
    state = state * 1664525u + 1013904223u;
    const float magnitude = scale * (0.5f + static_cast<float>(state >> 9) * 0x1p-24f);  // [0.5, 1) * scale
    encode(dtype, (state & 1) ? -magnitude : magnitude, b.origin + j * esize);
  }
}

// Sets OPRT_TUNE_<name>=<value> for the life of the object (the plan reads them at create).
struct Tuning {
  std::vector<std::pair<std::string, std::string>> knobs;
  explicit Tuning(std::vector<std::pair<std::string, std::string>> k) : knobs(std::move(k)) {
    for (const auto& [name, value] : knobs) setenv(("OPRT_TUNE_" + name).c_str(), value.c_str(), 1);
  }
  ~Tuning() {
    for (const auto& [name, value] : knobs) unsetenv(("OPRT_TUNE_" + name).c_str());
  }
};

// Runs execute() (an op's execute call: true on success) once per thread
// schedule of the emulator, out's buffer and the workspace poisoned with
// NaN bytes before each. Returns "" or what went wrong: a failed call, or
// results that differ between schedules (a race).
template <class Execute>
std::string execute_under_schedules(Execute execute, Buffer& out, std::vector<unsigned char>& workspace) {
  std::vector<unsigned char> first;
  for (emu::Schedule schedule :
       {emu::Schedule::kRoundRobin, emu::Schedule::kLowestFirst, emu::Schedule::kHighestFirst}) {
    emu::engine.schedule = schedule;
    std::fill(out.bytes.begin(), out.bytes.end(), 0xff);
    std::fill(workspace.begin(), workspace.end(), 0xff);
    if (!execute()) return std::string("execute: ") + oprt_last_error();
    if (schedule == emu::Schedule::kRoundRobin) first = out.bytes;
    else if (out.bytes != first) return "the result depends on the order threads ran in (a race)";
  }
  emu::engine.schedule = emu::Schedule::kRoundRobin;
  return "";
}

// One case's descriptor lifecycle: create (with the knobs set), a workspace
// of the size it asks for, execute under every schedule
// (execute_under_schedules), destroy.
struct Lifecycle {
  std::string variant;  // the plan's name
  std::string failure;  // "" or what went wrong
};
template <class Create, class WorkspaceSize, class Execute, class Destroy>
Lifecycle run_lifecycle(const std::vector<std::pair<std::string, std::string>>& knobs, Create create,
                        WorkspaceSize workspace_size, Execute execute, Destroy destroy, Buffer& out) {
  oprt_descriptor_t desc = nullptr;
  oprt_status_t created;
  {
    const Tuning tuning(knobs);
    created = create(&desc);
  }
  if (created != 0) return {"", std::string("create: ") + oprt_last_error()};
  Lifecycle result{oprt_descriptor_variant(desc), ""};
  size_t bytes = 0;
  workspace_size(desc, &bytes);
  std::vector<unsigned char> workspace(bytes, 0xff);
  result.failure = execute_under_schedules(
      [&] { return execute(desc, bytes ? workspace.data() : nullptr, bytes) == 0; }, out, workspace);
  destroy(desc);
  return result;
}

// A failed case, for `return report(what)`: "FAIL <case> <dtypes> (<variant>): <what>".
inline bool fail_case(const std::string& name, const std::string& dtypes, const Lifecycle& run,
                      const std::string& what) {
  std::printf("FAIL %s %s (%s): %s\n", name.c_str(), dtypes.c_str(), run.variant.c_str(), what.c_str());
  return false;
}

// "" if every byte of out's buffer outside the view's elements still holds the poison.
inline std::string untouched_outside(const Buffer& out, const View& view, int esize) {
  std::vector<bool> inside(out.bytes.size(), false);
  for (int64_t offset : offsets_of(view))
    for (int b = 0; b < esize; ++b) inside[static_cast<size_t>(out.origin + offset * esize + b - out.bytes.data())] = true;
  for (size_t b = 0; b < out.bytes.size(); ++b)
    if (!inside[b] && out.bytes[b] != 0xff)
      return "byte " + std::to_string(b) + " of out's buffer, outside its view, was written";
  return "";
}

// Milliseconds since `start`.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The emulation's 16-bit conversions (also this test's reference) on values
// whose encodings are known, and round trips of every finite encoding.
inline bool conversions_exact() {
  const struct {
    float value;
    uint16_t half, bfloat;
  } known[] = {{1.0f, 0x3c00, 0x3f80},     {-2.0f, 0xc000, 0xc000},     {65504.0f, 0x7bff, 0x4780},
               {65520.0f, 0x7c00, 0x4780}, {0x1p-24f, 0x0001, 0x3380}, {0x1p-25f, 0x0000, 0x3300},
               {1.0f + 0x1p-11f, 0x3c00, 0x3f80}, {1.0f + 0x3p-11f, 0x3c02, 0x3f80}, {0.1f, 0x2e66, 0x3dcd}};
  for (const auto& k : known)
    if (__float2half_rn(k.value).bits != k.half || __float2bfloat16_rn(k.value).bits != k.bfloat) {
      std::printf("FAIL conversion of %a: half %#x bfloat16 %#x\n", k.value, __float2half_rn(k.value).bits,
                  __float2bfloat16_rn(k.value).bits);
      return false;
    }
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const bool half_nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0, bf_nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    if (!half_nan && __float2half_rn(__half2float(__half{b})).bits != b) return false;
    if (!bf_nan && __float2bfloat16_rn(__bfloat162float(__nv_bfloat16{b})).bits != b) return false;
  }
  return true;
}

// Every harness checks them first: "FAILED: ..." and false when they are off.
inline bool conversions_ok() {
  if (conversions_exact()) return true;
  std::printf("FAILED: 16-bit conversions\n");
  return false;
}

}  // namespace harness

#endif
