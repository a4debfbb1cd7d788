"""reduce_sum on TileLang: sums accumulated in float32 and rounded once.

Canonical forms (the backend reduces every request to one of them, staging
the source through the workspace when its layout is not one of these):

  rows      src [M, N] dense, sum over N            -> out [M, S] (strided)
  columns   src [B, R, C] dense, sum over R         -> out [B, S, C] (strided)

S splits the reduced dim into S consecutive segments (one block each) so
that few long rows, or few columns, still fill the GPU. With S = 1 the
kernel writes the result straight into the caller's out (viewed as
[M, 1] or [B, 1, C]); with S > 1 it writes float32 partials into the
workspace and a second launch of the same kernel (input float32) sums the
S partials in a fixed order. Every partition depends only on the shape, so
results are bitwise reproducible.

Kernels (sizes T.dynamic):
  rows(src, out, vec)        one block of 256 threads per (row, segment); grid (M, S)
  warp_rows(src, out)        one warp per row, 8 rows a block: short rows
  columns(src, out, vec)     one thread per `vec` columns, a block per
                             (column tile x batch, segment)
vec > 1 uses 16-byte loads and needs the row length (or C) to be a multiple
of vec and the pointers 16-byte aligned; vec = 1 uses coalesced scalar loads.
"""


import tilelang.language as T

from operator_runtime._internal.tilelang_common import block_sum, vector_width, warp_sum

DTYPES = ("float32", "float16", "bfloat16")
THREADS = 256
F32 = "float32"


def rows(src_dtype: str, out_dtype: str, vec: int, unroll: int = 2):
    threads = THREADS
    step = threads * vec * unroll
    M, N, S = T.dynamic("M N S")
    om, os = T.dynamic("om os", "int64")

    @T.prim_func
    def sum_rows(src: T.Tensor((M, N), src_dtype), out: T.StridedTensor((M, S), (om, os), out_dtype)):
        with T.Kernel(M, S, threads=threads) as (row, seg):
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), F32)
            part = T.alloc_local((unroll * vec,), F32)
            buf = T.alloc_local((unroll * vec,), src_dtype)
            red = T.alloc_shared((32,), F32)
            if vec > 1:
                T.assume(N % vec == 0)
            # segment length: a multiple of `step`, so every segment starts aligned
            seg_len = T.ceildiv(T.ceildiv(N, S), step) * step
            start = seg * seg_len
            end = T.min(N, start + seg_len)
            for j in T.unroll(unroll * vec):
                part[j] = T.float32(0)
            for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
                if start + (k + 1) * step <= end:
                    for u in T.unroll(unroll):
                        for v in T.vectorized(vec):
                            buf[u * vec + v] = src[row, start + k * step + (u * threads + tx) * vec + v]
                    for j in T.unroll(unroll * vec):
                        part[j] = part[j] + T.cast(buf[j], F32)
                else:
                    for u in T.unroll(unroll):
                        for v in T.unroll(vec):
                            if start + k * step + (u * threads + tx) * vec + v < end:
                                part[u * vec + v] = part[u * vec + v] + T.cast(
                                    src[row, start + k * step + (u * threads + tx) * vec + v], F32)
            acc[0] = T.float32(0)
            for j in T.unroll(unroll * vec):
                acc[0] = acc[0] + part[j]
            block_sum(acc, red, tx, threads)
            if tx == 0:
                out[row, seg] = T.cast(acc[0], out_dtype)

    return sum_rows


