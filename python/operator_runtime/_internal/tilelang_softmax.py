"""The softmax family of the TileLang backend: ops computed from each row's
max m and sum s = sum(exp(x - m)), in float32 and rounded once, with torch's
non-finite behaviour (a NaN or +inf in a row, or a row of all -inf, gives a
NaN row: max by fmaxf, then x - m, where NaN and inf - inf reach the sum).

An op is an instance, SoftmaxFamily, holding its epilogue: the final
per-element formula from the row's max and sum (softmax: exp(x - m) / s;
log_softmax: x - m - log(s)). The kernels and the planning below are shared;
kernel files reach this module through operator_runtime.tilelang_authoring.
Ops of two inputs (softmax's and log_softmax's gradients) are RowSumFamily
instances (tilelang_row_sum.py).

Canonical forms (anything else is staged through the workspace):

  rows      src/out [M, N] dense, the op over N
  columns   src/out [B, R, C] dense, the op over R

Kernels (sizes T.dynamic; `fam` is the op's SoftmaxFamily):
  group_rows(fam, dtype, lanes, slots)  N <= lanes * slots * vec, N % vec == 0,
                                        aligned: `lanes` lanes per row, 16-byte
                                        vectors in registers, 1 read + 1 write
  warp_rows(fam, dtype, per_lane)       N <= 32 * per_lane, any N: a warp per
                                        rows_per_warp rows, scalar coalesced
                                        loads, in registers
  block_rows(fam, dtype, threads, per_thread, vec)
                                        N <= threads * per_thread: a block per
                                        row, the row in registers
  split_stats(dtype, vec, flat) + split_apply(fam, dtype, vec, flat)
                                        long rows: each row cut into S
                                        segments; the first launch writes each
                                        segment's (max, sum of exp) to the
                                        workspace with an online update, the
                                        second merges a row's S pairs and
                                        writes its segment: 2 reads + 1 write;
                                        flat (N % vec != 0, aligned): vectors
                                        counted from the tensor's start, a
                                        row's few elements outside them taken
                                        one each by segment 0's first threads
  column_stats(dtype) + column_combine() + column_apply(fam, dtype, merged=True)
                                        the same steps down columns, one
                                        thread per column, S row segments;
                                        column_combine merges a column's S
                                        pairs once (column_apply alone merges
                                        them in every segment: for S = 1)
  column_cluster(fam, dtype, cluster)   columns of up to cluster * 1024 rows,
                                        C % vec == 0, aligned: a cluster of
                                        blocks per 64-byte column tile, the
                                        tile held in shared memory: 1 read +
                                        1 write
The statistics kernels (split_stats, column_stats, column_combine) do not
depend on the epilogue: every op of the family shares them.
out may be src itself: every element is read before its own write.
Every kernel here compiles with -ftz=true (with_denormals_flushed).
"""

# No `from __future__ import annotations`: TileLang evaluates the prim_funcs'
# annotations, which name the factories' local variables (dtypes, sizes).

import math

import tilelang.language as T
import torch

from .tilelang_device import (DTYPES, F32, MAX_GRID_Y, NEG_INF, RESIDENT_BLOCKS, TARGET_BLOCKS, block_max, block_sum,
                              column_tile, compensated_add, exp_term, fast_exp, load_column_round, rescale,
                              row_edge, rows_per_warp, scaled, segments, term_under_neg_inf_max, tuned_off, vector_width,
                              with_bounds_trusted, with_denormals_flushed, with_stores_lowered)


class SoftmaxFamily:
    """One op of the family, by its epilogue.

    normalizer(s) -> k          once per row, from the row's sum s (softmax:
                                1 / s, so that each element costs a multiply)
    from_input(x, m, k) -> out  an output from its float32 input x, the row's
                                max m and k
    from_exp(e, k) -> out       an output from e = exp(x - m); None where the
                                output needs x itself: the kernels that would
                                hold e in registers for the write then hold x
                                and compute exp only into the sum
    `name` is the op, which also names the kernels (<name>_block_rows, ...)."""

    def __init__(self, name: str, normalizer, from_input, from_exp=None):
        self.name = name
        self.normalizer = normalizer
        self.from_input = from_input
        self.from_exp = from_exp

    @property
    def keeps_exp(self) -> bool:
        return self.from_exp is not None

    def __repr__(self) -> str:
        return f"SoftmaxFamily({self.name})"

    def plan(self, p, out, inputs, params):
        return plan_along_dim(self, p, out, inputs[0], params[0])

    def cuts(self, out, inputs, params):
        """Pieces may cut any dim but the op's own (a row must stay whole)."""
        return [(d, d) for d in range(out.dim()) if d != params[0]]

    def variants(self):
        return family_variants(self)


def _named(prim_func, fam: SoftmaxFamily, kind: str):
    return prim_func.with_attr("global_symbol", f"{fam.name}_{kind}")


# (threads, per_thread) of block_rows by dtype, by the longest row each holds
# in registers. 16-bit rows of 8K run fastest with 4 vectors (32 elements) a
# thread (fewer, wider blocks: 256x32 beat 512x16 by about 15% on the H200);
# 16K with 8 kept in their own dtype (256x64, as the nvidia backend's 8-slot
# rows: half the registers, about 8% faster than 4 vectors as float32);
# float32 rows ran as fast either way.
_F32_BLOCK_ROWS = ((256, 8), (512, 8), (512, 16), (1024, 16), (1024, 32))
_HALF_BLOCK_ROWS = ((256, 8), (512, 8), (256, 32), (256, 64), (1024, 32))
BLOCK_ROW_CLASSES = {"float32": _F32_BLOCK_ROWS, "float16": _HALF_BLOCK_ROWS, "bfloat16": _HALF_BLOCK_ROWS}
WARP_ROW_CLASSES = (4, 8, 16, 32)
# (lanes, slots) of group_rows, by the longest row each holds: lanes * slots vectors
GROUP_ROW_CLASSES = ((4, 2), (8, 2), (16, 2), (32, 2), (32, 4))
SPLIT_THREADS = 512


