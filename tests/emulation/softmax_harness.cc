// Runs the NVIDIA backend's softmax (ops/softmax/nvidia: its plan, launches
// and kernels, through its C entry points) on the emulated GPU
// (tests/emulation/include/emulated_gpu.h); tests/test_nvidia_emulated.py
// builds it. Each case: src random (magnitudes 0.5 to 1 times 4), some
// rows with torch's special values (a -inf, all -inf, a NaN, a +inf), out's
// whole buffer and the workspace poisoned with NaN bytes before each of
// three executes, one per thread schedule of the emulator (which also
// lands asynchronous copies as late or as early as allowed); the first
// compared with a float64 softmax, the others bitwise with it, and out's
// bytes outside its view checked untouched.
// Prints "case dtype variant ms" per run and "ok" last; exits 1 on the
// first failure.
#include "harness_util.h"
#include "softmax/softmax_api.h"

extern "C" {
OPRT_DECLARE_SOFTMAX_API(nvidia)
}

namespace {

using namespace harness;

struct Case {
  std::string name;
  View src;
  int32_t dim = -1;
  View out;  // shape empty: contiguous
  std::vector<std::pair<std::string, std::string>> tune;  // OPRT_TUNE_<name>=<value> at create (A/B forms)
  std::vector<int> dtypes = {OPRT_DTYPE_F32, OPRT_DTYPE_F16, OPRT_DTYPE_BF16};
  bool specials = true;  // rows 0-3: a -inf, all -inf, a NaN, a +inf
};

// float64 softmax of one row, as torch gives it: NaN throughout where the
// row holds a NaN or +inf or is all -inf.
std::vector<double> softmax_of(const std::vector<double>& x) {
  double m = -INFINITY;
  bool nan = false;
  for (double v : x) {
    nan = nan || std::isnan(v) || v == INFINITY;
    m = std::max(m, v);
  }
  std::vector<double> y(x.size(), NAN);
  if (nan || m == -INFINITY) return y;
  double s = 0.0;
  for (double v : x) s += std::exp(v - m);
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::exp(x[i] - m) / s;
  return y;
}

bool run(Case c, int dtype, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int esize = element_size(dtype);
  if (c.out.shape.empty()) c.out.shape = c.src.shape;
  const int nd = static_cast<int>(c.src.shape.size());
  const int dim = nd == 0 ? 0 : (c.dim < 0 ? c.dim + nd : c.dim);

  Buffer src(c.src, esize), out(c.out, esize);
  fill_random(src, dtype, seed, 4.0f);
  // Rows: every index with the softmax dim's left at 0, in row-major order.
  // (the views' strides as given, before their shapes lose the softmax dim)
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
  const oprt_tensor_view_t out_view = c_view(c.out, dtype, out.origin), src_view = c_view(c.src, dtype, src.origin);
  const Lifecycle run = run_lifecycle(
      c.tune,
      [&](oprt_descriptor_t* desc) { return oprt_create_softmax_descriptor_nvidia(desc, &out_view, &src_view, c.dim); },
      oprt_get_softmax_workspace_size_nvidia,
      [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
        return oprt_execute_softmax_nvidia(desc, workspace, bytes, out.origin, src.origin, nullptr);
      },
      oprt_destroy_softmax_descriptor_nvidia, out);
  const auto report = [&](const std::string& what) { return fail_case(c.name, dtype_name(dtype), run, what); };
  if (!run.failure.empty()) return report(run.failure);

  const double tolerance = roundoff(dtype) + 1e-5;  // relative: the output's rounding, float sums and exps
  // absolute: float16's subnormal steps; elsewhere the flush of results under 2^-126 (ex2.approx.ftz)
  const double least = dtype == OPRT_DTYPE_F16 ? 0x1p-25 : 0x1p-126;
  for (size_t r = 0; r < src_rows.size(); ++r) {
    std::vector<double> x(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i)
      x[static_cast<size_t>(i)] = decode(dtype, src.origin + (src_rows[r] + i * src_step) * esize);
    const std::vector<double> want = softmax_of(x);
    for (int64_t i = 0; i < length; ++i) {
      const double got = decode(dtype, out.origin + (out_rows[r] + i * out_step) * esize), w = want[static_cast<size_t>(i)];
      const bool ok = std::isnan(w) ? std::isnan(got) : std::fabs(got - w) <= tolerance * w + least;
      if (!ok)
        return report("row " + std::to_string(r) + " element " + std::to_string(i) + " is " + std::to_string(got) +
                      ", expected " + std::to_string(w));
    }
  }
  if (const std::string outside = untouched_outside(out, c.out, esize); !outside.empty()) return report(outside);
  std::printf("%-30s %-8s %-26s %6.0f ms\n", c.name.c_str(), dtype_name(dtype), run.variant.c_str(), ms_since(start));
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
