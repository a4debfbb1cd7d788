"""softmax on TileLang, computed in float32 and rounded once, with torch's
non-finite behaviour: a NaN or +inf in a row, or a row of all -inf, gives a
NaN row (max by fmaxf, then exp(x - max) / sum, where NaN and inf - inf
reach the sum).

Canonical forms (anything else is staged through the workspace):

  rows      src/out [M, N] dense, softmax over N
  columns   src/out [B, R, C] dense, softmax over R

Kernels (sizes T.dynamic):
  warp_rows(dtype, per_lane)            N <= 32 * per_lane: a warp per row,
                                        the row in registers, 1 read + 1 write
  block_rows(dtype, threads, per_thread, vec)
                                        N <= threads * per_thread: a block per
                                        row, the row in registers
  split_stats(dtype, vec) + split_apply(dtype, vec)
                                        long rows: each row cut into S
                                        segments; the first launch writes each
                                        segment's (max, sum of exp) to the
                                        workspace with an online update, the
                                        second merges a row's S pairs and
                                        writes its segment: 2 reads + 1 write
  column_stats(dtype) + column_apply(dtype)
                                        the same two steps down columns, one
                                        thread per column, S row segments
out may be src itself: every element is read before its own write.
"""

import tilelang.language as T

from operator_runtime._internal.tilelang_common import (NEG_INF, block_max, block_sum, rescale, vector_width, warp_max,
                                                        warp_sum)

DTYPES = ("float32", "float16", "bfloat16")
F32 = "float32"
# (threads, per_thread) of block_rows, by the longest row each holds in registers
BLOCK_ROW_CLASSES = ((256, 8), (512, 8), (512, 16), (1024, 16), (1024, 32))
WARP_ROW_CLASSES = (4, 8, 16, 32)
SPLIT_THREADS = 512


def warp_rows(dtype: str, per_lane: int):
    threads = 256
    warps = threads // 32
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_warp_rows(src: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, warps), threads=threads) as bx:
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            lane = tx % 32
            row = bx * warps + tx // 32
            x = T.alloc_local((per_lane,), F32)
            m = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            for j in T.unroll(per_lane):
                x[j] = T.float32(NEG_INF)
            if row < M:
                for j in T.unroll(per_lane):
                    if j * 32 + lane < N:
                        x[j] = T.cast(src[row, j * 32 + lane], F32)
            m[0] = T.float32(NEG_INF)
            for j in T.unroll(per_lane):
                m[0] = T.max(m[0], x[j])
            warp_max(m)
            s[0] = T.float32(0)
            for j in T.unroll(per_lane):
                x[j] = T.if_then_else(j * 32 + lane < N, T.exp(x[j] - m[0]), T.float32(0))
                s[0] = s[0] + x[j]
            warp_sum(s)
            if row < M:
                for j in T.unroll(per_lane):
                    if j * 32 + lane < N:
                        out[row, j * 32 + lane] = T.cast(x[j] / s[0], dtype)

    return softmax_warp_rows


