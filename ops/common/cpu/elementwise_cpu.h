// Elementwise CPU kernels over an output and K inputs of one shape (stride-0
// dims carry broadcasting), shared by copy, vector_add, relu and mul. An op
// supplies its scalar function as a functor; this header plans the variant
// once at create and holds the one loop of each variant:
//   contiguous       every operand dense: one run per thread
//   broadcast_inner  out dense along the innermost dim, each input dense or
//                    stride 0 there (a stride-0 input is held in a register)
//   rows             every operand dense along the innermost dim only
//   transpose_tiled  (one input) out and src contiguous along different dims
//   strided          anything else: an element at a time
//
// The functor op(x...) takes float or double scalars (the accumulation type
// of the input dtype) and, with AVX2, __m256 (eight float lanes) or __m256d
// (four double lanes). GCC and Clang apply + - * / to those vector types lane
// by lane, so a functor written as a template over its argument type covers
// all four; anything else (a max, a compare) needs its own vector overloads,
// which must round exactly as the scalar form does: results are identical
// whichever loop, lane or thread computes an element.
#ifndef OPRT_COMMON_CPU_ELEMENTWISE_H_
#define OPRT_COMMON_CPU_ELEMENTWISE_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "../descriptor.h"
#include "../layout.h"
#include "../tuning.h"
#include "cpu_types.h"
#include "parallel.h"
#include "vector_math.h"

namespace oprt::cpu {

constexpr int64_t kElementwiseGrain = 1 << 15;  // elements per thread, at least

// run(ptrs, count) is called for consecutive runs of elements [begin, end)
// along the innermost dim; ptrs[k] points at operand k's first element of
// the run, whose elements lie layout.inner_stride(k) elements apart.
template <int N, class Run>
void walk_runs(const StridedLayout<N>& layout, char* const (&base)[N], const int (&element_size)[N], int64_t begin,
               int64_t end, Run&& run) {
  const int outer_dims = layout.ndim > 0 ? layout.ndim - 1 : 0;
  const int64_t inner = layout.inner_size();
  int64_t index[kMaxDims] = {};
  int64_t row = begin / inner, column = begin % inner;
  for (int d = outer_dims - 1; d >= 0; --d) {  // multi-index of the first row
    index[d] = row % layout.shape[d];
    row /= layout.shape[d];
  }
  char* ptr[N];
  for (int k = 0; k < N; ++k) {
    int64_t offset = column * layout.inner_stride(k);
    for (int d = 0; d < outer_dims; ++d) offset += index[d] * layout.strides[k][d];
    ptr[k] = base[k] + offset * element_size[k];
  }
  for (int64_t position = begin; position < end;) {
    const int64_t count = std::min(inner - column, end - position);
    run(ptr, count);
    position += count;
    column = 0;
    // Step the outer multi-index (an odometer) and point at the next row.
    for (int d = outer_dims - 1; d >= 0; --d) {
      if (++index[d] < layout.shape[d]) break;
      index[d] = 0;
    }
    for (int k = 0; k < N; ++k) {
      int64_t offset = 0;
      for (int d = 0; d < outer_dims; ++d) offset += index[d] * layout.strides[k][d];
      ptr[k] = base[k] + offset * element_size[k];
    }
  }
}

// walk_runs over the whole layout, split across threads (at least `grain`
// elements each).
template <int N, class Run>
void parallel_runs(const StridedLayout<N>& layout, char* const (&base)[N], const int (&element_size)[N],
                   const Run& run, int64_t grain = kElementwiseGrain) {
  parallel_for(layout.numel(), grain, [&](int64_t begin, int64_t end) {
    walk_runs(layout, base, element_size, begin, end, run);
  });
}

// ---------------------------------------------------------------------------
// The plan

enum class ElementwiseKind { kContiguous, kBroadcastInner, kRows, kTransposeTiled, kStrided };

template <int N>
struct ElementwisePlan {
  StridedLayout<N> layout;  // operand 0 = out, then the inputs
  int element_size[N] = {};
  ElementwiseKind kind = ElementwiseKind::kStrided;
  bool stream = false;      // dense output runs use non-temporal stores
  StridedLayout<N> outer;   // kTransposeTiled: the dims around the transposed pair