def warp_rows(src_dtype: str, out_dtype: str, per_lane: int = 4):
    """Rows of up to a few hundred elements: a warp per row, scalar coalesced loads."""
    threads = THREADS
    warps = threads // 32
    step = 32 * per_lane
    M, N = T.dynamic("M N")
    om = T.dynamic("om", "int64")

    @T.prim_func
    def sum_warp_rows(src: T.Tensor((M, N), src_dtype), out: T.StridedTensor((M,), (om,), out_dtype)):
        with T.Kernel(T.ceildiv(M, warps), threads=threads) as bx:
            tx = T.get_thread_binding()
            lane = tx % 32
            row = bx * warps + tx // 32
            acc = T.alloc_local((1,), F32)
            part = T.alloc_local((per_lane,), F32)
            for j in T.unroll(per_lane):
                part[j] = T.float32(0)
            if row < M:
                for k in T.serial(T.ceildiv(N, step)):
                    for j in T.unroll(per_lane):
                        if k * step + j * 32 + lane < N:
                            part[j] = part[j] + T.cast(src[row, k * step + j * 32 + lane], F32)
            acc[0] = T.float32(0)
            for j in T.unroll(per_lane):
                acc[0] = acc[0] + part[j]
            warp_sum(acc)
            if row < M and lane == 0:
                out[row] = T.cast(acc[0], out_dtype)

    return sum_warp_rows


def columns(src_dtype: str, out_dtype: str, vec: int, unroll: int = 4):
    threads = THREADS
    cols = threads * vec
    B, R, C, S = T.dynamic("B R C S")
    ob, os, oc = T.dynamic("ob os oc", "int64")

    @T.prim_func
    def sum_columns(src: T.Tensor((B, R, C), src_dtype), out: T.StridedTensor((B, S, C), (ob, os, oc), out_dtype)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            tx = T.get_thread_binding()
            b = bt // T.ceildiv(C, cols)
            bx = bt % T.ceildiv(C, cols)
            part = T.alloc_local((unroll, vec), F32)
            buf = T.alloc_local((unroll, vec), src_dtype)
            if vec > 1:
                T.assume(C % vec == 0)
            seg_len = T.ceildiv(R, S)
            start = seg * seg_len
            end = T.min(R, start + seg_len)
            c0 = bx * cols + tx * vec
            for u in T.unroll(unroll):
                for v in T.unroll(vec):
                    part[u, v] = T.float32(0)
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), unroll)):
                    if start + (k + 1) * unroll <= end:
                        for u in T.unroll(unroll):
                            for v in T.vectorized(vec):
                                buf[u, v] = src[b, start + k * unroll + u, c0 + v]
                        for u in T.unroll(unroll):
                            for v in T.unroll(vec):
                                part[u, v] = part[u, v] + T.cast(buf[u, v], F32)
                    else:
                        for u in T.unroll(unroll):
                            if start + k * unroll + u < end:
                                for v in T.unroll(vec):
                                    part[u, v] = part[u, v] + T.cast(src[b, start + k * unroll + u, c0 + v], F32)
                for v in T.unroll(vec):
                    for u in T.unroll(1, unroll):
                        part[0, v] = part[0, v] + part[u, v]
                    out[b, seg, c0 + v] = T.cast(part[0, v], out_dtype)

    return sum_columns


def variants():
    out = []
    for d in DTYPES:
        out.append((f"rows_{d}_v", rows, (d, d, vector_width(d))))
        out.append((f"rows_{d}_1", rows, (d, d, 1)))
        out.append((f"rows_{d}_to_f32_v", rows, (d, F32, vector_width(d))))
        out.append((f"rows_{d}_to_f32_1", rows, (d, F32, 1)))
        out.append((f"rows_f32_to_{d}_1", rows, (F32, d, 1)))
        out.append((f"warp_rows_{d}", warp_rows, (d, d)))
        out.append((f"columns_{d}_v", columns, (d, d, vector_width(d))))
        out.append((f"columns_{d}_1", columns, (d, d, 1)))
        out.append((f"columns_{d}_to_f32_v", columns, (d, F32, vector_width(d))))
        out.append((f"columns_{d}_to_f32_1", columns, (d, F32, 1)))
        out.append((f"columns_f32_to_{d}_1", columns, (F32, d, 1)))
    unique = {}
    for name, factory, args in out:
        unique.setdefault((factory.__name__, args), (name, factory, args))
    return sorted(unique.values(), key=lambda v: v[0])
