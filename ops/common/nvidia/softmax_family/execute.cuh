// The softmax family's launches (execute): the kernels of epilogue E that
// a SoftmaxFamilyPlan (plan.cuh) names. Choices that depend on the data
// pointers (their 16-byte alignment) are made here; the plan's forms that
// need an aligned base fall back to the plan under them.
#ifndef OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_EXECUTE_CUH_
#define OPRT_COMMON_NVIDIA_SOFTMAX_FAMILY_EXECUTE_CUH_

#include "plan.cuh"

namespace oprt::nvidia {
namespace {

// ---- rows in registers ---------------------------------------------------------------
// rows_warp / rows_block: the dense kernel where d.dense and the bases are
// equally aligned (both aligned, unless the rows are shifted anyway).
template <class E, class T, int G, int NV, class Index, int MB = 1>
void launch_rows_group(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  const int groups = G ? d.block / G : 1;
  const unsigned grid = grid_for(ceil_div(d.nrows, groups), std::max(1, 2048 / d.block), d.waves);
  if (d.dense && misalignment16(out) == misalignment16(src) && (d.shift || aligned16(src))) {
    // (rows of a block each: kFlat, unless the plan says kShifted)
    constexpr RowForm kShiftedForm = G == 0 ? RowForm::kFlat : RowForm::kShifted;
    const auto kernel = !d.shift  ? softmax_dense_rows_kernel<E, T, G, NV, MB>
                        : d.flat ? softmax_dense_rows_kernel<E, T, G, NV, MB, kShiftedForm>
                                 : softmax_dense_rows_kernel<E, T, G, NV, MB, RowForm::kShifted>;
    kernel<<<grid, d.block, 0, stream>>>(out, src, d.nrows, static_cast<int>(d.length));
    check_launch("softmax_dense_rows_kernel");
    return;
  }
  softmax_rows_kernel<E, T, G, NV, 1, Index, MB><<<grid, d.block, 0, stream>>>(
      out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride, d.shift);
  check_launch("softmax_rows_kernel");
}

template <class E, class T, class Index>
void launch_rows_stream(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  visit_block_shape<T>(d, [&](auto nv, auto mb) {
    constexpr auto kernel = softmax_stream_kernel<E, T, nv.value, Index, mb.value>;
    const size_t smem = stream_smem_bytes(d);
    if (opt_in_dynamic_smem<kernel>() < smem)  // on this device (the descriptor may be another's)
      fail(OPRT_STATUS_INTERNAL_ERROR, "rows_stream: %zu bytes of shared memory do not fit", smem);
    kernel<<<d.grid, d.block, smem, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), d.nrows, d.length, d.out_stride,
                                              d.stream_buffers);
    check_launch("softmax_stream_kernel");
  });
}

template <class E, class T, int C, class Index>
void launch_rows_cluster(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  const int64_t clusters = std::max<int64_t>(1, grid_for(d.nrows * C, std::max(1, 2048 / d.block), 2) / C);
  launch_with(cluster_attribute(C), softmax_rows_kernel<E, T, 0, kRowSlots, C, Index>,
              static_cast<unsigned>(clusters * C), d.block, 0, stream, out, src, OffsetCalc<2, Index>(d.rows),
              d.nrows, d.length, d.out_stride, d.shift);
}

// rows_cluster<C>, rows_stream (where src is 16-byte aligned: it bulk-copies
// rows), rows_block, rows_warp (G threads per row, a power of two up to a warp).
template <class E, class T, class Index>
void launch_rows(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  if (d.cluster > 1) {
    return visit_pow2<2, kPortableCluster>(d.cluster, "rows_cluster: blocks per row", [&](auto c) {
      launch_rows_cluster<E, T, c.value, Index>(d, out, src, stream);
    });
  }
  if (d.group == 0) {
    if (d.stream && aligned16(src)) return launch_rows_stream<E, T, Index>(d, out, src, stream);
    return visit_block_shape<T>(d, [&](auto nv, auto mb) {
      launch_rows_group<E, T, 0, nv.value, Index, mb.value>(d, out, src, stream);
    });
  }
  const auto slots = [&](auto nv) {
    visit_pow2<1, 32>(d.group, "rows_warp: threads per row", [&](auto group) {
      launch_rows_group<E, T, group.value, decltype(nv)::value, Index>(d, out, src, stream);
    });
  };
  switch (d.slots) {
    case 2: return slots(std::integral_constant<int, 2>{});
    case 4: return slots(std::integral_constant<int, 4>{});
    default: return slots(std::integral_constant<int, 8>{});
  }
}