  const char* variant() const {
    switch (kind) {
      case ElementwiseKind::kContiguous: return "contiguous";
      case ElementwiseKind::kBroadcastInner: return "broadcast_inner";
      case ElementwiseKind::kRows: return "rows";
      case ElementwiseKind::kTransposeTiled: return "transpose_tiled";
      case ElementwiseKind::kStrided: break;
    }
    return "strided";
  }
};

// The last-level cache of this CPU, from sysfs: the CPUID-derived
// sysconf(_SC_LEVEL3_CACHE_SIZE) can read far larger than the real cache in
// a VM (320 MB for a 32 MB L3). 32 MB where sysfs does not say.
inline int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t best = 0;
    for (int index = 0; index < 8; ++index) {
      char path[96];
      std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
      FILE* f = std::fopen(path, "r");
      if (f == nullptr) continue;
      long long size = 0;
      char unit = 0;
      if (std::fscanf(f, "%lld%c", &size, &unit) >= 1)
        best = std::max<int64_t>(best, size << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0));
      std::fclose(f);
    }
    return best > 0 ? best : int64_t{32} << 20;
  }();
  return bytes;
}

// Bytes of memory that operand k of the layout reaches (stride-0 dims once).
template <int N>
int64_t touched_bytes(const StridedLayout<N>& l, int k, int element_size) {
  int64_t n = element_size;
  for (int d = 0; d < l.ndim; ++d)
    if (l.strides[k][d] != 0) n *= l.shape[d];
  return n;
}

// Chooses the variant for tensors {out, inputs...} of one shape (validated
// by the caller). Streaming stores pay off once the operands outgrow the
// last-level cache: the output's lines are not read before being written
// and do not evict inputs (OPRT_TUNE_CPU_STREAM_BYTES moves the threshold).
template <int N>
ElementwisePlan<N> plan_elementwise(const TensorDesc* const (&tensors)[N]) {
  ElementwisePlan<N> p;
  p.layout = elementwise_layout<N>(tensors);
  const StridedLayout<N>& l = p.layout;
  int64_t bytes = 0;
  bool unit = true, unit_or_zero = true, broadcast = false;
  for (int k = 0; k < N; ++k) {
    p.element_size[k] = tensors[k]->element_size();
    bytes += touched_bytes(l, k, p.element_size[k]);
    if (k == 0) continue;
    unit &= l.inner_stride(k) == 1;
    unit_or_zero &= l.inner_stride(k) == 1 || l.inner_stride(k) == 0;
    broadcast |= l.inner_stride(k) == 0;
  }
  const bool out_unit = l.inner_stride(0) == 1;
  if (out_unit && unit && l.ndim <= 1) {
    p.kind = ElementwiseKind::kContiguous;
  } else if (N == 2 && l.ndim >= 2 && out_unit && l.strides[1][l.ndim - 2] == 1) {
    p.kind = ElementwiseKind::kTransposeTiled;
    p.outer = outer_dims(outer_dims(l));
  } else if (out_unit && unit_or_zero && broadcast) {
    p.kind = ElementwiseKind::kBroadcastInner;
  } else if (out_unit && unit) {
    p.kind = ElementwiseKind::kRows;
  }
  p.stream = out_unit && bytes > tuned("CPU_STREAM_BYTES", last_level_cache_bytes());
  return p;
}

// Validates and plans out = op(inputs...) for ops whose operands share one
// dtype (every op but copy): the inputs have out's shape (broadcast through
// stride-0 dims) and out does not overlap itself. names[k] names views[k].
template <int N>
ElementwisePlan<N> plan_same_dtype(const oprt_tensor_view_t* const (&views)[N], const char* const (&names)[N],
                                   int32_t* dtype) {
  TensorDesc tensors[N];
  const TensorDesc* pointers[N];
  for (int k = 0; k < N; ++k) {
    tensors[k] = describe_tensor(views[k], names[k]);
    pointers[k] = &tensors[k];
  }
  for (int k = 2; k < N; ++k) require_same_dtype(tensors[1], names[1], tensors[k], names[k]);
  if (N > 1) require_same_dtype(tensors[0], names[0], tensors[1], names[1]);
  for (int k = 1; k < N; ++k) {
    const std::string broadcast = std::string(names[k]) + " (broadcast with stride-0 dims)";
    require_same_shape(tensors[0], names[0], tensors[k], broadcast.c_str());
  }
  require_no_self_overlap(tensors[0], names[0]);
  *dtype = tensors[0].dtype;
  return plan_elementwise<N>(pointers);
}

// ---------------------------------------------------------------------------
// The loops

// A functor that returns its argument: copy. With equal dtypes the bits move
// unchanged (a NaN keeps its payload, a float16 signaling NaN stays one).
struct Identity {
  template <class V>
  V operator()(V x) const { return x; }
};

template <class Op, class Out, class... In>
constexpr bool kMovesBits = std::is_same_v<Op, Identity> && sizeof...(In) == 1 && (std::is_same_v<Out, In> && ...);

// One output element from its inputs' elements.
template <class Out, class Op, class... In>
inline Out apply(const Op& op, In... x) {
  if constexpr (kMovesBits<Op, Out, In...>) return (x, ...);
  else return convert<Out>(op(to_float(x)...));
}

