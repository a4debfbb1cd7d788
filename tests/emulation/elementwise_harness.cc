// Runs the NVIDIA backend's elementwise engine (ops/common/nvidia/
// elementwise.cuh: its planning, its launch code and its kernels) on the
// emulated GPU (include/emulated_gpu.h; tests/test_nvidia_emulated.py
// builds this with the engine's launches rewritten to emulate_launch). Each case
// poisons every element of out's buffer, runs launch_elementwise on the
// planned kind (and on `flat` where it applies) and compares the whole
// buffer with offsets_at() over the same layout: elements outside out's
// view must keep the poison. Bases are placed 0 or a few elements past a
// 16-byte boundary so heads, tails and the scalar fallback all run.
// Prints one line per case and "ok" last; exits 1 on the first mismatch.
//
// What tests/test_nvidia_emulated.py builds it with (sources under ops/) and
// the kernel kinds (column 1 of each line) that must all have run:
// emulate column: 1
// emulate variants: dense rows flat strided
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nvidia/elementwise.cuh"

using namespace oprt;
using namespace oprt::nvidia;

namespace {

template <class T>
struct Sum {  // unsigned: wraps, never overflows
  T operator()(T a, T b) const { return static_cast<T>(a + b * 3u); }
};
template <class Out>
struct Narrow {
  template <class In>
  Out operator()(In x) const {
    return static_cast<Out>(x ^ (x >> 7));
  }
};

struct Case {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // per operand, out first
  std::vector<int64_t> shift;                 // per operand: elements past a 16-byte boundary
};

// Operand k's buffer: elements [0, extent) of its view, shifted, in a 64-byte aligned allocation.
template <class T>
struct Buffer {
  std::vector<T> storage;
  T* base;
  Buffer(int64_t extent, int64_t shift) : storage(static_cast<size_t>(extent + shift + 64 / sizeof(T))) {
    T* p = storage.data();
    while (reinterpret_cast<uintptr_t>(p) % 64 != 0) ++p;
    base = p + shift;
  }
};

int64_t extent_of(const Case& c, int k) {
  int64_t last = 0;
  for (size_t d = 0; d < c.shape.size(); ++d) last += (c.shape[d] - 1) * c.strides[k][d];
  return last + 1;
}

template <class Out, class In, int K, class Op>
bool run(const Case& c, Op op, bool told_flat) {
  setenv("OPRT_TUNE_ELEMENTWISE_FLAT", told_flat ? "1" : "0", 1);
  StridedLayout<K + 1> raw;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    int64_t strides[K + 1];
    for (int k = 0; k <= K; ++k) strides[k] = c.strides[k][d];
    raw.push_dim(c.shape[d], strides);
  }
  const StridedLayout<K + 1> layout = coalesce(raw);
  const ElementwiseKind kind = choose_elementwise_kind(layout, kElementwiseVec<Out, In>);
  if (told_flat && kind != ElementwiseKind::kFlat) return true;  // flat does not apply: nothing new to run

  Buffer<Out> out(extent_of(c, 0), c.shift[0]);
  std::vector<Buffer<In>> inputs;
  const In* in_ptrs[K];
  for (int k = 0; k < K; ++k) {
    inputs.emplace_back(extent_of(c, k + 1), c.shift[k + 1]);
    for (int64_t j = 0; j < extent_of(c, k + 1); ++j)
      inputs[k].base[j] = static_cast<In>(j * 2654435761u + 977u * (k + 1));
    in_ptrs[k] = inputs[k].base;
  }
  const Out poison = static_cast<Out>(0x5A5A5A5Au);
  const int64_t out_extent = extent_of(c, 0);
  for (int64_t j = 0; j < out_extent; ++j) out.base[j] = poison;
  launch_elementwise<Op, Out, In, K>(kind, layout, op, out.base, in_ptrs, nullptr);

  std::vector<Out> want(static_cast<size_t>(out_extent), poison);
  for (int64_t i = 0; i < layout.numel(); ++i) {
    int64_t offsets[K + 1];
    offsets_at(layout, i, offsets);
    In x[K];
    for (int k = 0; k < K; ++k) x[k] = in_ptrs[k][offsets[k + 1]];
    if constexpr (K == 1) want[offsets[0]] = op(x[0]);
    else want[offsets[0]] = op(x[0], x[1]);
  }
  for (int64_t j = 0; j < out_extent; ++j) {
    if (out.base[j] != want[j]) {
      std::printf("FAIL %s (%s): out[%lld] = %lld, expected %lld\n", c.name.c_str(), elementwise_kind_name(kind),
                  static_cast<long long>(j), static_cast<long long>(out.base[j]), static_cast<long long>(want[j]));
      return false;
    }
  }
  std::printf("%-28s %-8s %zu-byte in, %zu-byte out: %lld elements\n", c.name.c_str(), elementwise_kind_name(kind),
              sizeof(In), sizeof(Out), static_cast<long long>(layout.numel()));
  return true;
}

