// Runs the NVIDIA backend's reduce_sum (ops/reduce_sum/nvidia: its plan,
// launches and kernels, through its C entry points) on the emulated GPU
// (tests/emulation/include/emulated_gpu.h); tests/test_nvidia_emulated.py
// builds it. Each case, in float32, float16 and bfloat16: src filled with
// values of magnitude 0.5 to 1 (so a dropped or doubled element shows),
// out's whole buffer and the workspace poisoned with NaN bytes before each
// of three executes, one per thread schedule of the emulator (each exposes
// other shared-memory races); the first compared with a float64 sum, the
// others bitwise with it, and out's bytes outside its view checked
// untouched.
// Prints "case dtype variant" per run and "ok" last; exits 1 on the first
// failure.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "operator_runtime/operator_runtime.h"
#include "reduce_sum/reduce_sum_api.h"

extern "C" {
OPRT_DECLARE_REDUCE_SUM_API(nvidia)
}

namespace {

struct View {
  std::vector<int64_t> shape, strides;  // strides empty: contiguous
  int64_t shift = 0;                    // elements from the buffer's (64-byte aligned) start to element 0
};
struct Case {
  std::string name;
  View src;
  std::vector<int32_t> dims;
  bool keepdim = false;
  View out;  // shape empty: contiguous, the shape torch.sum gives
  std::vector<std::pair<std::string, std::string>> tune;  // OPRT_TUNE_<name>=<value> at create (A/B forms)
};

int element_size(int dtype) { return dtype == OPRT_DTYPE_F32 ? 4 : 2; }
const char* dtype_name(int dtype) {
  return dtype == OPRT_DTYPE_F32 ? "float32" : dtype == OPRT_DTYPE_F16 ? "float16" : "bfloat16";
}
double decode(int dtype, const unsigned char* p) {
  if (dtype == OPRT_DTYPE_F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return dtype == OPRT_DTYPE_F16 ? __half2float(__half{bits}) : __bfloat162float(__nv_bfloat16{bits});
}
void encode(int dtype, float x, unsigned char* p) {
  if (dtype == OPRT_DTYPE_F32) return (void)std::memcpy(p, &x, 4);
  const uint16_t bits = dtype == OPRT_DTYPE_F16 ? __float2half_rn(x).bits : __float2bfloat16_rn(x).bits;
  std::memcpy(p, &bits, 2);
}
// Unit roundoff of the dtype: the error of rounding a float sum into it.
double roundoff(int dtype) { return dtype == OPRT_DTYPE_F32 ? 0x1p-24 : dtype == OPRT_DTYPE_F16 ? 0x1p-11 : 0x1p-8; }

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t running = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = running;
    running *= std::max<int64_t>(shape[d], 1);
  }
  return s;
}