@with_denormals_flushed
def warp_rows(fam: SoftmaxFamily, dtype: str, per_lane: int, rpw: int = 0, persistent: bool = False):
    """rpw rows per warp (0: rows_per_warp); persistent: at most
    RESIDENT_BLOCKS blocks, each looping over row groups (measured slower on
    the H200 at every rows-per-warp setting; kept as the knob to try)."""
    threads = 256
    warps = threads // 32
    rpw = rpw or rows_per_warp(dtype, per_lane)
    M, N = T.dynamic("M N")
    groups = T.ceildiv(M, warps * rpw)
    grid = T.min(groups, RESIDENT_BLOCKS) if persistent else groups

    @T.prim_func
    def softmax_warp_rows(src: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(grid, threads=threads) as bx:
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            lane = tx % 32
            rounds = T.alloc_var("int32", init=T.ceildiv(groups, grid))
            x = T.alloc_local((rpw, per_lane), F32)
            m = T.alloc_local((rpw,), F32)
            s = T.alloc_local((rpw,), F32)
            for it in T.serial(rounds):
                row0 = ((it * grid + bx) * warps + tx // 32) * rpw
                for r in T.unroll(rpw):
                    for j in T.unroll(per_lane):
                        x[r, j] = T.float32(NEG_INF)
                for r in T.unroll(rpw):  # every load first
                    if row0 + r < M:
                        for j in T.unroll(per_lane):
                            if j * 32 + lane < N:
                                x[r, j] = T.cast(src[row0 + r, j * 32 + lane], F32)
                for r in T.unroll(rpw):
                    m[r] = T.float32(NEG_INF)
                    for j in T.unroll(per_lane):
                        m[r] = T.max(m[r], x[r, j])
                for o in T.unroll(5):
                    for r in T.unroll(rpw):
                        m[r] = T.max(m[r], T.shfl_xor(m[r], 16 >> o))
                for r in T.unroll(rpw):
                    s[r] = T.float32(0)
                    for j in T.unroll(per_lane):
                        if fam.keeps_exp:
                            x[r, j] = T.if_then_else(j * 32 + lane < N, fast_exp(x[r, j] - m[r]), T.float32(0))
                            s[r] = s[r] + x[r, j]
                        else:
                            s[r] = s[r] + T.if_then_else(j * 32 + lane < N, fast_exp(x[r, j] - m[r]), T.float32(0))
                for o in T.unroll(5):
                    for r in T.unroll(rpw):
                        s[r] = s[r] + T.shfl_xor(s[r], 16 >> o)
                for r in T.unroll(rpw):
                    s[r] = fam.normalizer(s[r])
                    if row0 + r < M:
                        for j in T.unroll(per_lane):
                            if j * 32 + lane < N:
                                out[row0 + r, j * 32 + lane] = T.cast(output(fam, x[r, j], m[r], s[r]), dtype)

    return _named(softmax_warp_rows, fam, "warp_rows")


def output(fam: SoftmaxFamily, x, m, k):
    """An output (float32) from a row register x that holds exp(x - m) where
    the family keeps it (fam.keeps_exp), else the input itself."""
    return fam.from_exp(x, k) if fam.keeps_exp else fam.from_input(x, m, k)


@T.macro
def exp_and_sum(fam, x, m, s, chunks, vec, stride, first, N):
    """s[0] = the sum of exp(x - m[0]) over a thread's row registers x
    (chunks of `vec`, chunk c at vector c * stride + first of the row), 0
    past the row's end; where the family keeps exp (fam.keeps_exp), x
    becomes those terms."""
    s[0] = T.float32(0)
    for c in T.unroll(chunks):
        for v in T.unroll(vec):
            if fam.keeps_exp:
                x[c * vec + v] = T.if_then_else((c * stride + first) * vec < N, fast_exp(x[c * vec + v] - m[0]),
                                                T.float32(0))
                s[0] = s[0] + x[c * vec + v]
            else:
                s[0] = s[0] + T.if_then_else((c * stride + first) * vec < N, fast_exp(x[c * vec + v] - m[0]),
                                             T.float32(0))


@with_denormals_flushed
def group_rows(fam: SoftmaxFamily, dtype: str, lanes: int, slots: int = 2):
    """N <= lanes * slots * vec, N % vec == 0, 16-byte aligned rows: `lanes`
    lanes per row (a power of two up to a warp), each holding `slots` 16-byte
    vectors in registers; max and sum by shuffles inside the lane group.
    The vectorized twin of warp_rows for short rows (a 128-wide bf16 row is 8
    lanes of 2 vectors, where warp_rows gives each of 32 lanes 4 scalars)."""
    vec = vector_width(dtype)
    threads = 256
    rows_per_block = threads // lanes
    width = slots * vec
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_group_rows(src: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, rows_per_block), threads=threads) as bx:
            T.annotate_restrict_buffers(src, out)
            T.assume(N % vec == 0)
            tx = T.get_thread_binding()
            lane = tx % lanes
            row = bx * rows_per_block + tx // lanes
            buf = T.alloc_local((width,), dtype)
            x = T.alloc_local((width,), F32)
            m = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            for j in T.unroll(slots):  # every load first
                if row < M and (j * lanes + lane) * vec < N:
                    for v in T.vectorized(vec):
                        buf[j * vec + v] = src[row, (j * lanes + lane) * vec + v]
            m[0] = T.float32(NEG_INF)
            for j in T.unroll(slots):
                for v in T.unroll(vec):
                    x[j * vec + v] = T.if_then_else(row < M, T.if_then_else(
                        (j * lanes + lane) * vec < N, T.cast(buf[j * vec + v], F32), T.float32(NEG_INF)),
                        T.float32(0))
                    m[0] = T.max(m[0], x[j * vec + v])
            for o in T.unroll(lanes.bit_length() - 1):  # xor masks lanes/2 .. 1 stay inside the group
                m[0] = T.max(m[0], T.shfl_xor(m[0], lanes >> (o + 1)))
            exp_and_sum(fam, x, m, s, slots, vec, lanes, lane, N)
            for o in T.unroll(lanes.bit_length() - 1):
                s[0] = s[0] + T.shfl_xor(s[0], lanes >> (o + 1))
            s[0] = fam.normalizer(s[0])
            for j in T.unroll(slots):
                if row < M and (j * lanes + lane) * vec < N:
                    for v in T.unroll(vec):
                        buf[j * vec + v] = T.cast(output(fam, x[j * vec + v], m[0], s[0]), dtype)
                    for v in T.vectorized(vec):
                        out[row, (j * lanes + lane) * vec + v] = buf[j * vec + v]

    return _named(softmax_group_rows, fam, "group_rows")


@T.macro
def scaled_chunk(fam, buf, x, c, vec, m, k, exp_held, dtype):
    """buf = chunk c of a thread's row registers x as outputs: from
    exp(x - m) where x holds it (exp_held), else from the input x."""
    for v in T.unroll(vec):
        if exp_held:
            buf[v] = T.cast(fam.from_exp(x[c * vec + v], k[0]), dtype)
        else:
            buf[v] = T.cast(fam.from_input(T.cast(x[c * vec + v], F32), m[0], k[0]), dtype)


@with_stores_lowered
@with_denormals_flushed
def block_rows(fam: SoftmaxFamily, dtype: str, threads: int, per_thread: int, vec: int, flat: bool = False):
    """A block per row, the row in registers: float32 values, or (16-bit
    with 8 vectors a thread: keep_input) the row in its own dtype with exp
    computed twice, as the nvidia backend's 8-slot rows (half the registers).
    Between the sum and the write the registers hold exp(x - m) where the
    family keeps it and the row is float32 (exp_held), else the input.
    flat (N % vec != 0, 16-byte aligned bases, N >= 2 * vec): vectors
    counted from the tensor's start; the threads' slots hold the row's whole
    vectors, and its up to vec - 1 leading and vec - 1 trailing elements
    (in the vectors it shares with its neighbours) are one element each of
    threads 0 .. 2 * vec - 1, so no slot needs an element-by-element path."""
    M, N = T.dynamic("M N")
    chunks = per_thread // vec
    keep_input = dtype != F32 and per_thread // vector_width(dtype) >= 8  # (also for the scalar twin, vec = 1)
    held = dtype if keep_input else F32
    exp_held = fam.keeps_exp and not keep_input
    # Blocks an SM the register count must allow (stores_lowered's explicit
    # stores took a few more registers than nvcc's, which cost a block an SM
    # in some classes): a full SM up to 16 values a thread (32 registers),
    # 3 blocks of 256 for the 16-bit rows kept in their own dtype.
    min_blocks = 2048 // threads if per_thread <= 16 else 3 if keep_input else 0

    @T.prim_func
    def softmax_block_rows(src: T.Tensor((M, N), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as row:
            T.annotate_restrict_buffers(src, out)
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            tx = T.get_thread_binding()
            x = T.alloc_local((per_thread,), held)
            buf = T.alloc_local((vec,), dtype)
            m = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            e = T.alloc_local((1,), F32)  # flat: this thread's element at a row end, or -inf
            if flat:
                src1 = T.reshape(src, (M * N,))
                out1 = T.reshape(out, (M * N,))
                first = row * N
                lo = T.ceildiv(first, vec)  # the row's first whole vector
                hi = (first + N) // vec  # one past its last
                for c in T.unroll(chunks):
                    # (the M * N bound follows from the row's, but stated, the bounds pass keeps the loads vectors)
                    if lo + c * threads + tx < hi and (lo + c * threads + tx) * vec + vec <= M * N:
                        for v in T.vectorized(vec):
                            buf[v] = src1[(lo + c * threads + tx) * vec + v]
                    else:
                        for v in T.unroll(vec):
                            buf[v] = T.cast(NEG_INF, dtype)
                    for v in T.unroll(vec):
                        x[c * vec + v] = T.cast(buf[v], held)
                # threads 0 .. vec - 1: elements first + tx before lo; vec .. 2 vec - 1: from hi on
                edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
                e[0] = T.float32(NEG_INF)
                if on_edge:
                    e[0] = T.cast(src1[edge], F32)
            else:
                if vec > 1:
                    T.assume(N % vec == 0)
                for c in T.unroll(chunks):
                    if (c * threads + tx) * vec < N:
                        for v in T.vectorized(vec):
                            buf[v] = src[row, (c * threads + tx) * vec + v]
                        for v in T.unroll(vec):
                            x[c * vec + v] = T.cast(buf[v], held)
                    else:
                        for v in T.unroll(vec):
                            x[c * vec + v] = T.cast(NEG_INF, held)
            m[0] = e[0] if flat else T.float32(NEG_INF)
            for j in T.unroll(per_thread):
                m[0] = T.max(m[0], T.cast(x[j], F32))
            block_max(m, red, tx, threads)
            if keep_input or flat:
                # (padding is -inf: exp gives 0, or NaN where the row's max is -inf, as the row's own -infs)
                s[0] = T.float32(0)
                if flat:
                    if fam.keeps_exp:
                        e[0] = fast_exp(e[0] - m[0])
                        s[0] = e[0]
                    else:
                        s[0] = fast_exp(e[0] - m[0])
                for j in T.unroll(per_thread):
                    if exp_held:
                        x[j] = fast_exp(x[j] - m[0])
                        s[0] = s[0] + x[j]
                    else:
                        s[0] = s[0] + fast_exp(T.cast(x[j], F32) - m[0])
            else:
                exp_and_sum(fam, x, m, s, chunks, vec, threads, tx, N)
            block_sum(s, red, tx, threads)
            s[0] = fam.normalizer(s[0])
            if flat:
                if on_edge:
                    out1[edge] = T.cast(output(fam, e[0], m[0], s[0]), dtype)
            for c in T.unroll(chunks):
                if flat:
                    if lo + c * threads + tx < hi and (lo + c * threads + tx) * vec + vec <= M * N:
                        scaled_chunk(fam, buf, x, c, vec, m, s, exp_held, dtype)
                        for v in T.vectorized(vec):
                            out1[(lo + c * threads + tx) * vec + v] = buf[v]
                elif (c * threads + tx) * vec < N:
                    scaled_chunk(fam, buf, x, c, vec, m, s, exp_held, dtype)
                    for v in T.vectorized(vec):
                        out[row, (c * threads + tx) * vec + v] = buf[v]

    return _named(softmax_block_rows, fam, "block_rows")


@with_denormals_flushed
@with_bounds_trusted  # every access is bounded by its row's [lo, hi) or edges
def split_stats(dtype: str, vec: int, unroll: int = 2, flat: bool = False):
    threads = SPLIT_THREADS
    step = threads * unroll  # vectors a round
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
            src1 = T.reshape(src, (M * N,))
            if vec > 1 and not flat:
                T.assume(N % vec == 0)
            first = row * N
            lo = T.ceildiv(first, vec)  # the row's first whole vector, counted from the tensor's start
            hi = (first + N) // vec  # one past its last
            seg_steps = T.alloc_var("int32", init=T.ceildiv(T.ceildiv(hi - lo, S), step))  # a register: no division per load
            start = lo + seg * seg_steps * step
            end = T.min(hi, start + seg_steps * step)
            m[0] = T.float32(NEG_INF)
            s[0] = T.float32(0)
            if flat:  # the row's elements outside its whole vectors: segment 0's first threads
                edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
                if seg == 0 and on_edge:
                    m[0] = T.cast(src1[edge], F32)
                    s[0] = exp_term(m[0], m[0])
            for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
                for u in T.unroll(unroll):
                    if start + k * step + u * threads + tx < end:
                        for v in T.vectorized(vec):
                            buf[v] = src1[(start + k * step + u * threads + tx) * vec + v]
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
                    s[0] = s[0] + exp_term(x[j], mn[0])
                m[0] = mn[0]
            mn[0] = m[0]
            block_max(mn, red, tx, threads)
            rescale(s, m[0], mn[0])
            block_sum(s, red, tx, threads)
            if tx == 0:
                stats[0, row, seg] = mn[0]
                stats[1, row, seg] = s[0]

    return softmax_split_stats


@T.macro
def write_scaled(fam, out1, at, buf, u, res, m, k):
    """out1[at + v] = the outputs of the input vector buf[u, :], rounded
    once into res and stored as one vector."""
    for v in T.unroll(res.shape[0]):
        res[v] = T.cast(fam.from_input(T.cast(buf[u, v], F32), m, k), out1.dtype)
    for v in T.vectorized(res.shape[0]):
        out1[at + v] = res[v]


@with_bounds_trusted  # as split_stats
@with_stores_lowered
@with_denormals_flushed
def split_apply(fam: SoftmaxFamily, dtype: str, vec: int, unroll: int = 2, flat: bool = False):
    threads = SPLIT_THREADS
    step = threads * unroll  # vectors a round
    M, N, S = T.dynamic("M N S")

    @T.prim_func
    def softmax_split_apply(src: T.Tensor((M, N), dtype), stats: T.Tensor((2, M, S), F32),
                            out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, S, threads=threads) as (row, seg):
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            buf = T.alloc_local((unroll, vec), dtype)
            res = T.alloc_local((vec,), dtype)  # its own array: stores from buf in place were split into 4-byte ones
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            src1 = T.reshape(src, (M * N,))
            out1 = T.reshape(out, (M * N,))
            if vec > 1 and not flat:
                T.assume(N % vec == 0)
            # merge the row's S (max, sum) pairs
            m[0] = T.float32(NEG_INF)
            s[0] = T.float32(0)
            for j in T.serial(T.ceildiv(S, threads)):
                if j * threads + tx < S:
                    mn[0] = T.max(m[0], stats[0, row, j * threads + tx])
                    rescale(s, m[0], mn[0])
                    s[0] = s[0] + scaled(stats[1, row, j * threads + tx], stats[0, row, j * threads + tx], mn[0])
                    m[0] = mn[0]
            mn[0] = m[0]
            block_max(mn, red, tx, threads)
            rescale(s, m[0], mn[0])
            block_sum(s, red, tx, threads)
            s[0] = fam.normalizer(s[0])
            first = row * N
            lo = T.ceildiv(first, vec)  # as in split_stats: the row's whole vectors lo .. hi - 1
            hi = (first + N) // vec
            seg_steps = T.alloc_var("int32", init=T.ceildiv(T.ceildiv(hi - lo, S), step))  # a register: no division per load
            start = lo + seg * seg_steps * step
            end = T.min(hi, start + seg_steps * step)
            if flat:
                edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
                if seg == 0 and on_edge:
                    out1[edge] = T.cast(fam.from_input(T.cast(src1[edge], F32), mn[0], s[0]), dtype)
            # All of a full round's loads go out before the first store: stores
            # to out (which may be src) would otherwise keep nvcc from moving
            # the next load above them, leaving one load in flight per thread.
            for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
                if start + k * step + (unroll - 1) * threads + tx < end:
                    for u in T.unroll(unroll):
                        for v in T.vectorized(vec):
                            buf[u, v] = src1[(start + k * step + u * threads + tx) * vec + v]
                    for u in T.unroll(unroll):
                        write_scaled(fam, out1, (start + k * step + u * threads + tx) * vec, buf, u, res, mn[0], s[0])
                else:
                    for u in T.unroll(unroll):
                        if start + k * step + u * threads + tx < end:
                            for v in T.vectorized(vec):
                                buf[0, v] = src1[(start + k * step + u * threads + tx) * vec + v]
                            write_scaled(fam, out1, (start + k * step + u * threads + tx) * vec, buf, 0, res, mn[0],
                                         s[0])

    return _named(softmax_split_apply, fam, "split_apply")


@T.macro
def merge_pair(m, s, mn, i, m_other, s_other):
    """(m[i], s[i]) merged with the (max, sum) pair (m_other, s_other); mn[i] is scratch."""
    mn[i] = T.max(m[i], m_other)
    s[i] = scaled(s[i], m[i], mn[i]) + scaled(s_other, m_other, mn[i])
    m[i] = mn[i]


@T.macro
def merge_lanes(m, s, mn, i, red_m, red_s, col, lanes):
    """m[i], s[i] = the (max, sum) pairs red_m/red_s[0..lanes-1, col] merged in lane order."""
    m[i] = red_m[0, col]
    s[i] = red_s[0, col]
    for w in T.unroll(1, lanes):
        merge_pair(m, s, mn, i, red_m[w, col], red_s[w, col])


COLUMN_FOLD = 4  # column_stats: rounds between folds of a thread's sums into shared memory


@T.macro
def fold_column_stats(m, s, red_m, red_s, red_c, warp, lane, vec, tmp):
    """Merges each of the thread's (m[v], s[v]) into its shared slot (red_m,
    red_s), the sum compensated in red_c (compensated_add), and zeroes s[v]
    (m[v], the running max, stays: the slot's max is never above it, so the
    slot rescales by exactly 1 while the max holds)."""
    for v in T.unroll(vec):
        red_s[warp, lane * vec + v] = scaled(red_s[warp, lane * vec + v], red_m[warp, lane * vec + v], m[v])
        red_c[warp, lane * vec + v] = scaled(red_c[warp, lane * vec + v], red_m[warp, lane * vec + v], m[v])
        compensated_add(red_s, (warp, lane * vec + v), red_c, (warp, lane * vec + v), s[v], tmp)
        red_m[warp, lane * vec + v] = m[v]
        s[v] = T.float32(0)


@with_denormals_flushed
def column_stats(dtype: str, vec: int, unroll: int = 4):
    """A block owns a tile of 32 * vec columns: lane tx % 32 holds `vec` of
    them (16-byte loads when vec > 1) and the 8 warps take every 8th row of
    the segment, `unroll` rows of loads in flight, one rescale per column per
    round, folded every COLUMN_FOLD rounds into the thread's slot of shared
    memory (fold_column_stats: a thread's chain of adds stays short whatever
    the rows); the 8 warps' (max, sum) pairs are merged in shared memory in
    warp order."""
    threads = 256
    lanes = threads // 32
    cols = 32 * vec
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_column_stats(src: T.Tensor((B, R, C), dtype), stats: T.Tensor((2, B, S, C), F32)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            tx = T.get_thread_binding()
            lane = tx % 32
            warp = tx // 32
            b, tile, start, end, c0 = column_tile(bt, seg, R, C, S, cols, vec)
            buf = T.alloc_local((unroll, vec), dtype)
            m = T.alloc_local((vec,), F32)
            mn = T.alloc_local((vec,), F32)
            s = T.alloc_local((vec,), F32)
            tmp = T.alloc_local((2,), F32)
            red_m = T.alloc_shared((lanes, cols), F32)
            red_s = T.alloc_shared((lanes, cols), F32)
            red_c = T.alloc_shared((lanes, cols), F32)
            if vec > 1:
                T.assume(C % vec == 0)
            for v in T.unroll(vec):
                m[v] = T.float32(NEG_INF)
                s[v] = T.float32(0)
                red_m[warp, lane * vec + v] = T.float32(NEG_INF)
                red_s[warp, lane * vec + v] = T.float32(0)
                red_c[warp, lane * vec + v] = T.float32(0)
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), lanes * unroll)):
                    if start + (k * unroll + unroll - 1) * lanes < end:
                        load_column_round(src, buf, b, start, k, unroll, lanes, c0, vec)
                    else:
                        for u in T.unroll(unroll):
                            for v in T.unroll(vec):
                                buf[u, v] = T.if_then_else(start + (k * unroll + u) * lanes < end,
                                                           src[b, start + (k * unroll + u) * lanes, c0 + v],
                                                           T.cast(T.float32(NEG_INF), dtype))
                    for v in T.unroll(vec):
                        mn[v] = m[v]
                        for u in T.unroll(unroll):
                            mn[v] = T.max(mn[v], T.cast(buf[u, v], F32))
                        s[v] = scaled(s[v], m[v], mn[v])
                        for u in T.unroll(unroll):
                            s[v] = s[v] + exp_term(T.cast(buf[u, v], F32), mn[v])
                        m[v] = mn[v]
                    if k % COLUMN_FOLD == COLUMN_FOLD - 1:
                        fold_column_stats(m, s, red_m, red_s, red_c, warp, lane, vec, tmp)
            fold_column_stats(m, s, red_m, red_s, red_c, warp, lane, vec, tmp)
            for v in T.unroll(vec):
                red_s[warp, lane * vec + v] = red_s[warp, lane * vec + v] - red_c[warp, lane * vec + v]
            T.sync_threads()
            for i in T.serial(T.ceildiv(cols, threads)):
                if i * threads + tx < cols and tile * cols + i * threads + tx < C:
                    merge_lanes(m, s, mn, 0, red_m, red_s, i * threads + tx, lanes)
                    stats[0, b, seg, tile * cols + i * threads + tx] = m[0]
                    stats[1, b, seg, tile * cols + i * threads + tx] = s[0]

    return softmax_column_stats


@with_denormals_flushed
def column_combine():
    """Merges each column's S (max, sum) pairs in segment order into segment
    0's slot, a thread per column (coalesced along C), the sums compensated
    (compensated_add). Run between
    column_stats and column_apply(merged=True), it reads the S pairs once per
    column, where column_apply's own merge reads them once per segment: S^2
    per column, which made many segments slower than few."""
    threads = 256
    B, C, S = T.dynamic("B C S")

    @T.prim_func
    def softmax_column_combine(stats: T.Tensor((2, B, S, C), F32)):
        with T.Kernel(T.ceildiv(C, threads), B, threads=threads) as (bx, b):
            tx = T.get_thread_binding()
            m = T.alloc_local((1,), F32)
            mn = T.alloc_local((1,), F32)
            s = T.alloc_local((2,), F32)  # the sum, its compensation (compensated_add)
            tmp = T.alloc_local((2,), F32)
            c = bx * threads + tx
            if c < C:
                m[0] = stats[0, b, 0, c]
                s[0] = stats[1, b, 0, c]
                s[1] = T.float32(0)
                for j in T.serial(1, S):
                    mn[0] = T.max(m[0], stats[0, b, j, c])
                    s[0] = scaled(s[0], m[0], mn[0])
                    s[1] = scaled(s[1], m[0], mn[0])
                    compensated_add(s, (0,), s, (1,), scaled(stats[1, b, j, c], stats[0, b, j, c], mn[0]), tmp)
                    m[0] = mn[0]
                stats[0, b, 0, c] = m[0]
                stats[1, b, 0, c] = s[0] - s[1]

    return softmax_column_combine


@with_stores_lowered
@with_denormals_flushed
def column_apply(fam: SoftmaxFamily, dtype: str, vec: int, unroll: int = 4, merged: bool = False):
    """The column tiles of column_stats: the block first merges its columns'
    S (max, sum) pairs (warp w takes segments w, w + 8, ...; then the 8 warps'
    results in shared memory, in warp order), then writes its segment.
    merged: column_combine has left the merged pairs in segment 0; every
    thread reads its columns' pair there."""
    threads = 256
    lanes = threads // 32
    cols = 32 * vec
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_column_apply(src: T.Tensor((B, R, C), dtype), stats: T.Tensor((2, B, S, C), F32),
                             out: T.Tensor((B, R, C), dtype)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            lane = tx % 32
            warp = tx // 32
            b, tile, start, end, c0 = column_tile(bt, seg, R, C, S, cols, vec)
            buf = T.alloc_local((unroll, vec), dtype)
            res = T.alloc_local((vec,), dtype)  # its own array: stores from buf in place were split into 4-byte ones
            m = T.alloc_local((vec,), F32)
            mn = T.alloc_local((vec,), F32)
            s = T.alloc_local((vec,), F32)
            red_m = T.alloc_shared((lanes, cols), F32)
            red_s = T.alloc_shared((lanes, cols), F32)
            if vec > 1:
                T.assume(C % vec == 0)
            for v in T.unroll(vec):
                m[v] = T.float32(NEG_INF)
                s[v] = T.float32(0)
            if merged:
                if c0 < C:
                    for v in T.unroll(vec):
                        m[v] = stats[0, b, 0, c0 + v]
                        s[v] = fam.normalizer(stats[1, b, 0, c0 + v])  # from here on, the normalizer
            else:
                if c0 < C:
                    for j in T.serial(T.ceildiv(S, lanes)):
                        if j * lanes + warp < S:
                            for v in T.unroll(vec):
                                merge_pair(m, s, mn, v, stats[0, b, j * lanes + warp, c0 + v],
                                           stats[1, b, j * lanes + warp, c0 + v])
                for v in T.unroll(vec):
                    red_m[warp, lane * vec + v] = m[v]
                    red_s[warp, lane * vec + v] = s[v]
                T.sync_threads()
                if c0 < C:
                    for v in T.unroll(vec):
                        merge_lanes(m, s, mn, v, red_m, red_s, lane * vec + v, lanes)
                        s[v] = fam.normalizer(s[v])  # from here on, the normalizer
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), lanes * unroll)):
                    if start + (k * unroll + unroll - 1) * lanes < end:
                        load_column_round(src, buf, b, start, k, unroll, lanes, c0, vec)
                        for u in T.unroll(unroll):
                            for v in T.unroll(vec):
                                res[v] = T.cast(fam.from_input(T.cast(buf[u, v], F32), m[v], s[v]), dtype)
                            for v in T.vectorized(vec):
                                out[b, start + (k * unroll + u) * lanes, c0 + v] = res[v]
                    else:
                        for u in T.unroll(unroll):
                            if start + (k * unroll + u) * lanes < end:
                                for v in T.unroll(vec):
                                    out[b, start + (k * unroll + u) * lanes, c0 + v] = T.cast(fam.from_input(
                                        T.cast(src[b, start + (k * unroll + u) * lanes, c0 + v], F32), m[v], s[v]),
                                        dtype)

    return _named(softmax_column_apply, fam, "column_apply")


