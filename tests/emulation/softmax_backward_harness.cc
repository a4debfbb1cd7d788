// Runs a two-input op of the NVIDIA backend's softmax family (the layer in
// ops/common/nvidia/softmax_family/row_sum.cuh: its plan, launches and
// kernels, through the op's C entry points) on the emulated GPU
// (tests/emulation/include/emulated_gpu.h): softmax_backward, or
// log_softmax_backward where OPRT_HARNESS_LOG_SOFTMAX_BACKWARD is 1
// (log_softmax_backward_harness.cc). Each case: grad and output random
// (magnitudes 0.5 to 1), each in its own layout, out's whole buffer
// poisoned before each of three executes (one per thread schedule of the
// emulator); the first compared with the op in float64, the others bitwise
// with it, and out's bytes outside its view checked untouched.
// Prints "case dtype variant ms" per run and "ok" last; exits 1 on the
// first failure.
//
// What tests/test_nvidia_emulated.py builds it with (sources under ops/) and
// the variants (column 2 of each line) that must all have run:
// emulate sources: common/softmax_plan.cc softmax_backward/nvidia/softmax_backward_nvidia.cu
// emulate column: 2
// emulate variants: empty rows_warp rows_block rows_held rows_split columns columns_split columns_vector columns_vector_split strided strided_split
#include "harness_util.h"
#include "log_softmax_backward/log_softmax_backward_api.h"
#include "softmax_backward/softmax_backward_api.h"

#ifndef OPRT_HARNESS_LOG_SOFTMAX_BACKWARD
#define OPRT_HARNESS_LOG_SOFTMAX_BACKWARD 0
#endif

#if OPRT_HARNESS_LOG_SOFTMAX_BACKWARD
#define OPRT_HARNESS_ENTRY(prefix, suffix) prefix##log_softmax_backward##suffix
extern "C" {
OPRT_DECLARE_OP(log_softmax_backward, nvidia)
}
#else
#define OPRT_HARNESS_ENTRY(prefix, suffix) prefix##softmax_backward##suffix
extern "C" {
OPRT_DECLARE_OP(softmax_backward, nvidia)
}
#endif

namespace {

using namespace harness;

constexpr bool kLog = OPRT_HARNESS_LOG_SOFTMAX_BACKWARD;

struct Case {
  std::string name;
  View grad;
  int32_t dim = -1;
  View output;  // shape empty: grad's shape, contiguous
  View out;     // shape empty: grad's shape, contiguous
  std::vector<std::pair<std::string, std::string>> tune;  // OPRT_TUNE_<name>=<value> at create
};

// The op on one row in float64; `scale` gets, per element, the size of the
// terms whose difference it is (the float kernels' error scales with it).
std::vector<double> op_of(const std::vector<double>& g, const std::vector<double>& y, std::vector<double>& scale) {
  double s = 0.0, size = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    s += kLog ? g[i] : g[i] * y[i];
    size += std::fabs(kLog ? g[i] : g[i] * y[i]);
  }
  std::vector<double> out(g.size());
  scale.assign(g.size(), 0.0);
  for (size_t i = 0; i < g.size(); ++i) {
    out[i] = kLog ? g[i] - std::exp(y[i]) * s : y[i] * (g[i] - s);
    scale[i] = kLog ? std::fabs(g[i]) + std::exp(y[i]) * size : std::fabs(y[i]) * (std::fabs(g[i]) + size);
  }
  return out;
}

// The rows of a view along `dim`: each row's first element's offset (in
// row-major order of the other dims) and the step along the dim.
std::vector<int64_t> row_starts(const View& v, int dim, int64_t& step) {
  View starts{v.shape, strides_of(v), v.shift};
  step = v.shape.empty() ? 0 : starts.strides[static_cast<size_t>(dim)];
  if (!v.shape.empty()) starts.shape[static_cast<size_t>(dim)] = 1;
  return offsets_of(starts);
}

