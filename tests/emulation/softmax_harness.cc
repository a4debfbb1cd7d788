// Runs an op of the NVIDIA backend's softmax family (the layer in
// ops/common/nvidia/softmax_family/: its plan, launches and kernels,
// through the op's C entry points) on the emulated GPU
// (tests/emulation/include/emulated_gpu.h): softmax, or log_softmax where
// OPRT_HARNESS_LOG_SOFTMAX is 1 (log_softmax_harness.cc);
// tests/test_nvidia_emulated.py builds both. Each case: src random
// (magnitudes 0.5 to 1 times 4), some rows with torch's special values (a
// -inf, all -inf, a NaN, a +inf), out's whole buffer and the workspace
// poisoned with NaN bytes before each of three executes, one per thread
// schedule of the emulator (which also lands asynchronous copies as late
// or as early as allowed); the first compared with the op in float64, the
// others bitwise with it, and out's bytes outside its view checked
// untouched.
// Prints "case dtype variant ms hash" per run (hash: FNV-1a of out's
// buffer, to compare two builds bitwise) and "ok" last; exits 1 on the
// first failure.
//
// What tests/test_nvidia_emulated.py builds it with (sources under ops/) and
// the variants (column 2 of each line, a cluster's size dropped) that must
// all have run (log_softmax_harness.cc declares the same for log_softmax):
// emulate sources: common/softmax_plan.cc softmax/nvidia/softmax_nvidia.cu
// emulate column: 2
// emulate numbered: cluster shared
// emulate variants: empty rows_warp rows_warp_dense rows_block rows_block_dense rows_stream rows_cluster
// emulate variants: rows_shared rows_twice rows_resident rows_resident_copies rows_split rows_split2
// emulate variants: columns columns_split columns_cluster strided
#include "harness_util.h"
#include "log_softmax/log_softmax_api.h"
#include "softmax/softmax_api.h"

#ifndef OPRT_HARNESS_LOG_SOFTMAX
#define OPRT_HARNESS_LOG_SOFTMAX 0
#endif

// OPRT_HARNESS_ENTRY(oprt_create_, _descriptor_ex_nvidia): that entry point of the op.
#if OPRT_HARNESS_LOG_SOFTMAX
#define OPRT_HARNESS_ENTRY(prefix, suffix) prefix##log_softmax##suffix
extern "C" {
OPRT_DECLARE_OP(log_softmax, nvidia)
}
#else
#define OPRT_HARNESS_ENTRY(prefix, suffix) prefix##softmax##suffix
extern "C" {
OPRT_DECLARE_OP(softmax, nvidia)
}
#endif

namespace {

using namespace harness;

constexpr bool kLogSoftmax = OPRT_HARNESS_LOG_SOFTMAX;

struct Case {
  std::string name;
  View src;
  int32_t dim = -1;
  View out;  // shape empty: contiguous
  std::vector<std::pair<std::string, std::string>> tune;  // OPRT_TUNE_<name>=<value> at create (A/B forms)
  std::vector<int> dtypes = {OPRT_DTYPE_F32, OPRT_DTYPE_F16, OPRT_DTYPE_BF16};
  bool specials = true;  // rows 0-3: a -inf, all -inf, a NaN, a +inf
  bool accuracy = false;  // every row 1 then 0s (sums of exp(-1)), held to a few float32 roundings
};

// float64 softmax or log_softmax of one row, as torch gives them: NaN
// throughout where the row holds a NaN or +inf or is all -inf; log_softmax
// -inf where x is. `scale` gets |max| + log(sum), for the tolerance.
std::vector<double> op_of(const std::vector<double>& x, double& scale) {
  double m = -INFINITY;
  bool nan = false;
  for (double v : x) {
    nan = nan || std::isnan(v) || v == INFINITY;
    m = std::max(m, v);
  }
  std::vector<double> y(x.size(), NAN);
  scale = 0.0;
  if (nan || m == -INFINITY) return y;
  double s = 0.0;
  for (double v : x) s += std::exp(v - m);
  scale = std::fabs(m) + std::log(s);
  for (size_t i = 0; i < x.size(); ++i) y[i] = kLogSoftmax ? x[i] - m - std::log(s) : std::exp(x[i] - m) / s;
  return y;
}

// Whether `got` is within the float kernels' error of `want`: for softmax
// relative (the output's rounding, float sums and exps) plus float16's
// subnormal steps or, elsewhere, the flush of results under 2^-126
// (ex2.approx.ftz); for log_softmax the output's rounding plus the float
// error of x - (max + log(sum)), which scales with max + log(sum).
// Accuracy cases (Case::accuracy) allow 16 float32 roundings for the sum,
// where a serial chain per thread drifts with its length.
bool close(int dtype, double got, double want, double scale, bool accuracy) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  const double sum_error = accuracy ? 16 * 0x1p-24 : kLogSoftmax ? 1e-6 : 1e-5;
  if (kLogSoftmax) return std::fabs(got - want) <= roundoff(dtype) * std::fabs(want) + sum_error * (scale + 1.0);
  const double least = dtype == OPRT_DTYPE_F16 ? 0x1p-25 : 0x1p-126;
  return std::fabs(got - want) <= (roundoff(dtype) + sum_error) * want + least;
}