def block_rows(dtype: str, threads: int, per_thread: int, vec: int):
    M, N = T.dynamic("M N")
    chunks = per_thread // vec

    @T.prim_func
    def softmax_block_rows(src: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as row:
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            x = T.alloc_local((per_thread,), F32)
            buf = T.alloc_local((vec,), dtype)
            m = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            if vec > 1:
                T.assume(N % vec == 0)
            for c in T.unroll(chunks):
                if (c * threads + tx) * vec < N:
                    for v in T.vectorized(vec):
                        buf[v] = src[row, (c * threads + tx) * vec + v]
                    for v in T.unroll(vec):
                        x[c * vec + v] = T.cast(buf[v], F32)
                else:
                    for v in T.unroll(vec):
                        x[c * vec + v] = T.float32(NEG_INF)
            m[0] = T.float32(NEG_INF)
            for j in T.unroll(per_thread):
                m[0] = T.max(m[0], x[j])
            block_max(m, red, tx, threads)
            s[0] = T.float32(0)
            for c in T.unroll(chunks):
                for v in T.unroll(vec):
                    x[c * vec + v] = T.if_then_else((c * threads + tx) * vec < N, T.exp(x[c * vec + v] - m[0]),
                                                    T.float32(0))
                    s[0] = s[0] + x[c * vec + v]
            block_sum(s, red, tx, threads)
            for c in T.unroll(chunks):
                if (c * threads + tx) * vec < N:
                    for v in T.unroll(vec):
                        buf[v] = T.cast(x[c * vec + v] / s[0], dtype)
                    for v in T.vectorized(vec):
                        out[row, (c * threads + tx) * vec + v] = buf[v]

    return softmax_block_rows


def _segment(N, S, step):
    seg_len = T.ceildiv(T.ceildiv(N, S), step) * step
    return seg_len


def split_stats(dtype: str, vec: int, unroll: int = 2):
    threads = SPLIT_THREADS
    step = threads * vec * unroll
    M, N, S = T.dynamic("M N S")

    @T.prim_func
    def softmax_split_stats(src: T.Tensor((M, N), dtype), stats: T.Tensor((2, M, S), F32)):
        with T.Kernel(M, S, threads=threads) as (row, seg):
            tx = T.get_thread_binding()
            x = T.alloc_local((unroll * vec,), F32)
            buf = T.alloc_local((vec,), dtype)
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            if vec > 1:
                T.assume(N % vec == 0)
            seg_len = _segment(N, S, step)
            start = seg * seg_len
            end = T.min(N, start + seg_len)
            m[0] = T.float32(NEG_INF)
            s[0] = T.float32(0)
            for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
                for u in T.unroll(unroll):
                    if start + k * step + (u * threads + tx) * vec < end:
                        for v in T.vectorized(vec):
                            buf[v] = src[row, start + k * step + (u * threads + tx) * vec + v]
                        for v in T.unroll(vec):
                            x[u * vec + v] = T.cast(buf[v], F32)
                    else:
                        for v in T.unroll(vec):
                            x[u * vec + v] = T.float32(NEG_INF)
                mn[0] = m[0]
                for j in T.unroll(unroll * vec):
                    mn[0] = T.max(mn[0], x[j])
                rescale(s, m[0], mn[0])
                for j in T.unroll(unroll * vec):
                    s[0] = s[0] + T.if_then_else(x[j] == T.float32(NEG_INF), T.float32(0), T.exp(x[j] - mn[0]))
                m[0] = mn[0]
            mn[0] = m[0]
            block_max(mn, red, tx, threads)
            rescale(s, m[0], mn[0])
            block_sum(s, red, tx, threads)
            if tx == 0:
                stats[0, row, seg] = mn[0]
                stats[1, row, seg] = s[0]

    return softmax_split_stats


def split_apply(dtype: str, vec: int, unroll: int = 2):
    threads = SPLIT_THREADS
    step = threads * vec * unroll
    M, N, S = T.dynamic("M N S")

    @T.prim_func
    def softmax_split_apply(src: T.Tensor((M, N), dtype), stats: T.Tensor((2, M, S), F32),
                            out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, S, threads=threads) as (row, seg):
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            buf = T.alloc_local((vec,), dtype)
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            if vec > 1:
                T.assume(N % vec == 0)
            # merge the row's S (max, sum) pairs
            m[0] = T.float32(NEG_INF)
            s[0] = T.float32(0)
            for j in T.serial(T.ceildiv(S, threads)):
                if j * threads + tx < S:
                    mn[0] = T.max(m[0], stats[0, row, j * threads + tx])
                    rescale(s, m[0], mn[0])
                    s[0] = s[0] + T.if_then_else(stats[0, row, j * threads + tx] == mn[0],
                                                 stats[1, row, j * threads + tx],
                                                 stats[1, row, j * threads + tx]
                                                 * T.exp(stats[0, row, j * threads + tx] - mn[0]))
                    m[0] = mn[0]
            mn[0] = m[0]
            block_max(mn, red, tx, threads)
            rescale(s, m[0], mn[0])
            block_sum(s, red, tx, threads)
            seg_len = _segment(N, S, step)
            start = seg * seg_len
            end = T.min(N, start + seg_len)
            for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
                for u in T.unroll(unroll):
                    if start + k * step + (u * threads + tx) * vec < end:
                        for v in T.vectorized(vec):
                            buf[v] = src[row, start + k * step + (u * threads + tx) * vec + v]
                        for v in T.unroll(vec):
                            buf[v] = T.cast(T.exp(T.cast(buf[v], F32) - mn[0]) / s[0], dtype)
                        for v in T.vectorized(vec):
                            out[row, start + k * step + (u * threads + tx) * vec + v] = buf[v]

    return softmax_split_apply


def column_stats(dtype: str, unroll: int = 4):
    threads = 256
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_column_stats(src: T.Tensor((B, R, C), dtype), stats: T.Tensor((2, B, S, C), F32)):
        with T.Kernel(T.ceildiv(C, threads) * B, S, threads=threads) as (bt, seg):
            tx = T.get_thread_binding()
            b = bt // T.ceildiv(C, threads)
            col = (bt % T.ceildiv(C, threads)) * threads + tx
            x = T.alloc_local((unroll,), F32)
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            seg_len = T.ceildiv(R, S)
            start = seg * seg_len
            end = T.min(R, start + seg_len)
            m[0] = T.float32(NEG_INF)
            s[0] = T.float32(0)
            if col < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), unroll)):
                    for u in T.unroll(unroll):
                        x[u] = T.if_then_else(start + k * unroll + u < end,
                                              T.cast(src[b, start + k * unroll + u, col], F32), T.float32(NEG_INF))
                    mn[0] = m[0]
                    for u in T.unroll(unroll):
                        mn[0] = T.max(mn[0], x[u])
                    rescale(s, m[0], mn[0])
                    for u in T.unroll(unroll):
                        s[0] = s[0] + T.if_then_else(x[u] == T.float32(NEG_INF), T.float32(0), T.exp(x[u] - mn[0]))
                    m[0] = mn[0]
                stats[0, b, seg, col] = m[0]
                stats[1, b, seg, col] = s[0]

    return softmax_column_stats