bool run(Case c, int dtype, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int esize = element_size(dtype);
  if (c.output.shape.empty()) c.output.shape = c.grad.shape;
  if (c.out.shape.empty()) c.out.shape = c.grad.shape;
  const int nd = static_cast<int>(c.grad.shape.size());
  const int dim = nd == 0 ? 0 : (c.dim < 0 ? c.dim + nd : c.dim);
  Buffer grad(c.grad, esize), output(c.output, esize), out(c.out, esize);
  fill_random(grad, dtype, seed);
  fill_random(output, dtype, seed + 1000);
  const oprt_tensor_view_t out_view = c_view(c.out, dtype, out.origin), grad_view = c_view(c.grad, dtype, grad.origin),
                           output_view = c_view(c.output, dtype, output.origin);
  const Lifecycle run = run_lifecycle(
      c.tune,
      [&](oprt_descriptor_t* desc) {
        return OPRT_HARNESS_ENTRY(oprt_create_, _descriptor_ex_nvidia)(desc, &out_view, &grad_view, &output_view,
                                                                       c.dim);
      },
      OPRT_HARNESS_ENTRY(oprt_get_, _workspace_size_nvidia),
      [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
        return OPRT_HARNESS_ENTRY(oprt_execute_, _nvidia)(desc, workspace, bytes, out.origin, grad.origin,
                                                          output.origin, nullptr);
      },
      OPRT_HARNESS_ENTRY(oprt_destroy_, _descriptor_nvidia), out);
  const auto report = [&](const std::string& what) { return fail_case(c.name, dtype_name(dtype), run, what); };
  if (!run.failure.empty()) return report(run.failure);

  int64_t g_step = 0, y_step = 0, o_step = 0;
  const std::vector<int64_t> g_rows = row_starts(c.grad, dim, g_step), y_rows = row_starts(c.output, dim, y_step),
                             o_rows = row_starts(c.out, dim, o_step);
  const int64_t length = nd == 0 ? 1 : c.grad.shape[static_cast<size_t>(dim)];
  for (size_t r = 0; r < g_rows.size() && length > 0; ++r) {
    std::vector<double> g(static_cast<size_t>(length)), y(static_cast<size_t>(length)), scale;
    for (int64_t i = 0; i < length; ++i) {
      g[static_cast<size_t>(i)] = decode(dtype, grad.origin + (g_rows[r] + i * g_step) * esize);
      y[static_cast<size_t>(i)] = decode(dtype, output.origin + (y_rows[r] + i * y_step) * esize);
    }
    const std::vector<double> want = op_of(g, y, scale);
    for (int64_t i = 0; i < length; ++i) {
      const size_t k = static_cast<size_t>(i);
      const double got = decode(dtype, out.origin + (o_rows[r] + i * o_step) * esize);
      if (std::fabs(got - want[k]) > roundoff(dtype) * std::fabs(want[k]) + 1e-5 * scale[k] + 1e-6)
        return report("row " + std::to_string(r) + " element " + std::to_string(i) + " is " + std::to_string(got) +
                      ", expected " + std::to_string(want[k]));
    }
  }
  if (const std::string outside = untouched_outside(out, c.out, esize); !outside.empty()) return report(outside);
  std::printf("%-30s %-8s %-26s %6.0f ms\n", c.name.c_str(), dtype_name(dtype), run.variant.c_str(), ms_since(start));
  return true;
}

}  // namespace