// FNV-1a of a buffer.
uint64_t hash_of(const std::vector<unsigned char>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

bool run(Case c, int dtype, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int esize = element_size(dtype);
  if (c.out.shape.empty()) c.out.shape = c.src.shape;
  const int nd = static_cast<int>(c.src.shape.size());
  const int dim = nd == 0 ? 0 : (c.dim < 0 ? c.dim + nd : c.dim);

  Buffer src(c.src, esize), out(c.out, esize);
  fill_random(src, dtype, seed, 4.0f);
  if (c.accuracy)
    for (int64_t j = src.first; j < src.end; ++j) encode(dtype, 0.0f, src.origin + j * esize);
  // Rows: every index with the op's dim left at 0, in row-major order.
  // (the views' strides as given, before their shapes lose that dim)
  View row_starts{c.src.shape, strides_of(c.src), c.src.shift}, out_row_starts{c.out.shape, strides_of(c.out), c.out.shift};
  const int64_t length = nd == 0 ? 1 : c.src.shape[static_cast<size_t>(dim)];
  const int64_t src_step = nd == 0 ? 0 : row_starts.strides[static_cast<size_t>(dim)];
  const int64_t out_step = nd == 0 ? 0 : out_row_starts.strides[static_cast<size_t>(dim)];
  if (nd > 0) row_starts.shape[static_cast<size_t>(dim)] = out_row_starts.shape[static_cast<size_t>(dim)] = 1;
  const std::vector<int64_t> src_rows = offsets_of(row_starts), out_rows = offsets_of(out_row_starts);
  if (c.specials && length > 1) {
    const float values[4] = {-INFINITY, -INFINITY, NAN, INFINITY};
    for (size_t r = 0; r < std::min<size_t>(4, src_rows.size()); ++r)
      for (int64_t i = 0; i < (r == 1 ? length : 1); ++i)
        encode(dtype, values[r], src.origin + (src_rows[r] + (length / 2 + i) % length * src_step) * esize);
  }
  if (c.accuracy)
    for (int64_t row : src_rows) encode(dtype, 1.0f, src.origin + row * esize);
  const oprt_tensor_view_t out_view = c_view(c.out, dtype, out.origin), src_view = c_view(c.src, dtype, src.origin);
  const Lifecycle run = run_lifecycle(
      c.tune,
      [&](oprt_descriptor_t* desc) {
        return OPRT_HARNESS_ENTRY(oprt_create_, _descriptor_ex_nvidia)(desc, &out_view, &src_view, c.dim);
      },
      OPRT_HARNESS_ENTRY(oprt_get_, _workspace_size_nvidia),
      [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
        return OPRT_HARNESS_ENTRY(oprt_execute_, _nvidia)(desc, workspace, bytes, out.origin, src.origin, nullptr);
      },
      OPRT_HARNESS_ENTRY(oprt_destroy_, _descriptor_nvidia), out);
  const auto report = [&](const std::string& what) { return fail_case(c.name, dtype_name(dtype), run, what); };
  if (!run.failure.empty()) return report(run.failure);

  for (size_t r = 0; r < src_rows.size(); ++r) {
    std::vector<double> x(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i)
      x[static_cast<size_t>(i)] = decode(dtype, src.origin + (src_rows[r] + i * src_step) * esize);
    double scale = 0.0;
    const std::vector<double> want = op_of(x, scale);
    for (int64_t i = 0; i < length; ++i) {
      const double got = decode(dtype, out.origin + (out_rows[r] + i * out_step) * esize), w = want[static_cast<size_t>(i)];
      if (!close(dtype, got, w, scale, c.accuracy))
        return report("row " + std::to_string(r) + " element " + std::to_string(i) + " is " + std::to_string(got) +
                      ", expected " + std::to_string(w));
    }
  }
  if (const std::string outside = untouched_outside(out, c.out, esize); !outside.empty()) return report(outside);
  std::printf("%-30s %-8s %-26s %6.0f ms %016llx\n", c.name.c_str(), dtype_name(dtype), run.variant.c_str(),
              ms_since(start), static_cast<unsigned long long>(hash_of(out.bytes)));
  return true;
}

}  // namespace