// ---- long rows -----------------------------------------------------------------------
template <class E, class T, class Index>
void launch_rows_shared(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  visit_pow2<1, kLargestCluster>(d.shared_cluster, "rows_shared: blocks per row", [&](auto c) {
    const auto run = [&](auto edges) {
      constexpr auto kernel = softmax_rows_shared_kernel<E, T, c.value, decltype(edges)::value, Index>;
      if (c.value > kPortableCluster) allow_large_clusters<kernel>();  // on this device (the descriptor may be another's)
      const size_t smem = static_cast<size_t>(d.slice_vectors) * sizeof(Raw16);
      if (opt_in_dynamic_smem<kernel>() < smem)
        fail(OPRT_STATUS_INTERNAL_ERROR, "rows_shared: %zu bytes of shared memory do not fit", smem);
      const SharedRowsArgs args{d.length, d.slice_vectors};
      launch_with(cluster_attribute(c.value), kernel, static_cast<unsigned>(d.nrows * c.value), kSharedThreads, smem,
                  stream, out, src, OffsetCalc<2, Index>(d.rows), args);
    };
    if (d.shared_whole && aligned16(src))
      run(std::false_type{});
    else
      run(std::true_type{});
  });
}

template <class E, class T, class Index>
void launch_rows_twice(const SoftmaxFamilyPlan& d, const SplitArgs& args, T* out, const T* src,
                       cudaStream_t stream) {
  const OffsetCalc<2, Index> rows(d.rows);
  const auto run = [&](auto threads) {
    constexpr int kThreads = decltype(threads)::value;
    if (d.cache_vectors == 0)
      return softmax_rows_twice_kernel<E, T, Index, kThreads, false><<<d.grid, kThreads, 0, stream>>>(
          out, src, rows, args, 0);
    constexpr auto kernel = softmax_rows_twice_kernel<E, T, Index, kThreads, true>;
    const size_t smem = static_cast<size_t>(d.cache_vectors) * sizeof(Raw16);
    if (opt_in_dynamic_smem<kernel>() < smem)  // on this device (the descriptor may be another's)
      fail(OPRT_STATUS_INTERNAL_ERROR, "rows_twice: %zu bytes of shared memory do not fit", smem);
    kernel<<<d.grid, kThreads, smem, stream>>>(out, src, rows, args, d.cache_vectors);
  };
  if (d.block == 1024)
    run(std::integral_constant<int, 1024>{});
  else
    run(std::integral_constant<int, kTwiceThreads>{});
  check_launch("softmax_rows_twice_kernel");
}

// rows_twice, rows_split2, rows_resident, rows_split: (max, sum) per chunk
// in the workspace (none for rows_twice).
template <class E, class T, class Index>
void launch_long_rows(const SoftmaxFamilyPlan& d, void* workspace, T* out, const T* src, cudaStream_t stream) {
  const SplitArgs args{d.nrows, d.length, d.out_stride, d.splits, d.chunk, static_cast<Stats*>(workspace)};
  const OffsetCalc<2, Index> rows(d.rows);
  if (d.kind == Kind::kTwice) return launch_rows_twice<E, T, Index>(d, args, out, src, stream);
  if (d.kind == Kind::kSplit2) {
    softmax_split_stats_kernel<T, Index><<<d.grid, kSplitThreads, 0, stream>>>(src, rows, args);
    check_launch("softmax_split_stats_kernel");
    return launch_early_if(true, softmax_split_apply_kernel<E, T, Index>, d.grid, kSplitThreads, 0, stream, out, src,
                           rows, args);
  }
  if (d.kind == Kind::kResident) {
    const auto run = [&](auto bulk) {
      constexpr bool kBulk = decltype(bulk)::value;
      const size_t bytes = resident_cache_bytes<E, T, Index, kBulk>();  // on this device (the descriptor may be another's)
      return launch_with(cooperative_attribute(), softmax_resident_kernel<E, T, Index, kBulk>, d.grid,
                         kResidentThreads, bytes, stream, out, src, rows, args,
                         std::min<int64_t>(d.cache_vectors, static_cast<int64_t>(bytes / 16)), d.ahead);
    };
    return d.resident_copies ? run(std::false_type{}) : run(std::true_type{});
  }
  launch_with(cooperative_attribute(), softmax_split_kernel<E, T, Index>, d.grid, kSplitThreads, 0, stream, out,
              src, rows, args);
}