def column_apply(dtype: str, unroll: int = 4):
    threads = 256
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_column_apply(src: T.Tensor((B, R, C), dtype), stats: T.Tensor((2, B, S, C), F32),
                             out: T.Tensor((B, R, C), dtype)):
        with T.Kernel(T.ceildiv(C, threads) * B, S, threads=threads) as (bt, seg):
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            b = bt // T.ceildiv(C, threads)
            col = (bt % T.ceildiv(C, threads)) * threads + tx
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            seg_len = T.ceildiv(R, S)
            start = seg * seg_len
            end = T.min(R, start + seg_len)
            if col < C:
                m[0] = T.float32(NEG_INF)
                s[0] = T.float32(0)
                for j in T.serial(S):
                    mn[0] = T.max(m[0], stats[0, b, j, col])
                    rescale(s, m[0], mn[0])
                    s[0] = s[0] + T.if_then_else(stats[0, b, j, col] == mn[0], stats[1, b, j, col],
                                                 stats[1, b, j, col] * T.exp(stats[0, b, j, col] - mn[0]))
                    m[0] = mn[0]
                for k in T.serial(T.ceildiv(T.max(end - start, 0), unroll)):
                    for u in T.unroll(unroll):
                        if start + k * unroll + u < end:
                            out[b, start + k * unroll + u, col] = T.cast(
                                T.exp(T.cast(src[b, start + k * unroll + u, col], F32) - m[0]) / s[0], dtype)

    return softmax_column_apply


def variants():
    out = []
    for d in DTYPES:
        v = vector_width(d)
        for per_lane in WARP_ROW_CLASSES:
            out.append((f"warp_rows_{d}_{per_lane}", warp_rows, (d, per_lane)))
        for threads, per_thread in BLOCK_ROW_CLASSES:
            out.append((f"block_rows_{d}_{threads}x{per_thread}_v", block_rows, (d, threads, per_thread, v)))
            out.append((f"block_rows_{d}_{threads}x{per_thread}_1", block_rows, (d, threads, per_thread, 1)))
        for vec in (v, 1):
            out.append((f"split_stats_{d}_{vec}", split_stats, (d, vec)))
            out.append((f"split_apply_{d}_{vec}", split_apply, (d, vec)))
        out.append((f"column_stats_{d}", column_stats, (d,)))
        out.append((f"column_apply_{d}", column_apply, (d,)))
    return out
