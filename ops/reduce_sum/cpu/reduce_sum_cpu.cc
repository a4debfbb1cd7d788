// reduce_sum on the CPU. The work is a grid of (block of kept outputs) x
// (chunk of the reduced range). A block is one output, or for the "columns"
// variant up to kColumns outputs adjacent in src, summed as vectors. When the
// reduced range is longer than one chunk, chunks write partial sums to the
// workspace and a second pass adds them pairwise: the same summation tree on
// every run, whatever the thread count, its rounding error growing with the
// log of the chunk count.
#include "../reduce_sum_api.h"

#include <algorithm>

#include "../../common/cpu/cpu_types.h"
#include "../../common/cpu/elementwise_cpu.h"
#include "../../common/cpu/reduce_cpu.h"
#include "../../common/descriptor.h"
#include "../reduce_sum_plan.h"

namespace oprt::cpu {
namespace {

constexpr int64_t kColumns = 64;           // outputs summed together in the columns variant
constexpr int64_t kChunkElements = 65536;  // elements read per unit of work

enum class Kind { kEmpty, kZeros, kRows, kColumns };

struct ReduceSumCpu : oprt_descriptor {
  static constexpr const char* kName = "reduce_sum/cpu";
  ReduceSumCpu() : oprt_descriptor(descriptor_tag(kName)) {}
  ReductionLayout layout;
  int32_t dtype = 0;
  int element_size = 0;
  Kind kind = Kind::kRows;
  int64_t width = 1;           // outputs per block
  int64_t blocks_per_row = 1;  // columns variant: blocks across the kept inner dim
  int64_t blocks = 0;
  int64_t chunk = 0;   // reduced indices per chunk
  int64_t chunks = 1;  // chunks per block
};

ReduceSumCpu* create(const oprt_tensor_view_t* out, const oprt_tensor_view_t* src, const int32_t* dims,
                     int32_t num_dims, int32_t keepdim) {
  ReduceSumProblem p = plan_reduce_sum(out, src, dims, num_dims, keepdim);
  auto* d = new ReduceSumCpu;
  d->layout = p.layout;
  d->dtype = p.src.dtype;
  d->element_size = p.src.element_size();
  const StridedLayout<2>& kept = d->layout.kept;
  const int64_t kept_numel = kept.numel(), reduced_numel = d->layout.reduced_numel();
  if (kept_numel == 0) {
    d->kind = Kind::kEmpty;
  } else if (reduced_numel == 0) {
    d->kind = Kind::kZeros;
  } else if (d->layout.reduced.inner_stride(0) != 1 && kept.inner_stride(1) == 1 && kept.inner_size() > 1) {
    d->kind = Kind::kColumns;  // src is contiguous across outputs: sum rows of outputs as vectors
    d->width = std::min(kColumns, kept.inner_size());
    d->blocks_per_row = (kept.inner_size() + d->width - 1) / d->width;
  }
  d->variant = d->kind == Kind::kEmpty ? "empty" : d->kind == Kind::kZeros ? "zeros"
             : d->kind == Kind::kColumns ? "columns"
             : d->layout.reduced.inner_stride(0) == 1 ? "rows" : "strided";
  if (d->kind == Kind::kRows || d->kind == Kind::kColumns) {
    d->blocks = d->kind == Kind::kColumns ? kept_numel / kept.inner_size() * d->blocks_per_row : kept_numel;
    d->chunk = std::max<int64_t>(1, kChunkElements / d->width);
    d->chunks = (reduced_numel + d->chunk - 1) / d->chunk;
    if (d->chunks > 1) {
      d->variant += "_split";
      d->workspace_bytes = static_cast<size_t>(d->blocks * d->chunks * d->width) * (d->dtype == OPRT_DTYPE_F64 ? 8 : 4);
    }
  }
  return d;
}

template <class T>
void run(const ReduceSumCpu& d, T* out, const T* src, acc_t<T>* partials) {
  using A = acc_t<T>;
  const StridedLayout<2>& kept = d.layout.kept;
  const StridedLayout<2>& reduced = d.layout.reduced;
  const int64_t reduced_numel = reduced.numel(), out_stride = kept.inner_stride(0);
  const int sizes[2] = {d.element_size, d.element_size};

  // Outputs of block b: where they start in out and src, and how many.
  auto block_at = [&](int64_t b, int64_t (&offsets)[2]) {
    int64_t first = b, count = 1;
    if (d.kind == Kind::kColumns) {
      const int64_t column = (b % d.blocks_per_row) * d.width;
      first = b / d.blocks_per_row * kept.inner_size() + column;
      count = std::min(d.width, kept.inner_size() - column);
    }
    offsets_at(kept, first, offsets);
    return count;
  };
  // Sums chunk c of block b into acc[0..count).
  auto sum_unit = [&](int64_t b, int64_t c, A* acc) {
    int64_t offsets[2];
    const int64_t count = block_at(b, offsets);
    std::fill(acc, acc + count, A(0));
    alignas(32) A lost[kColumns] = {};  // the columns kind: compensation of acc's folds
    const T* base = src + offsets[1];
    char* const bases[2] = {reinterpret_cast<char*>(const_cast<T*>(base)), nullptr};
    const int64_t stride = reduced.inner_stride(0);
    const int64_t begin = c * d.chunk, end = std::min(reduced_numel, begin + d.chunk);
    PairwiseTotal<A> runs;  // the rows kind: one output, its runs added pairwise
    walk_runs(reduced, bases, sizes, begin, end, [&](char* const* p, int64_t n) {
      const T* q = reinterpret_cast<const T*>(p[0]);
      if (d.kind == Kind::kColumns && stride == 0) {  // one row repeated n times (broadcast): one rounding
        for (int64_t j = 0; j < count; ++j) compensated_add(acc[j], lost[j], to_float(q[j]) * static_cast<A>(n));
      } else if (d.kind == Kind::kColumns) {
        // Rows added kLaneRounds at a time into `part`, then folded into acc
        // compensated: a chunk of a narrow tensor has thousands of rows, and
        // a plain chain of their folds would drift by a hundred roundings.
        for (int64_t i = 0; i < n;) {
          const int64_t end = std::min(n, i + kLaneRounds);
          alignas(32) A part[kColumns] = {};
          if (count == kColumns) {
            for (; i < end; ++i, q += stride) add_row64(q, part);
          } else {
            for (; i < end; ++i, q += stride)
              for (int64_t j = 0; j < count; ++j) part[j] += to_float(q[j]);
          }
          for (int64_t j = 0; j < count; ++j) compensated_add(acc[j], lost[j], part[j]);
        }
      } else {
        runs.add(sum_strided(q, stride, n));
      }
    });
    if (d.kind != Kind::kColumns) acc[0] = runs.total();
    for (int64_t j = 0; j < count; ++j) acc[j] -= lost[j];
    return count;
  };
  auto store = [&](int64_t b, const A* acc) {
    int64_t offsets[2];
    const int64_t count = block_at(b, offsets);
    for (int64_t j = 0; j < count; ++j) out[offsets[0] + j * out_stride] = from_acc<T>(acc[j]);
  };

  const int64_t work_per_unit = d.width * std::min(d.chunk, reduced_numel);
  const int64_t grain = std::max<int64_t>(1, kChunkElements / 2 / work_per_unit);
  if (d.chunks == 1 && d.kind == Kind::kRows) {  // one pass: walk the outputs, sum each one's range
    char* const bases[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(const_cast<T*>(src))};
    const int64_t src_stride = kept.inner_stride(1), reduced_stride = reduced.inner_stride(0);
    const bool single_run = reduced.ndim <= 1;
    parallel_runs(kept, bases, sizes, [&](char* const* p, int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* s = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) {
        const T* row = s + i * src_stride;
        A total = 0;
        if (single_run) {
          total = sum_strided(row, reduced_stride, reduced_numel);
        } else {
          char* const row_bases[2] = {reinterpret_cast<char*>(const_cast<T*>(row)), nullptr};
          PairwiseTotal<A> runs;
          walk_runs(reduced, row_bases, sizes, 0, reduced_numel, [&](char* const* q, int64_t m) {
            runs.add(sum_strided(reinterpret_cast<const T*>(q[0]), reduced_stride, m));
          });
          total = runs.total();
        }
        o[i * out_stride] = from_acc<T>(total);
      }
    }, grain);
    return;
  }
  if (d.chunks == 1) {
    parallel_for(d.blocks, grain, [&](int64_t begin, int64_t end) {
      A acc[kColumns];
      for (int64_t b = begin; b < end; ++b) {
        sum_unit(b, 0, acc);
        store(b, acc);
      }
    });
    return;
  }
  parallel_for(d.blocks * d.chunks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) sum_unit(u / d.chunks, u % d.chunks, partials + u * d.width);
  });
  parallel_for(d.blocks, std::max<int64_t>(1, 4096 / (d.chunks * d.width)), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) store(b, add_pairwise(partials + b * d.chunks * d.width, d.chunks, d.width));
  });
}