// Every case in both element sizes (8 or 4 elements a vector), planned and told flat.
template <int K>
bool run_all(const std::vector<Case>& cases) {
  bool ok = true;
  for (const Case& c : cases)
    for (bool flat : {false, true}) {
      if constexpr (K == 2) {
        ok = ok && run<uint16_t, uint16_t, 2>(c, Sum<uint16_t>{}, flat);
        ok = ok && run<uint32_t, uint32_t, 2>(c, Sum<uint32_t>{}, flat);
      } else {
        ok = ok && run<uint16_t, uint16_t, 1>(c, Narrow<uint16_t>{}, flat);
        ok = ok && run<uint16_t, uint32_t, 1>(c, Narrow<uint16_t>{}, flat);  // 32-byte input vectors
        ok = ok && run<uint32_t, uint32_t, 1>(c, Narrow<uint32_t>{}, flat);
      }
    }
  return ok;
}

}  // namespace

int main() {
  // out = a + 3b: (name, shape, strides of out, a, b, shifts of out, a, b)
  const std::vector<Case> adds = {
      {"dense", {100003}, {{1}, {1}, {1}}, {0, 0, 0}},
      {"dense-head", {100003}, {{1}, {1}, {1}}, {1, 1, 1}},
      {"dense-misaligned-a", {100003}, {{1}, {1}, {1}}, {0, 1, 0}},
      {"dense-scalar-b", {4099}, {{1}, {1}, {0}}, {0, 0, 0}},
      {"bias", {96, 1000}, {{1000, 1}, {1000, 1}, {0, 1}}, {0, 0, 0}},
      {"bias-odd-rows", {70, 1001}, {{1001, 1}, {1001, 1}, {0, 1}}, {0, 0, 0}},
      {"bias-odd-rows-head", {70, 1001}, {{1001, 1}, {1001, 1}, {0, 1}}, {3, 3, 5}},
      {"bias-misaligned-a", {70, 1001}, {{1001, 1}, {1001, 1}, {0, 1}}, {0, 1, 0}},
      {"column", {70, 1001}, {{1001, 1}, {1001, 1}, {1, 0}}, {0, 0, 0}},
      {"short-rows", {4099, 3}, {{3, 1}, {3, 1}, {0, 1}}, {0, 0, 0}},
      {"short-rows-head", {4099, 3}, {{3, 1}, {3, 1}, {0, 1}}, {2, 2, 0}},
      {"rows-of-8", {513, 8}, {{8, 1}, {8, 1}, {0, 1}}, {0, 0, 1}},
      {"short-rows-3d-bias", {7, 50, 5}, {{250, 5, 1}, {250, 5, 1}, {0, 0, 1}}, {0, 0, 0}},  // b periodic
      {"short-rows-batch-bias", {5, 60, 3}, {{180, 3, 1}, {180, 3, 1}, {3, 0, 1}}, {0, 1, 0}},  // b not periodic
      {"3d-middle-values", {6, 70, 33}, {{2310, 33, 1}, {2310, 33, 1}, {0, 1, 0}}, {0, 0, 0}},
      {"3d-batch-bias", {5, 60, 100}, {{6000, 100, 1}, {6000, 100, 1}, {100, 0, 1}}, {0, 0, 0}},
      {"sliced-a", {100, 1000}, {{1000, 1}, {1024, 1}, {0, 1}}, {0, 0, 0}},
      {"sliced-out", {100, 1000}, {{1024, 1}, {1000, 1}, {0, 1}}, {0, 0, 0}},
      {"transposed-a", {100, 300}, {{300, 1}, {1, 100}, {300, 1}}, {0, 0, 0}},
  };
  // out = narrow(src)
  const std::vector<Case> copies = {
      {"copy-dense", {100003}, {{1}, {1}}, {0, 0}},
      {"copy-dense-head", {100003}, {{1}, {1}}, {5, 5}},
      {"copy-row", {300, 513}, {{513, 1}, {0, 1}}, {0, 0}},
      {"copy-row-head", {300, 513}, {{513, 1}, {0, 1}}, {1, 2}},
      {"copy-column", {300, 5}, {{5, 1}, {1, 0}}, {0, 0}},
      {"copy-short-row", {1000, 3}, {{3, 1}, {0, 1}}, {0, 1}},
      {"copy-sliced", {100, 1000}, {{1000, 1}, {1032, 1}}, {0, 0}},
      {"copy-permuted", {20, 30, 40}, {{1200, 40, 1}, {40, 800, 1}}, {0, 0}},
      {"copy-transposed", {100, 77}, {{77, 1}, {1, 100}}, {0, 0}},
  };
  const bool ok = run_all<2>(adds) && run_all<1>(copies);
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