# Column tiles a cluster of blocks reads once: threads across a tile (16
# bytes each) and rows a block holds in shared memory (256 / across rows at
# a time): 1024 rows of 64 bytes, 64 KB, so clusters of up to 8 blocks (the
# portable size) take columns of up to 8192.
CLUSTER_ACROSS, CLUSTER_ROWS = 4, 1024
CLUSTER_SIZES = (1, 2, 4, 8)


@T.macro
def merge_block_pairs(m, s, mn, other, part_m, part_s, mine, tx, col, across, warps, cols, vec):
    """column_cluster: the (max, sum) pairs of the block's threads merged per
    column into mine[:, column] (lanes by shuffles, then warps in shared
    memory, in order)."""
    # lanes holding the same columns: lane ^ across, ^ 2 across, ... (merge is symmetric: all agree)
    for o in T.unroll((32 // across).bit_length() - 1):
        for v in T.unroll(vec):
            other[0] = T.shfl_xor(m[v], across << o)
            other[1] = T.shfl_xor(s[v], across << o)
            merge_pair(m, s, mn, v, other[0], other[1])
    if tx % 32 < across:
        for v in T.unroll(vec):
            part_m[tx // 32, col + v] = m[v]
            part_s[tx // 32, col + v] = s[v]
    T.sync_threads()
    if tx < cols:
        merge_lanes(m, s, mn, 0, part_m, part_s, tx, warps)
        mine[0, tx] = m[0]
        mine[1, tx] = s[0]


@T.macro
def merge_cluster_pairs(fam, every, other, mn, m, s, tx, col, cols, cluster, vec):
    """column_cluster, after the exchange: lane l of every warp merges column
    l % cols of the cluster's pairs in rank order and hands each thread its
    vec columns' (max, normalizer) in m, s by shuffles (no shared buffer and
    barrier after the exchange; one merge per lane)."""
    other[0] = every[0, 0, tx % 32 % cols]
    other[1] = every[0, 1, tx % 32 % cols]
    for q in T.unroll(1, cluster):
        mn[0] = T.max(other[0], every[q, 0, tx % 32 % cols])
        other[1] = scaled(other[1], other[0], mn[0]) + scaled(every[q, 1, tx % 32 % cols],
                                                              every[q, 0, tx % 32 % cols], mn[0])
        other[0] = mn[0]
    other[1] = fam.normalizer(other[1])
    for v in T.unroll(vec):
        m[v] = T.shfl_sync(other[0], col + v)
        s[v] = T.shfl_sync(other[1], col + v)


@with_stores_lowered
@with_denormals_flushed
@with_bounds_trusted
def column_cluster(fam: SoftmaxFamily, dtype: str, cluster: int, cap: int = CLUSTER_ROWS,
                   across: int = CLUSTER_ACROSS):
    """The family down columns of up to cluster * cap rows, each column tile
    read once, as the nvidia backend's columns_cluster: a cluster of
    `cluster` blocks per tile of across * vec columns (C % vec == 0, 16-byte
    aligned bases). Block `rank` copies rows rank * chunk .. (chunk =
    ceil(R / cluster) <= cap) into shared memory with cp.async (every copy in
    flight, no registers held; a thread reads back only its own rows). The
    block's (max, sum) per column: lanes by shuffles, warps in shared memory,
    in order; sent to every block of the cluster; after the cluster barrier
    each warp merges a column's pairs in rank order once per lane and hands
    (max, normalizer) to its threads by shuffles.

    Every per-thread quantity the row loops test is a register (alloc_var),
    the cluster rank included: an inlined rank is an asm volatile read at
    each use, which nvcc may not merge."""
    threads = 256
    vec = vector_width(dtype)
    down = threads // across  # rows a block takes at a time
    per_thread = cap // down
    cols = across * vec
    warps = threads // 32
    B, R, C = T.dynamic("B R C")

    @T.prim_func
    def softmax_column_cluster(src: T.Tensor((B, R, C), dtype), out: T.Tensor((B, R, C), dtype)):
        with T.Kernel(T.ceildiv(C, cols) * B * cluster, threads=threads, cluster_dims=cluster) as bx:
            T.annotate_restrict_buffers(src, out)
            tx = T.get_thread_binding()
            rank = T.alloc_var("int32", init=T.block_rank_in_cluster())
            bt = T.alloc_var("int32", init=bx // cluster)
            b = T.alloc_var("int32", init=bt // T.ceildiv(C, cols))
            tile = T.alloc_var("int32", init=bt % T.ceildiv(C, cols))
            chunk = T.alloc_var("int32", init=T.ceildiv(R, cluster))
            first = T.alloc_var("int32", init=rank * chunk + tx // across)  # rows first + k * down, k < own
            c0 = tile * cols + tx % across * vec  # (an expression: the vectorizer sees c0 % vec == 0)
            own = T.alloc_var("int32", init=T.if_then_else(
                c0 < C, T.ceildiv(T.max(T.min(chunk, R - rank * chunk) - tx // across, 0), down), 0))
            cache = T.alloc_shared((cap, cols), dtype)
            x = T.alloc_local((vec,), dtype)
            res = T.alloc_local((vec,), dtype)
            m = T.alloc_local((vec,), F32)
            mn = T.alloc_local((vec,), F32)
            s = T.alloc_local((vec,), F32)
            other = T.alloc_local((2,), F32)
            part_m = T.alloc_shared((warps, cols), F32)
            part_s = T.alloc_shared((warps, cols), F32)
            mine = T.alloc_shared((2, cols), F32)
            every = T.alloc_shared((cluster, 2, cols), F32)
            T.assume(C % vec == 0)
            col = tx % across * vec
            for k in T.unroll(per_thread):
                if k < own:
                    T.ptx_cp_async(T.access_ptr(cache[tx // across + k * down, col], "w", vec),
                                   T.access_ptr(src[b, first + k * down, c0], "r", vec), vec)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for v in T.unroll(vec):
                m[v] = T.float32(NEG_INF)
                s[v] = T.float32(0)
            for k in T.unroll(per_thread):
                if k < own:
                    for v in T.vectorized(vec):
                        x[v] = cache[tx // across + k * down, col + v]
                    for v in T.unroll(vec):
                        m[v] = T.max(m[v], T.cast(x[v], F32))
            for k in T.unroll(per_thread):
                if k < own:
                    for v in T.vectorized(vec):
                        x[v] = cache[tx // across + k * down, col + v]
                    for v in T.unroll(vec):
                        s[v] = s[v] + fast_exp(T.cast(x[v], F32) - m[v])
            for v in T.unroll(vec):  # (exp(-inf - m) is 0 for m > -inf: no test per element; see exp_term)
                if m[v] == T.float32(NEG_INF):  # rare: the thread's rows all -inf or NaN; the sum again
                    s[v] = T.float32(0)
                    for k in T.serial(own):
                        s[v] = s[v] + term_under_neg_inf_max(T.cast(cache[tx // across + k * down, col + v], F32))
            merge_block_pairs(m, s, mn, other, part_m, part_s, mine, tx, col, across, warps, cols, vec)
            # A cluster barrier before the sends: every block has started
            T.cluster_sync()
            for q in T.serial(cluster):
                T.copy_cluster(mine, every[rank, :, :], dst_block=q)
            T.cluster_sync()
            merge_cluster_pairs(fam, every, other, mn, m, s, tx, col, cols, cluster, vec)
            for k in T.unroll(per_thread):
                if k < own:
                    for v in T.vectorized(vec):
                        x[v] = cache[tx // across + k * down, col + v]
                    for v in T.unroll(vec):
                        res[v] = T.cast(fam.from_input(T.cast(x[v], F32), m[v], s[v]), dtype)
                    for v in T.vectorized(vec):
                        out[b, first + k * down, c0 + v] = res[v]

    return _named(softmax_column_cluster, fam, "column_cluster")


def family_variants(fam: SoftmaxFamily):
    """Every kernel of the op, as (name, factory, args): CI compiles them all
    (the statistics kernels, shared by the family, once per op here)."""
    out = []
    for d in DTYPES:
        v = vector_width(d)
        for per_lane in WARP_ROW_CLASSES:
            out.append((f"warp_rows_{d}_{per_lane}", warp_rows, (fam, d, per_lane)))
        for lanes, slots in GROUP_ROW_CLASSES:
            out.append((f"group_rows_{d}_{lanes}x{slots}", group_rows, (fam, d, lanes, slots)))
        for threads, per_thread in BLOCK_ROW_CLASSES[d]:
            out.append((f"block_rows_{d}_{threads}x{per_thread}_v", block_rows, (fam, d, threads, per_thread, v)))
            out.append((f"block_rows_{d}_{threads}x{per_thread}_1", block_rows, (fam, d, threads, per_thread, 1)))
            out.append((f"block_rows_{d}_{threads}x{per_thread}_flat", block_rows,
                        (fam, d, threads, per_thread, v, True)))
        for vec in (v, 1):
            out.append((f"split_stats_{d}_{vec}", split_stats, (d, vec)))
            out.append((f"split_apply_{d}_{vec}", split_apply, (fam, d, vec)))
        out.append((f"split_stats_{d}_flat", split_stats, (d, v, 2, True)))
        out.append((f"split_apply_{d}_flat", split_apply, (fam, d, v, 2, True)))
        for vec in (v, 1):
            out.append((f"column_stats_{d}_{vec}", column_stats, (d, vec)))
            out.append((f"column_apply_{d}_{vec}", column_apply, (fam, d, vec)))
            out.append((f"column_apply_merged_{d}_{vec}", column_apply, (fam, d, vec, 4, True)))
        for cluster in CLUSTER_SIZES:
            out.append((f"column_cluster_{d}_{cluster}", column_cluster, (fam, d, cluster)))
    out.append(("column_combine", column_combine, ()))
    return out


# -- planning ---------------------------------------------------------------------------------

def _plan_rows(fam: SoftmaxFamily, p, dtype, M: int, N: int):
    """Body (src [M, N] dense view, out [M, N] dense view, ws)."""
    dt = p.dtype_name(dtype)
    vec = vector_width(dt)
    if N <= 32 * WARP_ROW_CLASSES[-1]:
        per_lane = next(c for c in WARP_ROW_CLASSES if 32 * c >= N)
        group = next((g for g in GROUP_ROW_CLASSES if g[0] * g[1] * vec >= N), None)
        if N % vec == 0 and group is not None:
            pick = p.launcher(group_rows, (fam, dt, *group), (fam, dt, per_lane), scalar_factory=warp_rows)
            return (lambda src, out, ws: pick(p.aligned(src, out))(src, out)), f"group_rows{group[0] * group[1] * vec}"
        kernel = p.kernel(warp_rows, (fam, dt, per_lane))
        return (lambda src, out, ws: kernel(src, out)), f"warp_rows{32 * per_lane}"
    for threads, per_thread in BLOCK_ROW_CLASSES[dt]:
        if threads * per_thread >= N:
            scalar = (fam, dt, threads, per_thread, 1)
            vec_args, name = (fam, dt, threads, per_thread, vec), f"block_rows{threads * per_thread}"
            if N % vec:  # rows not whole vectors long (and >= 2 * vec: N > 32 * 32 here): flat
                vec_args, name = (fam, dt, threads, per_thread, vec, True), name + "_flat"
            pick = p.launcher(block_rows, vec_args, scalar)
            return (lambda src, out, ws: pick(p.aligned(src, out))(src, out)), name
    S = max(1, -(-N // 32768))
    if M * S < TARGET_BLOCKS // 2:
        S = min(-(-TARGET_BLOCKS // M), -(-N // 8192), MAX_GRID_Y)
    flat = (2, True) if N % vec else ()  # rows not whole vectors long: vectors counted from the tensor's start
    stats_k = p.launcher(split_stats, (dt, vec, *flat), (dt, 1))
    apply_k = p.launcher(split_apply, (fam, dt, vec, *flat), (fam, dt, 1))
    name = f"stats{len(p.ws.regions)}"
    p.ws.add(name, 2 * M * S, torch.float32)
    regions = p.ws

    def run(src, out, ws):
        stats = regions.view(ws, name, (2, M, S))
        aligned = p.aligned(src, out)
        stats_k(aligned)(src, stats)
        apply_k(aligned)(src, stats, out)

    return run, f"split{S}"


def _plan_columns(fam: SoftmaxFamily, p, dtype, B: int, R: int, C: int):
    """Body (src [B, R, C] dense view, out [B, R, C] dense view, ws)."""
    dt = p.dtype_name(dtype)
    vec = vector_width(dt)
    # With a cluster planned, the two-pass kernels below serve only calls
    # whose bases are not 16-byte aligned: their scalar twins alone.
    cluster = column_cluster_size(vec, B, R, C)
    use_vec = C % vec == 0 and not cluster
    tiles = B * -(-C // (32 * (vec if use_vec else 1)))  # a block per 32 lanes x vec columns
    # Segments for 8 blocks per SM, as the column sums; column_combine merges
    # each column's S pairs once, so column_apply reads one instead of
    # merging all S in every segment's block (S^2 reads, which held the
    # two-launch plan to 2 blocks per SM).
    S = segments(tiles, R, 64, 2 * TARGET_BLOCKS)
    merged = S > 1
    stats_args, apply_args = (dt, vec if use_vec else 1), (fam, dt, vec if use_vec else 1)
    stats_k = p.launcher(column_stats, stats_args, (dt, 1))
    after_combine = (4, True) if merged else ()
    apply_k = p.launcher(column_apply, apply_args + after_combine, (fam, dt, 1) + after_combine)
    combine = p.kernel(column_combine, ()) if merged else None
    name = f"stats{len(p.ws.regions)}"
    p.ws.add(name, 2 * B * S * C, torch.float32)
    regions = p.ws

    def run(src, out, ws):
        stats = regions.view(ws, name, (2, B, S, C))
        aligned = p.aligned(src, out)
        stats_k(aligned)(src, stats)
        if merged:
            combine(stats)
        apply_k(aligned)(src, stats, out)

    if not cluster:
        return run, f"columns{S}"
    # Each column tile read once by a cluster of blocks (16-byte aligned
    # bases; else the two-pass kernels above, their workspace kept for it).
    cluster_k = p.kernel(column_cluster, (fam, dt, cluster))

    def run_cluster(src, out, ws):
        if p.aligned(src, out):
            cluster_k(src, out)
        else:
            run(src, out, ws)

    return run_cluster, f"column_cluster{cluster}"


def column_cluster_size(vec: int, B: int, R: int, C: int) -> int:
    """Blocks per column tile for the column_cluster kernel (0: it does not
    apply): whole vectors across, columns of at most the largest cluster's
    rows, and the smallest cluster that still puts a block on every SM (as
    the nvidia backend's columns_cluster)."""
    if C % vec or tuned_off("SOFTMAX_COLUMN_CLUSTER"):
        return 0
    tiles = B * -(-C // (CLUSTER_ACROSS * vec))
    return next((c for c in CLUSTER_SIZES if R <= c * CLUSTER_ROWS and tiles * c >= TARGET_BLOCKS // 4), 0)


def plan_along_dim(fam: SoftmaxFamily, p, out, src, dim: int):
    if out.numel() == 0:
        return p.done("empty")
    nd = src.dim()
    if nd == 0:
        body, variant = _plan_rows(fam, p, src.dtype, 1, 1)
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided((1, 1), (1, 1)),
                                                       o.as_strided((1, 1), (1, 1)), ws))
    N = src.shape[dim]
    sd = src.stride(dim) if N > 1 else 1
    od = out.stride(dim) if N > 1 else 1
    others = [d for d in range(nd) if d != dim]
    o_shape, (o_src, o_out) = p.coalesce([src.shape[d] for d in others],
                                         [[src.stride(d) for d in others], [out.stride(d) for d in others]])
    M = math.prod(o_shape)
    form = p.dense_along_dim(o_shape, N, [(o_src, sd), (o_out, od)])

    if form and form[0] == "rows":
        body, variant = _plan_rows(fam, p, src.dtype, M, N)
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided((M, N), (N, 1)),
                                                       o.as_strided((M, N), (N, 1)), ws))

    if form and form[0] == "columns":
        B, _, C = form[1]
        body, variant = _plan_columns(fam, p, src.dtype, B, N, C)
        dense = (B, N, C), (N * C, C, 1)
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided(*dense), o.as_strided(*dense), ws))

    # staged: rows [others (src's order), dim] gathered into the workspace,
    # computed in place there, scattered back into out
    gshape = list(o_shape) + [N]
    p.ws.add("rows", M * N, src.dtype)
    dense = p.contiguous_strides(gshape)
    gather = p.strided_copy(src.dtype, src.dtype, gshape, list(o_src) + [sd], dense)
    scatter = p.strided_copy(out.dtype, out.dtype, gshape, dense, list(o_out) + [od])
    body, variant = _plan_rows(fam, p, src.dtype, M, N)
    regions = p.ws

    def run(o, ins, ws):
        staged = regions.view(ws, "rows", (M, N))
        gather(ins[0], staged)
        body(staged, staged, ws)
        scatter(staged, o)

    return p.done(variant + "+staged", run)