int main() {
  if (!conversions_ok()) return 1;
  const std::vector<Case> cases = {
      // (name, grad {shape, strides, shift}, dim, output {...}, out {...})
      {"warp", {{300, 100}}, -1},
      {"warp-odd", {{200, 37}}, 1},
      {"warp-short", {{50, 3}}, 1},
      {"warp-sliced-head", {{100, 120}, {128, 1}, 3}, 1, {{100, 120}, {}, 1}},
      {"warp-out-strided", {{50, 64}}, 1, {}, {{50, 64}, {80, 1}}},
      {"warp-shifted-both", {{64, 120}, {}, 2}, -1, {{64, 120}, {}, 2}, {{64, 120}, {}, 1}},
      {"warp-misaligned-output", {{64, 120}}, -1, {{64, 120}, {}, 1}},
      {"block", {{12, 3000}}, -1, {}, {}, {{"ROW_SUM_HELD_VECTORS", "0"}}},
      {"held", {{12, 3000}}, -1},
      {"held-odd", {{9, 3001}}, -1},
      {"held-shifted-both-out-misaligned", {{9, 3000}, {}, 3}, -1, {{9, 3000}, {}, 3}, {{9, 3000}, {}, 1}},
      {"held-mismatched", {{9, 3000}, {3001, 1}, 1}, -1},
      {"block-wide-held", {{2, 16384}}, -1, {}, {}, {{"ROW_SUM_SPLITS", "1"}}},
      {"block-odd-head", {{9, 3001}, {}, 5}, -1, {{9, 3001}, {3100, 1}}},
      {"block-wide", {{3, 20000}}, -1, {}, {}, {{"ROW_SUM_SPLITS", "1"}}},
      {"block-misaligned-output", {{9, 3000}, {3001, 1}, 1}, -1},
      {"block-shifted-both", {{9, 3000}, {}, 3}, -1, {{9, 3000}, {}, 3}},
      // (the emulated GPU's 4 SMs: fewer than 8 rows split)
      {"split", {{3, 20000}}, -1},
      {"split-odd-heads", {{2, 17001}, {17003, 1}, 3}, 1, {{2, 17001}, {17003, 1}, 3}, {{2, 17001}, {17005, 1}, 2}},
      {"split-grad-out-misaligned", {{2, 9000}, {}, 1}, -1, {}, {{2, 9000}, {}, 5}, {{"ROW_SUM_SPLITS", "3"}}},
      {"split-one-row-many-chunks", {{5000}}, 0, {}, {}, {{"ROW_SUM_SPLITS", "40"}}},
      {"single-element-rows", {{40, 1}}, 1},
      {"one-row", {{777}}, 0},
      {"scalar", {{}}, 0},
      {"columns", {{100, 70}}, 0},
      {"columns-split", {{300, 70}}, 0},
      {"columns-split-told", {{300, 70}}, 0, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "5"}}},
      {"columns-narrow-split", {{700, 3}}, 0, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "4"}}},
      {"columns-out-strided-split", {{300, 70}}, 0, {}, {{300, 70}, {72, 1}, 1}, {{"ROW_SUM_COLUMN_SPLITS", "3"}}},
      {"columns-3d", {{4, 200, 33}}, 1},
      {"columns-out-offset", {{100, 24}}, 0, {}, {{100, 24}, {}, 3}},
      {"columns-vector", {{100, 64}}, 0},
      {"columns-vector-split", {{600, 40}}, 0, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "5"}}},
      {"columns-vector-3d", {{3, 130, 16}}, 1},
      {"columns-vector-plane-misaligned", {{2, 50, 24}, {1204, 24, 1}}, 1},
      {"columns-vector-base-misaligned", {{100, 64}, {}, 1}, 0},
      {"columns-vector-split-base-misaligned", {{600, 40}, {}, 1}, 0, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "5"}}},
      {"columns-vector-out-misaligned-split", {{600, 40}}, 0, {}, {{600, 40}, {}, 1}, {{"ROW_SUM_COLUMN_SPLITS", "3"}}},
      {"strided-transposed-grad", {{60, 50}, {1, 60}}, 1},
      {"strided-output-transposed", {{60, 50}}, -1, {{60, 50}, {1, 60}}},
      {"strided", {{50, 30}, {2, 100}}, 0},
      {"strided-3d", {{6, 40, 30}, {1200, 1, 40}}, 1},
      {"strided-expanded", {{20, 30}, {0, 1}}, 0},
      {"strided-split", {{200, 30}, {2, 400}}, 0, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "3"}}},
      {"strided-3d-split", {{6, 90, 30}, {2700, 1, 90}}, 1, {}, {}, {{"ROW_SUM_COLUMN_SPLITS", "4"}}},
      {"empty", {{0, 5}}, 1},
  };
  bool ok = true;
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (int dtype : {OPRT_DTYPE_F32, OPRT_DTYPE_F16, OPRT_DTYPE_BF16}) ok = ok && run(c, dtype, seed++);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