// Vector lanes of the (Out, In) loop: eight floats when both are float32,
// float16 or bfloat16, four doubles when both are float64, else none (mixed
// float/double copies run element by element).
#ifdef __AVX2__
template <class Out, class In>
constexpr int kLanes = has_load8<Out> && has_load8<In>                               ? 8
                       : std::is_same_v<Out, double> && std::is_same_v<In, double> ? 4
                                                                                   : 0;

template <class T>
inline auto vload(const T* p) {
  if constexpr (std::is_same_v<T, double>) return load4(p);
  else return load8(p);
}
inline __m256 vsplat(float x) { return _mm256_set1_ps(x); }
inline __m256d vsplat(double x) { return _mm256_set1_pd(x); }
inline void vstore(double* p, __m256d v) { store4(p, v); }
template <class T>
inline void vstore(T* p, __m256 v) { store8(p, v); }
inline void vstream(double* p, __m256d v) { stream4(p, v); }
template <class T>
inline void vstream(T* p, __m256 v) { stream8(p, v); }
#endif

// Copies `bytes` bytes (out may be src itself, never a partial overlap).
inline void move_bytes(char* out, const char* src, int64_t bytes, bool stream) {
  int64_t i = 0;
#ifdef __AVX2__
  if (stream) {
    for (; i < bytes && reinterpret_cast<uintptr_t>(out + i) % 32 != 0; ++i) out[i] = src[i];
    for (; i + 32 <= bytes; i += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm_sfence();
  }
  for (; i + 32 <= bytes; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
#endif
  if (i < bytes && out + i != src + i) std::memmove(out + i, src + i, bytes - i);
}

// Runs shorter than this keep plain stores even when streaming: their
// partly written lines and the fence after each run would cost more.
constexpr int64_t kStreamMinRun = 1024;

// A run with out dense; input k dense, or stride 0 where bit k of
// kBroadcast is set. With `stream`, stores past the first aligned element
// of a long run are non-temporal.
template <unsigned kBroadcast, class Out, class In, class Op, size_t... I>
void dense_run(Out* out, const In* const* in, int64_t count, bool stream, const Op& op, std::index_sequence<I...>) {
  constexpr bool kFixed[] = {(((kBroadcast >> I) & 1) != 0)...};
  stream &= count >= kStreamMinRun;
  if constexpr (kMovesBits<Op, Out, In>) {
    if (kFixed[0]) std::fill(out, out + count, in[0][0]);
    else move_bytes(reinterpret_cast<char*>(out), reinterpret_cast<const char*>(in[0]), count * sizeof(Out), stream);
    return;
  }
  auto element = [&](int64_t i) { return apply<Out>(op, in[I][kFixed[I] ? 0 : i]...); };
  int64_t i = 0;
#ifdef __AVX2__
  constexpr int lanes = kLanes<Out, In>;
  if constexpr (lanes > 0) {
    using A = std::conditional_t<lanes == 8, float, double>;
    const decltype(vsplat(A{})) fixed[] = {vsplat(kFixed[I] ? static_cast<A>(to_float(in[I][0])) : A{})...};
    auto vector = [&](int64_t j) { return op((kFixed[I] ? fixed[I] : vload(in[I] + j))...); };
    if (stream) {
      for (; i < count && reinterpret_cast<uintptr_t>(out + i) % (lanes * sizeof(Out)) != 0; ++i) out[i] = element(i);
      for (; i + lanes <= count; i += lanes) vstream(out + i, vector(i));
      _mm_sfence();
    }
    for (; i + lanes <= count; i += lanes) vstore(out + i, vector(i));
  }
#endif
  for (; i < count; ++i) out[i] = element(i);
}

template <class Out, class In, class Op, size_t... I>
void strided_run(Out* out, int64_t so, const In* const* in, const int64_t* s, int64_t count, const Op& op,
                 std::index_sequence<I...>) {
  for (int64_t i = 0; i < count; ++i) out[i * so] = apply<Out>(op, in[I][i * s[I]]...);
}

// A transpose in square tiles, so both the reads and the writes stay within
// a few cache lines per tile row: out contiguous along the last dim, src
// along the one before.
constexpr int64_t kTileSide = 32;

template <class Out, class In, class Op>
void tiled_transpose(const ElementwisePlan<2>& p, Out* out, const In* src, const Op& op) {
  const StridedLayout<2>& l = p.layout;
  const int a_dim = l.ndim - 2, b_dim = l.ndim - 1;
  const int64_t rows = l.shape[a_dim], cols = l.shape[b_dim];
  const int64_t out_row = l.strides[0][a_dim], src_col = l.strides[1][b_dim];
  const int64_t tile_rows = (rows + kTileSide - 1) / kTileSide, tile_cols = (cols + kTileSide - 1) / kTileSide;
  const int64_t tiles = tile_rows * tile_cols;
  parallel_for(p.outer.numel() * tiles, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t base[2];
      offsets_at(p.outer, t / tiles, base);
      const int64_t r0 = (t % tiles) / tile_cols * kTileSide, c0 = (t % tiles) % tile_cols * kTileSide;
      const int64_t r1 = std::min(rows, r0 + kTileSide), c1 = std::min(cols, c0 + kTileSide);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) out[base[0] + r * out_row + c] = apply<Out>(op, src[base[1] + r + c * src_col]);
    }
  });
}