// A view's elements inside a 64-byte aligned allocation: [first, end) element offsets.
struct Buffer {
  std::vector<unsigned char> bytes;
  unsigned char* origin = nullptr;  // element 0 of the view
  int64_t first = 0, end = 0;
  Buffer(const View& v, int esize) {
    int64_t lo = 0, hi = 1;
    bool empty = false;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      empty = empty || v.shape[d] == 0;
      (v.strides[d] < 0 ? lo : hi) += (v.shape[d] - 1) * v.strides[d];
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
std::vector<int64_t> offsets_of(const View& v) {
  std::vector<int64_t> offsets = {0};
  for (size_t d = 0; d < v.shape.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t o : offsets)
      for (int64_t i = 0; i < v.shape[d]; ++i) next.push_back(o + i * v.strides[d]);
    offsets.swap(next);
  }
  return offsets;
}

oprt_tensor_view_t c_view(const View& v, int dtype, void* data) {
  oprt_tensor_view_t c = {};
  c.data = data;
  c.dtype = dtype;
  c.ndim = static_cast<int32_t>(v.shape.size());
  for (size_t d = 0; d < v.shape.size(); ++d) c.shape[d] = v.shape[d], c.strides[d] = v.strides[d];
  return c;
}

bool run(Case c, int dtype, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int esize = element_size(dtype);
  if (c.src.strides.empty()) c.src.strides = contiguous_strides(c.src.shape);
  const int nd = static_cast<int>(c.src.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(nd), false);
  for (int32_t d : c.dims) reduced[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  std::vector<int64_t> out_shape;
  for (int d = 0; d < nd; ++d)
    if (!reduced[static_cast<size_t>(d)]) out_shape.push_back(c.src.shape[static_cast<size_t>(d)]);
    else if (c.keepdim) out_shape.push_back(1);
  if (c.out.shape.empty()) c.out.shape = out_shape;
  if (c.out.strides.empty()) c.out.strides = contiguous_strides(c.out.shape);

  Buffer src(c.src, esize), out(c.out, esize);
  uint32_t state = seed;
  for (int64_t j = src.first; j < src.end; ++j) {
    state = state * 1664525u + 1013904223u;
    const float magnitude = 0.5f + static_cast<float>(state >> 9) * 0x1p-24f;  // [0.5, 1)
    encode(dtype, (state & 1) ? -magnitude : magnitude, src.origin + j * esize);
  }
  const oprt_tensor_view_t out_view = c_view(c.out, dtype, out.origin), src_view = c_view(c.src, dtype, src.origin);
  oprt_descriptor_t desc = nullptr;
  for (const auto& [name, value] : c.tune) setenv(("OPRT_TUNE_" + name).c_str(), value.c_str(), 1);
  const oprt_status_t created = oprt_create_reduce_sum_descriptor_nvidia(
      &desc, &out_view, &src_view, c.dims.data(), static_cast<int32_t>(c.dims.size()), c.keepdim);
  for (const auto& [name, value] : c.tune) unsetenv(("OPRT_TUNE_" + name).c_str());
  if (created != 0) {
    std::printf("FAIL %s %s: create: %s\n", c.name.c_str(), dtype_name(dtype), oprt_last_error());
    return false;
  }
  const std::string variant = oprt_descriptor_variant(desc);
  size_t workspace_bytes = 0;
  oprt_get_reduce_sum_workspace_size_nvidia(desc, &workspace_bytes);
  std::vector<unsigned char> workspace(workspace_bytes, 0xff);
  std::vector<std::vector<unsigned char>> results;
  for (emu::Schedule schedule :
       {emu::Schedule::kRoundRobin, emu::Schedule::kLowestFirst, emu::Schedule::kHighestFirst}) {
    emu::engine.schedule = schedule;
    std::fill(out.bytes.begin(), out.bytes.end(), 0xff);
    std::fill(workspace.begin(), workspace.end(), 0xff);
    if (oprt_execute_reduce_sum_nvidia(desc, workspace_bytes ? workspace.data() : nullptr, workspace_bytes, out.origin,
                                       src.origin, nullptr) != 0) {
      std::printf("FAIL %s %s (%s): execute: %s\n", c.name.c_str(), dtype_name(dtype), variant.c_str(),
                  oprt_last_error());
      return false;
    }
    results.push_back(out.bytes);
  }
  oprt_destroy_reduce_sum_descriptor_nvidia(desc);
  if (results[0] != results[1] || results[0] != results[2]) {
    std::printf("FAIL %s %s (%s): the result depends on the order threads ran in (a race)\n", c.name.c_str(),
                dtype_name(dtype), variant.c_str());
    return false;
  }

  // float64 reference: out index -> (sum, sum of magnitudes), walking src in index order.
  std::vector<double> sum(static_cast<size_t>(offsets_of(View{out_shape, contiguous_strides(out_shape), 0}).size()), 0.0);
  std::vector<double> magnitude(sum.size(), 0.0);
  const std::vector<int64_t> src_offsets = offsets_of(c.src);
  for (size_t i = 0; i < src_offsets.size(); ++i) {
    size_t rest = i, out_index = 0, out_scale = 1;
    for (int d = nd - 1; d >= 0; --d) {
      const size_t size = static_cast<size_t>(c.src.shape[static_cast<size_t>(d)]);
      const size_t index = rest % size;
      rest /= size;
      if (!reduced[static_cast<size_t>(d)]) {
        out_index += index * out_scale;
        out_scale *= size;
      }
    }
    const double x = decode(dtype, src.origin + src_offsets[i] * esize);
    sum[out_index] += x;
    magnitude[out_index] += std::fabs(x);
  }
  std::vector<bool> written(out.bytes.size(), false);
  const std::vector<int64_t> out_offsets = offsets_of(c.out);
  for (size_t i = 0; i < out_offsets.size(); ++i) {
    const unsigned char* p = out.origin + out_offsets[i] * esize;
    const double got = decode(dtype, p), want = sum[i];
    const double tolerance = roundoff(dtype) * std::fabs(want) + 0x1p-21 * magnitude[i];
    if (!(std::fabs(got - want) <= tolerance)) {
      std::printf("FAIL %s %s (%s): out element %zu is %.9g, expected %.9g\n", c.name.c_str(), dtype_name(dtype),
                  variant.c_str(), i, got, want);
      return false;
    }
    for (int b = 0; b < esize; ++b) written[static_cast<size_t>(p - out.bytes.data() + b)] = true;
  }
  for (size_t b = 0; b < out.bytes.size(); ++b)
    if (!written[b] && out.bytes[b] != 0xff) {
      std::printf("FAIL %s %s (%s): byte %zu of out's buffer, outside its view, was written\n", c.name.c_str(),
                  dtype_name(dtype), variant.c_str(), b);
      return false;
    }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-30s %-8s %-26s %6.0f ms\n", c.name.c_str(), dtype_name(dtype), variant.c_str(), ms);
  return true;
}

// The emulation's 16-bit conversions (also this test's reference) on values
// whose encodings are known, and round trips of every finite encoding.
bool conversions_ok() {
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

}  // namespace

int main() {
  if (!conversions_ok()) {
    std::printf("FAILED: 16-bit conversions\n");
    return 1;
  }
  const std::vector<Case> cases = {
      // (name, src {shape, strides, shift}, dims, keepdim, out {shape, strides, shift})
      {"rows-many", {{600, 257}}, {1}},
      {"rows-long-few", {{3, 20011}}, {-1}},
      {"rows-head", {{300, 131}, {}, 3}, {1}},
      {"rows-short", {{1000, 64}}, {1}},
      {"rows-short-misaligned-base", {{1000, 64}, {}, 1}, {1}},
      {"rows-short-sliced", {{500, 32}, {40, 1}}, {1}},
      {"rows-of-runs", {{3, 50, 7, 40}}, {1, 3}},
      {"rows-of-runs-many", {{200, 6, 7, 12}}, {1, 3}},
      {"rows-keepdim-out-strided", {{40, 6, 50}}, {2}, true, {{40, 6, 1}, {1, 40, 1}}},
      {"scalar-full", {{70001}}, {0}},
      {"scalar-all-dims", {{37, 41, 29}}, {0, 1, 2}},
      {"strided", {{8, 30, 40}, {2400, 80, 2}}, {1}},
      {"strided-long", {{5, 6000}, {1, 5}}, {1}},
      {"strided-split", {{3, 40000}, {2, 6}}, {1}},
      {"columns", {{3000, 40}}, {0}},
      {"columns-wide", {{60, 4000}}, {0}},
      {"columns-odd", {{2001, 33}}, {0}},
      {"columns-odd-head", {{700, 301}, {}, 1}, {0}},
      {"columns-planes", {{6, 500, 36}}, {1}},
      {"columns-two-dims", {{30, 20, 70}}, {0, 1}},
      {"columns-tall", {{20000, 64}}, {0}},
      {"columns-cluster", {{4096, 256}}, {0}},
      {"columns-negative-stride", {{300, 48}, {-48, 1}}, {0}},
      {"zeros", {{5, 0, 3}}, {1}},
      {"empty", {{0, 7}}, {1}},
      {"no-dims", {{4, 5}}, {}},
      // the forms the plan takes only when told (scripts/nvidia_ab.py)
      {"tuned-rows-not-dense", {{600, 257}}, {1}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}}},
      {"tuned-rows-unroll-8", {{600, 257}, {}, 1}, {1}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_UNROLL", "8"}}},
      {"tuned-split-unroll-4", {{70001}}, {0}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_UNROLL", "4"}}},
      {"tuned-wide-groups-loop", {{300, 2048}}, {1}, false, {}, {{"REDUCE_MIN_ROUNDS", "1"}, {"REDUCE_WAVES", "1"}}},
      {"tuned-wide-groups-loop-rows", {{300, 1, 2048}}, {1, 2}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_MIN_ROUNDS", "1"}, {"REDUCE_WAVES", "1"}}},
      {"tuned-short-pairs", {{1001, 32}}, {1}, false, {}, {{"REDUCE_SHORT_ROWS", "2"}}},
      {"tuned-short-waves", {{5000, 16}}, {1}, false, {}, {{"REDUCE_SHORT_WAVES", "1"}}},
      {"tuned-finish-threads", {{70001}}, {0}, false, {}, {{"REDUCE_FINISH_THREADS", "256"}}},
      {"tuned-late-finish", {{70001}}, {0}, false, {}, {{"REDUCE_EARLY_FINISH", "0"}}},
      {"tuned-columns-shifted-cluster", {{2001, 33}}, {0}, false, {}, {{"REDUCE_COLUMN_CLUSTER", "2"}}},
      {"tuned-columns-float32-shifted", {{700, 301}, {}, 1}, {0}, false, {}, {{"REDUCE_COLUMN_SHIFTED", "2"}}},
      {"tuned-columns-splits-fastest", {{3000, 40}}, {0}, false, {}, {{"REDUCE_COLUMN_CLUSTER", "0"}, {"REDUCE_COLUMN_ORDER", "0"}}},
      {"tuned-columns-unfit", {{3000, 40}}, {0}, false, {}, {{"REDUCE_COLUMN_CLUSTER", "0"}, {"REDUCE_COLUMN_FIT", "0"}}},
      {"tuned-columns-narrow-tiles", {{3000, 256}}, {0}, false, {}, {{"REDUCE_COLUMN_TX", "4"}}},
  };
  bool ok = true;
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (int dtype : {OPRT_DTYPE_F32, OPRT_DTYPE_F16, OPRT_DTYPE_BF16}) ok = ok && run(c, dtype, seed++);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