// ---- columns -------------------------------------------------------------------------
inline void launch_combine(Stats* partials, int64_t groups, int64_t splits, int64_t width, cudaStream_t stream) {
  if (splits == 1) return;  // a single split is already final
  combine_stats_kernel<<<grid_for(ceil_div(groups * width, 8), 8, 2), 256, 0, stream>>>(partials, groups, splits,
                                                                                      width);
  check_launch("combine_stats_kernel");
}

template <class E, class T, class Index>
void launch_columns_cluster(const SoftmaxFamilyPlan& d, T* out, const T* src, cudaStream_t stream) {
  visit_pow2<1, kLargestCluster>(d.column_cluster, "columns_cluster: blocks per tile", [&](auto c) {
    constexpr auto kernel = softmax_columns_cluster_kernel<E, T, c.value, Index>;
    if (c.value > kPortableCluster) allow_large_clusters<kernel>();  // on this device (the descriptor may be another's)
    const size_t smem = columns_cluster_smem<T>(d.cluster_chunk, d.cluster_tx);
    if (opt_in_dynamic_smem<kernel>() < smem)
      fail(OPRT_STATUS_INTERNAL_ERROR, "columns_cluster: %zu bytes of shared memory per block", smem);
    const ClusterColumnsArgs args{d.columns,   d.cluster_col_tiles, d.length,    d.cluster_chunk,
                                  d.src_stride, d.out_stride,       d.cluster_tx};
    launch_with(cluster_attribute(c.value), kernel, static_cast<unsigned>(d.planes * d.cluster_col_tiles * c.value),
                kColumnsThreads, smem, stream, out, src, OffsetCalc<2, Index>(d.rows), args);
  });
}

// columns_cluster where both bases are 16-byte aligned, else columns / strided:
// stats per (tile, split), their merge, the write.
template <class E, class T, class Index>
void launch_columns(const SoftmaxFamilyPlan& d, void* workspace, T* out, const T* src, cudaStream_t stream) {
  if (d.column_cluster && aligned16(out) && aligned16(src)) return launch_columns_cluster<E, T, Index>(d, out, src, stream);
  ColumnsArgs args{d.columns, d.col_tiles, d.planes, d.length, d.splits, d.chunk,
                   d.src_col_stride, d.out_col_stride, d.src_stride, d.out_stride, static_cast<Stats*>(workspace)};
  const unsigned grid = grid_for(d.planes * d.col_tiles * d.splits, 8, 2);
  const dim3 block(d.tx, d.ty);
  softmax_columns_stats_kernel<T, Index><<<grid, block, 0, stream>>>(src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_stats_kernel");
  launch_combine(args.partials, d.planes * d.col_tiles, d.splits, int64_t{d.tx} * kVec16<T>, stream);
  softmax_columns_write_kernel<E, T, Index><<<grid, block, 0, stream>>>(out, src, OffsetCalc<2, Index>(d.rows), args);
  check_launch("softmax_columns_write_kernel");
}

// ---- execute -------------------------------------------------------------------------
// rows_shared where planned and out's bases sit at src's alignment (it
// stores the vectors it bulk-copied), else the plan under it.
template <class E, class T, class Index>
void launch(const SoftmaxFamilyPlan& d, void* workspace, T* out, const T* src, cudaStream_t stream) {
  if (d.shared_cluster > 0 && misalignment16(out) == misalignment16(src))
    return launch_rows_shared<E, T, Index>(d, out, src, stream);
  switch (d.kind) {
    case Kind::kRows: return launch_rows<E, T, Index>(d, out, src, stream);
    case Kind::kColumns: return launch_columns<E, T, Index>(d, workspace, out, src, stream);
    default: return launch_long_rows<E, T, Index>(d, workspace, out, src, stream);
  }
}

// Runs the plan d of epilogue E: the body of an op's execute.
template <class E>
void execute_softmax_family(const SoftmaxFamilyPlan& d, void* workspace, void* out, const void* src,
                            void* stream_handle) {
  const cudaStream_t stream = static_cast<cudaStream_t>(stream_handle);
  const int64_t numel = d.nrows * d.length;
  require_data(out, "out", numel);
  require_data(src, "src", numel);
  if (d.kind == Kind::kEmpty) return;
  StreamDeviceGuard device(stream);
  visit_types(d, [&](auto type, auto index) {
    using T = decltype(type);
    launch<E, T, decltype(index)>(d, workspace, static_cast<T*>(out), static_cast<const T*>(src), stream);
  });
}

}  // namespace
}  // namespace oprt::nvidia

#endif
