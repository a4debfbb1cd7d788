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
// Prints "case dtype variant ms" per run and "ok" last; exits 1 on the first
// failure.
//
// What tests/test_nvidia_emulated.py builds it with (sources under ops/) and
// the variants (column 2 of each line, a cluster's size dropped) that must
// all have run:
// emulate sources: reduce_sum/reduce_sum_plan.cc reduce_sum/nvidia/reduce_sum_nvidia.cu
// emulate column: 2
// emulate numbered: cluster
// emulate variants: empty zeros rows rows_split rows_dense rows_dense_split rows_aligned rows_aligned_split
// emulate variants: rows_short strided strided_split columns columns_split columns_cluster columns_shifted
// emulate variants: columns_shifted_split columns_shifted_cluster columns_whole columns_whole_split
// emulate variants: columns_whole_cluster
#include "harness_util.h"
#include "reduce_sum/reduce_sum_api.h"

extern "C" {
OPRT_DECLARE_OP(reduce_sum, nvidia)
}


namespace {

using namespace harness;

struct Case {
  std::string name;
  View src;
  std::vector<int32_t> dims;
  bool keepdim = false;
  View out;  // shape empty: contiguous, the shape torch.sum gives
  std::vector<std::pair<std::string, std::string>> tune;  // OPRT_TUNE_<name>=<value> at create (A/B forms)
  float constant = 0;  // nonzero: every element of src is this value (accuracy cases, see main)
  std::vector<int> dtypes = {OPRT_DTYPE_F32, OPRT_DTYPE_F16, OPRT_DTYPE_BF16};
};

// The float64 reference: out index -> (sum, sum of magnitudes), walking src
// in index order. A reduced dim of stride 0 (broadcast) is walked once and
// weighted by its size, so sums over 2^36 broadcast elements stay cheap.
std::pair<std::vector<double>, std::vector<double>> reference(const Case& c, const std::vector<bool>& reduced,
                                                              int dtype, const unsigned char* origin, size_t outputs) {
  View walked = c.src;
  walked.strides = strides_of(c.src);
  double weight = 1;
  for (size_t d = 0; d < walked.shape.size(); ++d)
    if (reduced[d] && walked.strides[d] == 0) weight *= static_cast<double>(walked.shape[d]), walked.shape[d] = 1;
  std::vector<double> sum(outputs, 0.0), magnitude(outputs, 0.0);
  const std::vector<int64_t> offsets = offsets_of(walked);
  const int nd = static_cast<int>(walked.shape.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    size_t rest = i, out_index = 0, out_scale = 1;
    for (int d = nd - 1; d >= 0; --d) {
      const size_t size = static_cast<size_t>(walked.shape[static_cast<size_t>(d)]);
      const size_t index = rest % size;
      rest /= size;
      if (!reduced[static_cast<size_t>(d)]) {
        out_index += index * out_scale;
        out_scale *= size;
      }
    }
    const double x = decode(dtype, origin + offsets[i] * element_size(dtype));
    sum[out_index] += weight * x;
    magnitude[out_index] += weight * std::fabs(x);
  }
  return {sum, magnitude};
}

bool run(Case c, int dtype, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int esize = element_size(dtype);
  const int nd = static_cast<int>(c.src.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(nd), false);
  for (int32_t d : c.dims) reduced[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  std::vector<int64_t> out_shape;
  for (int d = 0; d < nd; ++d)
    if (!reduced[static_cast<size_t>(d)]) out_shape.push_back(c.src.shape[static_cast<size_t>(d)]);
    else if (c.keepdim) out_shape.push_back(1);
  if (c.out.shape.empty()) c.out.shape = out_shape;

  Buffer src(c.src, esize), out(c.out, esize);
  fill_random(src, dtype, seed);
  if (c.constant != 0)
    for (int64_t j = src.first; j < src.end; ++j) encode(dtype, c.constant, src.origin + j * esize);
  const oprt_tensor_view_t out_view = c_view(c.out, dtype, out.origin), src_view = c_view(c.src, dtype, src.origin);
  const Lifecycle run = run_lifecycle(
      c.tune,
      [&](oprt_descriptor_t* desc) {
        return oprt_create_reduce_sum_descriptor_ex_nvidia(desc, &out_view, &src_view, c.dims.data(),
                                                        static_cast<int32_t>(c.dims.size()), c.keepdim);
      },
      oprt_get_reduce_sum_workspace_size_nvidia,
      [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
        return oprt_execute_reduce_sum_nvidia(desc, workspace, bytes, out.origin, src.origin, nullptr);
      },
      oprt_destroy_reduce_sum_descriptor_nvidia, out);
  const auto report = [&](const std::string& what) { return fail_case(c.name, dtype_name(dtype), run, what); };
  if (!run.failure.empty()) return report(run.failure);

  const auto [sum, magnitude] =
      reference(c, reduced, dtype, src.origin, static_cast<size_t>(offsets_of(View{out_shape}).size()));
  // Random values: a few float32 roundings of the magnitudes. Constant ones
  // (accuracy cases): every sum the same value, where a serial chain per
  // thread drifts with its length; 8 float32 roundings of the sum bound a
  // chain that grows with the log of the count.
  const double accumulation = c.constant != 0 ? 8 * 0x1p-24 : 0x1p-21;
  const std::vector<int64_t> out_offsets = offsets_of(c.out);
  for (size_t i = 0; i < out_offsets.size(); ++i) {
    const double got = decode(dtype, out.origin + out_offsets[i] * esize), want = sum[i];
    const double tolerance = roundoff(dtype) * std::fabs(want) + accumulation * magnitude[i];
    if (!(std::fabs(got - want) <= tolerance))
      return report("out element " + std::to_string(i) + " is " + std::to_string(got) + ", expected " +
                    std::to_string(want));
  }
  if (const std::string outside = untouched_outside(out, c.out, esize); !outside.empty()) return report(outside);
  std::printf("%-30s %-8s %-26s %6.0f ms\n", c.name.c_str(), dtype_name(dtype), run.variant.c_str(), ms_since(start));
  return true;
}

}  // namespace

int main() {
  if (!conversions_ok()) return 1;
  const std::vector<int> wide = {OPRT_DTYPE_F32, OPRT_DTYPE_BF16};  // sums past float16's range
  const std::vector<std::pair<std::string, std::string>> kLongChains = {
      {"REDUCE_COLUMN_CLUSTER_MAX", "2"}, {"REDUCE_COLUMN_CLUSTER_MIN_BLOCKS", "1"}, {"REDUCE_COLUMN_CLUSTER_TX", "32"}};
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
      {"rows-aligned", {{64, 2048}}, {1}},
      {"rows-aligned-split-partial", {{2, 40008}}, {1}},
      {"scalar-full", {{70001}}, {0}},
      {"scalar-aligned", {{80000}}, {0}},
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
      {"columns-tall-not-whole", {{20000, 72}}, {0}},
      {"columns-whole", {{64, 128}}, {0}},
      {"columns-whole-split", {{1000, 256}}, {0}, false, {}, {{"REDUCE_COLUMN_CLUSTER", "0"}}},
      {"columns-cluster", {{4096, 256}}, {0}},
      {"columns-negative-stride", {{300, 48}, {-48, 1}}, {0}},
      // negative strides (a reversed view) and broadcast (stride-0) runs, on the rows, strided and split
      // paths (float16 sums of 50003 values under 1 stay finite)
      {"rows-reversed", {{40, 301}, {-301, -1}}, {1}},
      {"strided-reversed-split", {{2, 40000}, {-40000, -1}}, {1}},
      {"strided-broadcast-split", {{3, 50003}, {2, 0}}, {1}},
      {"scalar-broadcast-split", {{50003}, {0}}, {0}},
      {"columns-reversed-columns", {{300, 48}, {48, -1}}, {0}},
      // accuracy: sums of one value, within 8 float32 roundings (see run). Broadcast reduced dims (2^36
      // elements, as tests/test_layouts.py sums on a GPU, and 2^31 over the split and cluster forms) and
      // long real columns: clusters of 16 blocks down 16384 rows, in the whole-rows and the general
      // loop, and 256 threads down 3 columns (their sums combined 8 at a time), where the serial chains
      // of a thread and of the block's combine drifted 13 to 40 float32 roundings; float16 where the
      // sums stay in its range
      {"accuracy-columns-broadcast-2^36", {{22904744789, 3}, {0, 1}}, {0}, false, {}, {}, 0.1f, wide},
      {"accuracy-columns-broadcast-cluster", {{1 << 20, 2048, 64}, {0, 64, 1}}, {0, 1}, false, {}, {}, 0.1f, wide},
      {"accuracy-columns-broadcast-split", {{1 << 20, 2048, 64}, {0, 64, 1}}, {0, 1}, false, {},
       {{"REDUCE_COLUMN_CLUSTER", "0"}}, 0.1f, wide},
      {"accuracy-columns-broadcast-general-split", {{1 << 20, 2048, 40}, {0, 40, 1}}, {0, 1}, false, {},
       {{"REDUCE_COLUMN_CLUSTER", "0"}}, 0.1f, wide},
      {"accuracy-columns-long", {{16384, 120}}, {0}, false, {}, {}, 0.1f},
      {"accuracy-columns-whole-long", {{16384, 128}}, {0}, false, {}, {}, 0.1f},
      {"accuracy-columns-narrow", {{1 << 16, 3}}, {0}, false, {}, {}, 0.1f},
      // 2048 rows a thread (clusters of 2 blocks: few threads, long chains), the whole-rows and the
      // general loop, and 512 runs a task added on the strided path (a broadcast run inside real runs):
      // a running sum over the folds or runs drifted 15 to 80 float32 roundings here
      {"accuracy-columns-whole-long-chains", {{32768, 128}}, {0}, false, {}, kLongChains, 0.1f, wide},
      {"accuracy-columns-long-chains", {{32768, 120}}, {0}, false, {}, kLongChains, 0.1f, wide},
      {"accuracy-rows-broadcast-runs", {{1 << 18, 1000}, {1, 0}}, {0, 1}, false, {}, {}, 0.1f, wide},
      // long real rows, enough of them to fill the emulated GPU unsplit: 128 rounds of loads a lane
      // (rows_aligned), whose running sums drifted past 8 float32 roundings
      {"accuracy-rows-long", {{16, 1 << 20}}, {1}, false, {}, {}, 0.1f, {OPRT_DTYPE_F32}},
      {"zeros", {{5, 0, 3}}, {1}},
      {"empty", {{0, 7}}, {1}},
      {"no-dims", {{4, 5}}, {}},
      // the forms the plan takes only when told (OPRT_TUNE_* knobs, ops/common/tuning.h)
      {"tuned-rows-not-dense", {{600, 257}}, {1}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}}},
      {"tuned-rows-unroll-8", {{600, 257}, {}, 1}, {1}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_UNROLL", "8"}}},
      {"tuned-split-unroll-4", {{70001}}, {0}, false, {}, {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_UNROLL", "4"}}},
      {"tuned-wide-groups-loop", {{300, 2048}}, {1}, false, {}, {{"REDUCE_MIN_ROUNDS", "1"}, {"REDUCE_WAVES", "1"}}},
      {"tuned-wide-groups-loop-rows", {{300, 1, 2048}}, {1, 2}, false, {},
       {{"REDUCE_DENSE_ROWS", "0"}, {"REDUCE_MIN_ROUNDS", "1"}, {"REDUCE_WAVES", "1"}}},
      {"tuned-short-pairs", {{1001, 32}}, {1}, false, {}, {{"REDUCE_SHORT_ROWS", "2"}}},
      {"tuned-short-waves", {{5000, 16}}, {1}, false, {}, {{"REDUCE_SHORT_WAVES", "1"}}},
      {"tuned-finish-threads", {{70001}}, {0}, false, {}, {{"REDUCE_FINISH_THREADS", "256"}}},
      {"tuned-late-finish", {{70001}}, {0}, false, {}, {{"REDUCE_EARLY_FINISH", "0"}}},
      {"tuned-columns-shifted-cluster", {{2001, 33}}, {0}, false, {}, {{"REDUCE_COLUMN_CLUSTER", "2"}}},
      {"tuned-columns-float32-shifted", {{700, 301}, {}, 1}, {0}, false, {}, {{"REDUCE_COLUMN_SHIFTED", "2"}}},
      {"tuned-columns-splits-fastest", {{3000, 40}}, {0}, false, {},
       {{"REDUCE_COLUMN_CLUSTER", "0"}, {"REDUCE_COLUMN_ORDER", "0"}}},
      {"tuned-columns-unfit", {{3000, 40}}, {0}, false, {},
       {{"REDUCE_COLUMN_CLUSTER", "0"}, {"REDUCE_COLUMN_FIT", "0"}}},
      {"tuned-columns-narrow-tiles", {{3000, 256}}, {0}, false, {}, {{"REDUCE_COLUMN_TX", "4"}}},
  };
  bool ok = true;
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (int dtype : c.dtypes) ok = ok && run(c, dtype, seed++);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