// Calls f(std::integral_constant<unsigned, mask>) for one mask < 2^K.
template <class F, unsigned... M>
void dispatch_mask(unsigned mask, F&& f, std::integer_sequence<unsigned, M...>) {
  ((mask == M ? (f(std::integral_constant<unsigned, M>{}), 0) : 0), ...);
}

// out = op(in[0], ..., in[K-1]) elementwise, as planned by plan_elementwise.
template <class Out, class In, int K, class Op>
void run_elementwise(const ElementwisePlan<K + 1>& plan, Out* out, const In* const (&in)[K], const Op& op) {
  const StridedLayout<K + 1>& l = plan.layout;
  if (l.numel() == 0) return;
  if constexpr (K == 1) {
    if (plan.kind == ElementwiseKind::kTransposeTiled) return tiled_transpose(plan, out, in[0], op);
  }
  char* base[K + 1] = {reinterpret_cast<char*>(out)};
  int64_t s[K];
  unsigned broadcast = 0;
  bool dense = l.inner_stride(0) == 1;
  for (int k = 0; k < K; ++k) {
    base[k + 1] = reinterpret_cast<char*>(const_cast<In*>(in[k]));
    s[k] = l.inner_stride(k + 1);
    dense &= s[k] == 0 || s[k] == 1;
    broadcast |= (s[k] == 0 ? 1u : 0u) << k;
  }
  constexpr auto inputs = std::make_index_sequence<K>{};
  auto input_pointers = [](char* const* p, const In* (&x)[K]) {
    for (int k = 0; k < K; ++k) x[k] = reinterpret_cast<const In*>(p[k + 1]);
  };
  if (!dense) {
    return parallel_runs(l, base, plan.element_size, [&](char* const* p, int64_t count) {
      const In* x[K];
      input_pointers(p, x);
      strided_run(reinterpret_cast<Out*>(p[0]), l.inner_stride(0), x, s, count, op, inputs);
    });
  }
  dispatch_mask(broadcast, [&](auto mask) {
    parallel_runs(l, base, plan.element_size, [&](char* const* p, int64_t count) {
      const In* x[K];
      input_pointers(p, x);
      dense_run<decltype(mask)::value>(reinterpret_cast<Out*>(p[0]), x, count, plan.stream, op, inputs);
    });
  }, std::make_integer_sequence<unsigned, 1u << K>{});
}

// An elementwise op whose inputs and out share one dtype (vector_add, mul,
// relu): the descriptor, its validation and its run, so that the op's file
// holds only its scalar function. N operands: out, then the inputs.
template <int N>
struct SameDtypeElementwise : oprt_descriptor {
  explicit SameDtypeElementwise(uint64_t tag) : oprt_descriptor(tag) {}
  ElementwisePlan<N> plan;
  int32_t dtype = 0;
  const char* names[N] = {};  // out's and the inputs' (string literals), for error messages
};

// D derives from SameDtypeElementwise<N> and is default-constructible.
template <class D, int N>
D* create_same_dtype_elementwise(const oprt_tensor_view_t* const (&views)[N], const char* const (&names)[N]) {
  int32_t dtype = 0;
  const ElementwisePlan<N> plan = plan_same_dtype<N>(views, names, &dtype);
  auto* d = new D;
  d->plan = plan;
  d->dtype = dtype;
  d->variant = plan.variant();
  for (int k = 0; k < N; ++k) d->names[k] = names[k];
  return d;
}

// Runs op over the planned layout; inputs[k] is input k's data.
template <int N, class Op>
void execute_same_dtype_elementwise(const SameDtypeElementwise<N>& d, void* out, const void* const (&inputs)[N - 1],
                                    const Op& op) {
  const int64_t numel = d.plan.layout.numel();
  require_data(out, "out", numel);
  for (int k = 0; k + 1 < N; ++k) require_data(inputs[k], d.names[k + 1], numel);
  dispatch_dtype(d.dtype, [&](auto type) {
    using T = decltype(type);
    const T* typed[N - 1];
    for (int k = 0; k + 1 < N; ++k) typed[k] = static_cast<const T*>(inputs[k]);
    run_elementwise(d.plan, static_cast<T*>(out), typed, op);
  });
}

}  // namespace oprt::cpu

#endif