void execute(const ReduceSumCpu& d, void* workspace, void* out, const void* src, void* /*stream*/) {
  require_data(out, "out", d.layout.kept_numel());
  require_data(src, "src", d.layout.kept_numel() * d.layout.reduced_numel());
  if (d.kind == Kind::kEmpty) return;
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    if (d.kind == Kind::kZeros) {
      // Only out is walked: the source (possibly NULL, being empty) gets
      // zero strides, so no offset is ever applied to its pointer.
      StridedLayout<2> out_only = d.layout.kept;
      for (int dim = 0; dim < out_only.ndim; ++dim) out_only.strides[1][dim] = 0;
      char* const base[2] = {static_cast<char*>(out), static_cast<char*>(out)};
      const int sizes[2] = {d.element_size, d.element_size};
      const int64_t stride = out_only.inner_stride(0);
      parallel_runs(out_only, base, sizes, [&](char* const* p, int64_t n) {
        for (int64_t i = 0; i < n; ++i) reinterpret_cast<T*>(p[0])[i * stride] = from_float<T>(0.0f);
      });
      return;
    }
    run<T>(d, static_cast<T*>(out), static_cast<const T*>(src), static_cast<acc_t<T>*>(workspace));
  });
}

}  // namespace
}  // namespace oprt::cpu

OPRT_DEFINE_OP(reduce_sum, cpu, oprt::cpu::ReduceSumCpu, oprt::cpu::create, oprt::cpu::execute)
