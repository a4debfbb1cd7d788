// Runs the NVIDIA backend's copy and vector_add (ops/copy/nvidia,
// ops/vector_add/nvidia: plans, launches and kernels, the transposes'
// shared-memory tiles included, through their C entry points) on the
// emulated GPU (tests/emulation/include/emulated_gpu.h);
// tests/test_nvidia_emulated.py builds it. Each case and dtype pair: the
// inputs random, out's whole buffer poisoned with NaN bytes before each of
// three executes (one per thread schedule), every element compared
// bitwise with the conversion or the add done here in float and rounded
// once, the schedules' results bitwise with each other, out's bytes outside
// its view checked untouched.
// Prints "case dtypes variant ms" per run and "ok" last; exits 1 on the
// first failure.
//
// What tests/test_nvidia_emulated.py builds it with (sources under ops/) and
// the variants (column 2 of each line) that must all have run:
// emulate sources: copy/nvidia/copy_nvidia.cu vector_add/nvidia/vector_add_nvidia.cu
// emulate column: 2
// emulate variants: memcpy dense rows flat transpose_vec transpose_vec_shift transpose_tiled strided
#include "copy/copy_api.h"
#include "harness_util.h"
#include "vector_add/vector_add_api.h"

extern "C" {
OPRT_DECLARE_OP(copy, nvidia)
OPRT_DECLARE_OP(vector_add, nvidia)
}


namespace {

using namespace harness;

struct Case {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // out, then each input (1: copy, 2: add); empty: contiguous
  std::vector<int64_t> shifts;                // elements before each operand's first (as strides)
  std::vector<std::pair<std::string, std::string>> tune;
};

struct Dtypes {
  int out, in;
};

View view_of(const Case& c, size_t operand) {
  return View{c.shape, c.strides.size() > operand ? c.strides[operand] : std::vector<int64_t>{},
              c.shifts.size() > operand ? c.shifts[operand] : 0};
}

bool run(const Case& c, int inputs, Dtypes dtypes, uint32_t seed) {
  const auto start = std::chrono::steady_clock::now();
  const int out_size = element_size(dtypes.out), in_size = element_size(dtypes.in);
  const View out_v = view_of(c, 0);
  Buffer out(out_v, out_size);
  std::vector<View> in_v;
  std::vector<Buffer> in;
  for (int k = 0; k < inputs; ++k) {
    in_v.push_back(view_of(c, static_cast<size_t>(k) + 1));
    in.emplace_back(in_v.back(), in_size);
    fill_random(in.back(), dtypes.in, seed + 17u * static_cast<uint32_t>(k), 100.0f);
  }
  const oprt_tensor_view_t out_c = c_view(out_v, dtypes.out, out.origin);
  std::vector<oprt_tensor_view_t> in_c;
  for (int k = 0; k < inputs; ++k) in_c.push_back(c_view(in_v[static_cast<size_t>(k)], dtypes.in, in[static_cast<size_t>(k)].origin));
  const Lifecycle run =
      inputs == 1
          ? run_lifecycle(
                c.tune, [&](oprt_descriptor_t* desc) { return oprt_create_copy_descriptor_nvidia(desc, &out_c, &in_c[0]); },
                oprt_get_copy_workspace_size_nvidia,
                [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
                  return oprt_execute_copy_nvidia(desc, workspace, bytes, out.origin, in[0].origin, nullptr);
                },
                oprt_destroy_copy_descriptor_nvidia, out)
          : run_lifecycle(
                c.tune,
                [&](oprt_descriptor_t* desc) {
                  return oprt_create_vector_add_descriptor_nvidia(desc, &out_c, &in_c[0], &in_c[1]);
                },
                oprt_get_vector_add_workspace_size_nvidia,
                [&](oprt_descriptor_t desc, void* workspace, size_t bytes) {
                  return oprt_execute_vector_add_nvidia(desc, workspace, bytes, out.origin, in[0].origin,
                                                        in[1].origin, nullptr);
                },
                oprt_destroy_vector_add_descriptor_nvidia, out);
  const std::string pair = std::string(dtype_name(dtypes.in)) + "->" + dtype_name(dtypes.out);
  const auto report = [&](const std::string& what) { return fail_case(c.name, pair, run, what); };
  if (!run.failure.empty()) return report(run.failure);

  const std::vector<int64_t> out_offsets = offsets_of(out_v);
  std::vector<std::vector<int64_t>> in_offsets;
  for (const View& v : in_v) in_offsets.push_back(offsets_of(v));
  std::vector<unsigned char> want(static_cast<size_t>(out_size));
  for (size_t i = 0; i < out_offsets.size(); ++i) {
    float x = 0.0f;  // the op in float, rounded once into out's dtype
    for (int k = 0; k < inputs; ++k)
      x += static_cast<float>(decode(dtypes.in, in[static_cast<size_t>(k)].origin + in_offsets[static_cast<size_t>(k)][i] * in_size));
    encode(dtypes.out, x, want.data());
    if (std::memcmp(out.origin + out_offsets[i] * out_size, want.data(), want.size()) != 0)
      return report("out element " + std::to_string(i) + " is " +
                    std::to_string(decode(dtypes.out, out.origin + out_offsets[i] * out_size)) + ", expected " +
                    std::to_string(decode(dtypes.out, want.data())));
  }
  if (const std::string outside = untouched_outside(out, out_v, out_size); !outside.empty()) return report(outside);
  std::printf("%-30s %-17s %-16s %6.0f ms\n", c.name.c_str(), pair.c_str(), run.variant.c_str(), ms_since(start));
  return true;
}

}  // namespace