int main() {
  if (!conversions_ok()) return 1;
  const std::vector<int> f32 = {OPRT_DTYPE_F32}, bf16 = {OPRT_DTYPE_BF16};
  const std::vector<Case> cases = {
      // (name, src {shape, strides, shift}, dim, out {shape, strides, shift}, tune, dtypes, specials)
      {"warp-dense", {{300, 100}}, -1},
      {"warp-odd", {{200, 37}}, 1},
      {"warp-sliced", {{100, 120}, {128, 1}}, 1},
      {"warp-head", {{100, 120}, {}, 3}, 1},
      {"warp-out-strided", {{50, 64}}, 1, {{50, 64}, {80, 1}}},
      {"block-dense", {{12, 3000}}, -1},
      {"block-odd", {{9, 3001}}, -1},
      {"block-sliced-head", {{9, 2500}, {2600, 1}, 5}, -1},
      {"block-float32-wide", {{5, 12000}}, -1, {}, {}, f32},
      {"single-element-rows", {{40, 1}}, 1},
      {"one-row", {{777}}, 0},
      {"scalar", {{}}, 0},
      {"columns", {{300, 70}}, 0},
      {"columns-3d", {{4, 200, 33}}, 1},
      {"columns-long", {{5000, 24}}, 0},
      {"columns-transposed", {{60, 50}, {1, 60}}, 1},
      // 4096 rows a thread (one split): a running sum of exp(-1) per thread drifted past the accuracy bound
      {"accuracy-columns-long-chains", {{32768, 128}}, 0, {},
       {{"SOFTMAX_COLUMN_CLUSTER", "0"}, {"SOFTMAX_COLUMN_SPLITS", "1"}}, f32, false, true},
      {"strided", {{50, 30}, {2, 100}}, 0},
      {"strided-3d", {{6, 40, 30}, {1200, 1, 40}}, 1},
      {"empty", {{0, 5}}, 1},
      {"stream", {{12, 12000}}, -1, {}, {{"SOFTMAX_STREAM_BELOW", "8"}}, f32},
      {"stream-bfloat16", {{12, 24000}}, -1, {}, {{"SOFTMAX_STREAM_BELOW", "8"}, {"SOFTMAX_STREAM_BLOCKS", "1"}}, bf16},
      {"stream-buffers", {{40, 4000}}, -1, {}, {{"SOFTMAX_STREAM_BELOW", "16"}, {"SOFTMAX_STREAM_BUFFERS", "3"}}, f32},
      {"long-shared", {{3, 20000}}, -1, {}, {}, f32},
      {"long-shared-edges", {{3, 20001}}, -1, {}, {}, f32},
      {"long-shared-cluster", {{2, 60000}}, -1, {}, {}, f32},
      {"long-cluster", {{3, 20000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}}, f32},
      {"long-cluster-head", {{3, 20003}, {}, 1}, -1, {}, {{"SOFTMAX_SHARED", "0"}}, f32},
      {"long-shared-bfloat16", {{3, 40000}}, -1, {}, {}, bf16},
      {"long-cluster-bfloat16", {{3, 40000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}}, bf16},
      {"long-twice-bfloat16", {{10, 40000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}}, bf16},
      {"long-twice", {{10, 20000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}}, f32},
      {"long-twice-cached", {{10, 20000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}, {"SOFTMAX_TWICE_CACHE_KB", "48"}}, f32},
      {"long-resident", {{2, 40000}}, -1, {}, {{"SOFTMAX_SHARED", "0"}, {"SOFTMAX_CLUSTER_MAX", "1"}}},
      {"long-resident-copies", {{2, 40003}}, -1, {},
       {{"SOFTMAX_SHARED", "0"}, {"SOFTMAX_CLUSTER_MAX", "1"}, {"SOFTMAX_RESIDENT_COPIES", "1"}}},
      {"long-split2", {{3, 40000}}, -1, {},
       {{"SOFTMAX_SHARED", "0"}, {"SOFTMAX_CLUSTER_MAX", "1"}, {"SOFTMAX_RESIDENT", "0"}}},
      {"long-split", {{3, 40001}}, -1, {},
       {{"SOFTMAX_SHARED", "0"}, {"SOFTMAX_CLUSTER_MAX", "1"}, {"SOFTMAX_RESIDENT", "0"}, {"SOFTMAX_SPLIT_LAUNCHES", "1"}}},
  };
  bool ok = true;
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (int dtype : c.dtypes) ok = ok && run(c, dtype, seed++);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