int main() {
  if (!conversions_ok()) return 1;
  const int F32 = OPRT_DTYPE_F32, F16 = OPRT_DTYPE_F16, BF16 = OPRT_DTYPE_BF16;
  const std::vector<Dtypes> same = {{F32, F32}, {F16, F16}, {BF16, BF16}};
  const std::vector<Dtypes> converting = {{F16, F32}, {F32, BF16}, {BF16, F16}};
  // (name, shape, strides of out / src, shifts, tune)
  const std::vector<Case> copies = {
      {"contiguous", {10000}},
      {"contiguous-odd", {10001}},
      {"contiguous-odd-memcpy", {10001}, {}, {}, {{"COPY_ODD_KERNEL", "0"}}},
      {"contiguous-head", {10001}, {}, {3, 3}},
      {"rows-sliced", {100, 300}, {{300, 1}, {320, 1}}},
      {"rows-sliced-shifted", {100, 300}, {{300, 1}, {303, 1}}},  // src aligned unlike out
      {"broadcast-row", {50, 300}, {{300, 1}, {0, 1}}},
      {"broadcast-row-odd", {50, 301}, {{301, 1}, {0, 1}}},
      {"broadcast-row-odd-rows", {50, 301}, {{301, 1}, {0, 1}}, {}, {{"ELEMENTWISE_FLAT", "0"}}},
      {"broadcast-row-flat", {50, 300}, {{300, 1}, {0, 1}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"broadcast-column-short-flat", {300, 5}, {{5, 1}, {1, 0}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"transpose", {256, 192}, {{192, 1}, {1, 256}}},
      {"transpose-odd", {100, 77}, {{77, 1}, {1, 100}}},
      {"transpose-misaligned-base", {256, 192}, {{192, 1}, {1, 256}}, {0, 1}},
      {"transpose-3d", {3, 64, 40}, {{2560, 40, 1}, {2560, 1, 64}}},
      {"transpose-tiled-only", {256, 192}, {{192, 1}, {1, 256}}, {}, {{"COPY_TRANSPOSE_VEC", "0"}}},
      // transpose_vec_shift: out rows not whole vectors, out's base anywhere (also where transpose_vec is
      // planned: rows whole vectors), partial tiles, a row's last tile column past the kSide ones (250,
      // 256 + a shifted base), batched; told back to the scalar tiles
      {"transpose-odd-shift", {128, 77}, {{77, 1}, {1, 128}}},
      {"transpose-odd-shift-wide", {64, 300}, {{300, 1}, {1, 64}}},
      {"transpose-odd-shift-out-base", {64, 300}, {{300, 1}, {1, 64}}, {3, 0}},
      {"transpose-shift-tile-end", {136, 250}, {{250, 1}, {1, 136}}},
      {"transpose-shift-out-base-whole", {64, 256}, {{256, 1}, {1, 64}}, {3, 0}},
      {"transpose-shift-out-base-one-tile", {32, 128}, {{128, 1}, {1, 32}}, {1, 0}},
      {"transpose-3d-odd-shift", {3, 64, 41}, {{2624, 41, 1}, {2624, 1, 64}}},
      {"transpose-odd-told-tiled", {64, 300}, {{300, 1}, {1, 64}}, {}, {{"COPY_TRANSPOSE_VEC", "2"}}},
      {"permuted", {20, 30, 40}, {{1200, 40, 1}, {40, 800, 1}}},
      {"strided", {50, 60}, {{1, 50}, {120, 2}}},
      // negative strides: a reversed src (the dense test must not take a stride of -1 for 1), reversed out
      {"reversed-src", {100, 300}, {{300, 1}, {-300, -1}}},
      {"reversed-out", {100, 300}, {{-300, -1}, {300, 1}}},
      {"reversed-rows-src", {100, 300}, {{300, 1}, {-300, 1}}},
      {"transpose-reversed", {256, 192}, {{192, 1}, {1, -256}}},
  };
  const std::vector<Case> adds = {
      {"add-contiguous", {10001}},
      {"add-head", {10001}, {}, {1, 1, 1}},
      {"add-bias", {70, 1001}, {{1001, 1}, {1001, 1}, {0, 1}}},
      {"add-bias-rows", {70, 1001}, {{1001, 1}, {1001, 1}, {0, 1}}, {}, {{"ELEMENTWISE_FLAT", "0"}}},
      {"add-bias-rows-long", {9, 5003}, {{5003, 1}, {5003, 1}, {0, 1}}, {}, {{"ELEMENTWISE_FLAT", "0"}}},
      {"add-bias-whole-vectors", {70, 1024}, {{1024, 1}, {1024, 1}, {0, 1}}},
      {"add-bias-whole-vectors-flat", {70, 1024}, {{1024, 1}, {1024, 1}, {0, 1}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"add-short-rows", {300, 3}, {{3, 1}, {3, 1}, {0, 1}}},
      {"add-column", {70, 33}, {{33, 1}, {33, 1}, {1, 0}}},
      // rows shorter than a vector with b gathered: strided (planned); flat told: b in a 2-D layout steps
      // along (one value per row, sliced rows), a 3-D one through the calculator
      {"add-short-column", {300, 3}, {{3, 1}, {3, 1}, {1, 0}}},
      {"add-short-column-flat", {300, 3}, {{3, 1}, {3, 1}, {1, 0}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"add-short-sliced-flat", {300, 3}, {{3, 1}, {3, 1}, {5, 1}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"add-short-3d-flat", {6, 70, 3}, {{210, 3, 1}, {210, 3, 1}, {0, 1, 0}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
      {"add-transposed-a", {100, 60}, {{60, 1}, {1, 100}, {60, 1}}},
      {"add-scalar-b", {999}, {{1}, {1}, {0}}},
      {"add-reversed-a", {100, 300}, {{300, 1}, {-300, -1}, {300, 1}}},
      {"add-reversed-rows-bias", {70, 1001}, {{1001, 1}, {-1001, 1}, {0, -1}}},
      {"add-reversed-short-flat", {300, 3}, {{3, 1}, {-3, 1}, {-1, 0}}, {}, {{"ELEMENTWISE_FLAT", "1"}}},
  };
  bool ok = true;
  uint32_t seed = 1;
  for (const Case& c : copies) {
    for (Dtypes d : same) ok = ok && run(c, 1, d, seed++);
    for (Dtypes d : converting) ok = ok && run(c, 1, d, seed++);
  }
  for (const Case& c : adds)
    for (Dtypes d : same) ok = ok && run(c, 2, d, seed++);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
