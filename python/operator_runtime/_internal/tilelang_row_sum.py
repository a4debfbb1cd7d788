"""The two-input ops of the TileLang softmax family (softmax_backward,
log_softmax_backward): a row's sum of a term of both inputs, then each
output from both inputs and that sum, in float32 and rounded once. The
one-input kernels (tilelang_softmax.py) hold one input's row in registers or
carry its running (max, sum of exp) pair; these need neither.

An op is an instance, RowSumFamily, holding term(a, b) and value(a, b, s).
Canonical forms (anything else is staged through the workspace, as
tilelang_softmax.plan_along_dim stages it):

  rows      a/b/out [M, N] dense, the op over N
  columns   a/b/out [B, R, C] dense, the op over R

Kernels (sizes T.dynamic; vec > 1: 16-byte loads and stores where every
base is aligned, else the scalar twin with vec = 1):
  row_sum_warp_rows(fam, dtype)           N <= ROW_SUM_WARP_MAX: a warp per
                                          row, each lane summing every 32nd
                                          element, then writing it
  row_sum_held_rows(fam, dtype, threads, vec)
                                          rows of up to threads * HELD
                                          vectors, a block per row: each
                                          thread loads its up to HELD vectors
                                          of each input once and keeps them
                                          in registers from the sum to the
                                          write (one read of the row)
  row_sum_block_rows(fam, dtype, threads, vec)
                                          longer rows, a block per row,
                                          UNROLL vectors of each input in
                                          flight per thread, read twice
  row_sum_partials(fam, dtype, vec)       few long rows: S segments per row, a
     + row_sum_apply(fam, dtype, vec)     block each; the first launch writes
                                          each segment's sum to the workspace,
                                          the second adds a row's S sums (every
                                          block of the row in the same order:
                                          bitwise the same total) and writes
                                          its segment
  row_sum_column_sums(fam, dtype, vec)    columns: a block per tile of 32 * vec
     + row_sum_column_apply(fam, dtype, vec)  columns (lane tx % 32 holds vec of
                                          them) by S segments of the rows (warp
                                          tx // 32 takes every 8th row); the
                                          first launch writes each segment's
                                          column sums to the workspace, the
                                          second adds a column's S sums (the
                                          same order in every block) and writes
                                          its segment
The block and segment kernels count a row's whole vectors from the
tensor's start (a one-dim view), so rows of any length take 16-byte loads;
the up to 2 (vec - 1) elements of a row outside them are one each of
segment 0's first threads (row_edge). A thread's terms are folded every
FOLD rounds into a compensated total (compensated_add), so a row's sum does
not drift with its length. A row is
read twice (the second time mostly from L2). out may be either input
itself: every element is read before its own write.
"""

# No `from __future__ import annotations`: TileLang evaluates the prim_funcs'
# annotations, which name the factories' local variables (dtypes, sizes).

import math

import tilelang.language as T
import torch

from .tilelang_device import (DTYPES, F32, TARGET_BLOCKS, block_sum, column_tile, compensated_add,
                              load_column_round, row_edge, segments, vector_width, warp_sum, with_bounds_trusted,
                              with_denormals_flushed)

ROW_SUM_WARP_MAX = 1024
ROW_SUM_BLOCK_THREADS = (256, 1024)
HELD = 4                          # row_sum_held_rows: vectors of each input a thread holds
HELD_THREADS = (256, 512, 1024)
SEGMENT_THREADS = 256
UNROLL = 2          # vectors of each input in flight per thread
FOLD = 16           # rounds a thread adds before folding into its compensated total
MIN_SEGMENT = 8192  # elements: shorter segments spend more on the second launch than they gain


class RowSumFamily:
    """A two-input op of the family, by its epilogue:

    term(a, b) -> t        float32, summed over the row into s
    value(a, b, s) -> out  an output from its float32 inputs and the row's s
    `name` is the op, which also names the kernels (<name>_row_sum_warp_rows, ...)."""

    def __init__(self, name: str, term, value):
        self.name = name
        self.term = term
        self.value = value

    def __repr__(self) -> str:
        return f"RowSumFamily({self.name})"

    def plan(self, p, out, inputs, params):
        return plan_row_sum(self, p, out, inputs[0], inputs[1], params[0])

    def cuts(self, out, inputs, params):
        """Pieces may cut any dim but the op's own (a row must stay whole)."""
        return [(d, d) for d in range(out.dim()) if d != params[0]]

    def variants(self):
        items = []
        for d in DTYPES:
            items.append((f"row_sum_warp_rows_{d}", row_sum_warp_rows, (self, d)))
            items += [(f"row_sum_held_rows_{d}_{t}", row_sum_held_rows, (self, d, t, vector_width(d)))
                      for t in HELD_THREADS]
            for vec in sorted({vector_width(d), 1}):
                items += [(f"row_sum_block_rows_{d}_{t}_v{vec}", row_sum_block_rows, (self, d, t, vec))
                          for t in ROW_SUM_BLOCK_THREADS]
                items += [(f"row_sum_{kind.__name__[8:]}_{d}_v{vec}", kind, (self, d, vec))
                          for kind in (row_sum_partials, row_sum_apply, row_sum_column_sums, row_sum_column_apply)]
        return items


@with_denormals_flushed
def row_sum_warp_rows(fam: RowSumFamily, dtype: str):
    threads = 256
    warps = threads // 32
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_row_sum_warp_rows(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype),
                                  out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, warps), threads=threads) as bx:
            tx = T.get_thread_binding()
            lane = tx % 32
            row = bx * warps + tx // 32  # the same for a whole warp: its shuffles stay converged
            s = T.alloc_local((1,), F32)
            s[0] = T.float32(0)
            if row < M:
                for j in T.serial(T.ceildiv(N, 32)):
                    if j * 32 + lane < N:
                        s[0] = s[0] + fam.term(T.cast(a[row, j * 32 + lane], F32), T.cast(b[row, j * 32 + lane], F32))
            warp_sum(s)
            if row < M:
                for j in T.serial(T.ceildiv(N, 32)):
                    if j * 32 + lane < N:
                        out[row, j * 32 + lane] = T.cast(
                            fam.value(T.cast(a[row, j * 32 + lane], F32), T.cast(b[row, j * 32 + lane], F32), s[0]),
                            dtype)

    return softmax_row_sum_warp_rows.with_attr("global_symbol", f"{fam.name}_row_sum_warp_rows")


@T.macro
def load_round(a1, b1, buf_a, buf_b, first, end, threads, vec):
    """A round of UNROLL vectors of each input (one-dim views) from vector
    `first` on (this thread's: first + u * threads + tx), those below `end`."""
    tx = T.get_thread_binding()
    for u in T.unroll(UNROLL):
        if first + u * threads + tx < end:
            for v in T.vectorized(vec):
                buf_a[u * vec + v] = a1[(first + u * threads + tx) * vec + v]
            for v in T.vectorized(vec):
                buf_b[u * vec + v] = b1[(first + u * threads + tx) * vec + v]


@T.macro
def segment_sum(fam, dtype, a1, b1, N, row, seg, S, threads, vec, acc, red):
    """acc[0] of every thread = the block's sum of term(a, b) over segment
    seg of S of the row (S = 1: the whole row; a1, b1 the inputs' one-dim
    views). A segment is whole rounds of the row's whole vectors lo .. hi - 1
    (counted from the tensor's start); segment 0 adds the elements outside
    them. The round count is held in a register (no division per load; a
    Python helper cannot hold it: T.alloc_var yields a variable only inside
    a macro or kernel)."""
    step = threads * UNROLL  # vectors a round
    first = row * N
    lo = T.ceildiv(first, vec)
    hi = (first + N) // vec
    seg_steps = T.alloc_var("int32", init=T.ceildiv(T.ceildiv(hi - lo, S), step))
    start = lo + seg * seg_steps * step
    end = T.min(hi, start + seg_steps * step)
    tx = T.get_thread_binding()
    buf_a = T.alloc_local((UNROLL * vec,), dtype)
    buf_b = T.alloc_local((UNROLL * vec,), dtype)
    part = T.alloc_local((vec,), F32)
    total = T.alloc_local((2,), F32)  # the folded sum, its compensation
    tmp = T.alloc_local((2,), F32)
    for v in T.unroll(vec):
        part[v] = T.float32(0)
    total[0] = T.float32(0)
    total[1] = T.float32(0)
    edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
    if seg == 0 and on_edge:
        part[0] = fam.term(T.cast(a1[edge], F32), T.cast(b1[edge], F32))
    for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
        load_round(a1, b1, buf_a, buf_b, start + k * step, end, threads, vec)  # all in flight before any add
        for u in T.unroll(UNROLL):
            if start + k * step + u * threads + tx < end:
                for v in T.unroll(vec):
                    part[v] = part[v] + fam.term(T.cast(buf_a[u * vec + v], F32), T.cast(buf_b[u * vec + v], F32))
        if k % FOLD == FOLD - 1:
            acc[0] = T.float32(0)
            for v in T.unroll(vec):
                acc[0] = acc[0] + part[v]
                part[v] = T.float32(0)
            compensated_add(total, (0,), total, (1,), acc[0], tmp)
    acc[0] = T.float32(0)
    for v in T.unroll(vec):
        acc[0] = acc[0] + part[v]
    compensated_add(total, (0,), total, (1,), acc[0], tmp)
    acc[0] = total[0] - total[1]
    block_sum(acc, red, tx, threads)


@T.macro
def segment_write(fam, dtype, a1, b1, out1, N, row, seg, S, threads, vec, s):
    """out = value(a, b, s) over segment seg of S of the row (as
    segment_sum cuts it; one-dim views), a round's loads all issued before
    its stores (out may be a or b)."""
    step = threads * UNROLL
    first = row * N
    lo = T.ceildiv(first, vec)
    hi = (first + N) // vec
    seg_steps = T.alloc_var("int32", init=T.ceildiv(T.ceildiv(hi - lo, S), step))
    start = lo + seg * seg_steps * step
    end = T.min(hi, start + seg_steps * step)
    tx = T.get_thread_binding()
    buf_a = T.alloc_local((UNROLL * vec,), dtype)
    buf_b = T.alloc_local((UNROLL * vec,), dtype)
    res = T.alloc_local((vec,), dtype)
    edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
    if seg == 0 and on_edge:
        out1[edge] = T.cast(fam.value(T.cast(a1[edge], F32), T.cast(b1[edge], F32), s), dtype)
    for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
        load_round(a1, b1, buf_a, buf_b, start + k * step, end, threads, vec)
        for u in T.unroll(UNROLL):
            if start + k * step + u * threads + tx < end:
                for v in T.unroll(vec):
                    res[v] = T.cast(fam.value(T.cast(buf_a[u * vec + v], F32), T.cast(buf_b[u * vec + v], F32), s),
                                    dtype)
                for v in T.vectorized(vec):
                    out1[(start + k * step + u * threads + tx) * vec + v] = res[v]


@with_bounds_trusted  # every access under its own bounds test
@with_denormals_flushed
def row_sum_block_rows(fam: RowSumFamily, dtype: str, threads: int, vec: int):
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_row_sum_block_rows(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype),
                                   out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as row:
            a1 = T.reshape(a, (M * N,))
            b1 = T.reshape(b, (M * N,))
            out1 = T.reshape(out, (M * N,))
            acc = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            segment_sum(fam, dtype, a1, b1, N, row, 0, 1, threads, vec, acc, red)
            segment_write(fam, dtype, a1, b1, out1, N, row, 0, 1, threads, vec, acc[0])

    return softmax_row_sum_block_rows.with_attr("global_symbol", f"{fam.name}_row_sum_block_rows{threads}_v{vec}")


@with_bounds_trusted  # every access under its own bounds test
@with_denormals_flushed
def row_sum_held_rows(fam: RowSumFamily, dtype: str, threads: int, vec: int):
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_row_sum_held_rows(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype),
                                  out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as row:
            a1 = T.reshape(a, (M * N,))
            b1 = T.reshape(b, (M * N,))
            out1 = T.reshape(out, (M * N,))
            tx = T.get_thread_binding()
            buf_a = T.alloc_local((HELD * vec,), dtype)
            buf_b = T.alloc_local((HELD * vec,), dtype)
            res = T.alloc_local((vec,), dtype)
            ends = T.alloc_local((2,), F32)  # this thread's element outside the row's vectors, of a and b
            acc = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            first = row * N
            lo = T.ceildiv(first, vec)  # the row's whole vectors lo .. hi - 1, counted from the tensor's start
            hi = (first + N) // vec
            edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
            acc[0] = T.float32(0)
            if on_edge:
                ends[0] = T.cast(a1[edge], F32)
                ends[1] = T.cast(b1[edge], F32)
            for j in T.unroll(HELD):
                if lo + j * threads + tx < hi:
                    for v in T.vectorized(vec):
                        buf_a[j * vec + v] = a1[(lo + j * threads + tx) * vec + v]
                    for v in T.vectorized(vec):
                        buf_b[j * vec + v] = b1[(lo + j * threads + tx) * vec + v]
            if on_edge:
                acc[0] = fam.term(ends[0], ends[1])
            for j in T.unroll(HELD):
                if lo + j * threads + tx < hi:
                    for v in T.unroll(vec):
                        acc[0] = acc[0] + fam.term(T.cast(buf_a[j * vec + v], F32), T.cast(buf_b[j * vec + v], F32))
            block_sum(acc, red, tx, threads)
            if on_edge:
                out1[edge] = T.cast(fam.value(ends[0], ends[1], acc[0]), dtype)
            for j in T.unroll(HELD):
                if lo + j * threads + tx < hi:
                    for v in T.unroll(vec):
                        res[v] = T.cast(fam.value(T.cast(buf_a[j * vec + v], F32), T.cast(buf_b[j * vec + v], F32),
                                                  acc[0]), dtype)
                    for v in T.vectorized(vec):
                        out1[(lo + j * threads + tx) * vec + v] = res[v]

    return softmax_row_sum_held_rows.with_attr("global_symbol", f"{fam.name}_row_sum_held_rows{threads}")


@with_bounds_trusted  # every access under its own bounds test
@with_denormals_flushed
def row_sum_partials(fam: RowSumFamily, dtype: str, vec: int):
    M, N, S = T.dynamic("M N S")

    @T.prim_func
    def softmax_row_sum_partials(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype),
                                 sums: T.Tensor((M, S), F32)):
        with T.Kernel(M, S, threads=SEGMENT_THREADS) as (row, seg):
            a1 = T.reshape(a, (M * N,))
            b1 = T.reshape(b, (M * N,))
            acc = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            segment_sum(fam, dtype, a1, b1, N, row, seg, S, SEGMENT_THREADS, vec, acc, red)
            if T.get_thread_binding() == 0:
                sums[row, seg] = acc[0]

    return softmax_row_sum_partials.with_attr("global_symbol", f"{fam.name}_row_sum_partials_v{vec}")


@with_bounds_trusted  # every access under its own bounds test
@with_denormals_flushed
def row_sum_apply(fam: RowSumFamily, dtype: str, vec: int):
    M, N, S = T.dynamic("M N S")

    @T.prim_func
    def softmax_row_sum_apply(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype), sums: T.Tensor((M, S), F32),
                              out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, S, threads=SEGMENT_THREADS) as (row, seg):
            a1 = T.reshape(a, (M * N,))
            b1 = T.reshape(b, (M * N,))
            out1 = T.reshape(out, (M * N,))
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), F32)
            total = T.alloc_local((2,), F32)
            tmp = T.alloc_local((2,), F32)
            red = T.alloc_shared((32,), F32)
            total[0] = T.float32(0)
            total[1] = T.float32(0)
            for j in T.serial(T.ceildiv(S, SEGMENT_THREADS)):
                if j * SEGMENT_THREADS + tx < S:
                    compensated_add(total, (0,), total, (1,), sums[row, j * SEGMENT_THREADS + tx], tmp)
            acc[0] = total[0] - total[1]
            block_sum(acc, red, tx, SEGMENT_THREADS)
            segment_write(fam, dtype, a1, b1, out1, N, row, seg, S, SEGMENT_THREADS, vec, acc[0])

    return softmax_row_sum_apply.with_attr("global_symbol", f"{fam.name}_row_sum_apply_v{vec}")


COLUMN_THREADS = 256
COLUMN_UNROLL = 4  # rows of loads in flight per thread in the column kernels


@T.macro
def column_round_terms(fam, a, b, buf_a, buf_b, part, bi, start, end, k, lanes, c0, vec):
    """part[v] += term(a, b) over round k of this thread's rows of the
    segment (COLUMN_UNROLL rows, `vec` columns from c0), the whole round's
    16-byte loads issued first; the segment's last round element by element."""
    if start + (k * COLUMN_UNROLL + COLUMN_UNROLL - 1) * lanes < end:
        load_column_round(a, buf_a, bi, start, k, COLUMN_UNROLL, lanes, c0, vec)
        load_column_round(b, buf_b, bi, start, k, COLUMN_UNROLL, lanes, c0, vec)
        for u in T.unroll(COLUMN_UNROLL):
            for v in T.unroll(vec):
                part[v] = part[v] + fam.term(T.cast(buf_a[u, v], F32), T.cast(buf_b[u, v], F32))
    else:
        for u in T.unroll(COLUMN_UNROLL):
            if start + (k * COLUMN_UNROLL + u) * lanes < end:
                for v in T.unroll(vec):
                    part[v] = part[v] + fam.term(T.cast(a[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v], F32),
                                                 T.cast(b[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v], F32))


@T.macro
def add_warp_totals(total, comp, at, red, col, tmp):
    """total[at] = the warps' totals red[0 .., col] added in warp order
    (compensated in comp[at]): every thread that adds a column's gets
    bitwise the same sum."""
    total[at] = T.float32(0)
    comp[at] = T.float32(0)
    for w in T.unroll(red.shape[0]):
        compensated_add(total, (at,), comp, (at,), red[w, col], tmp)
    total[at] = total[at] - comp[at]


@with_denormals_flushed
def row_sum_column_sums(fam: RowSumFamily, dtype: str, vec: int):
    """sums[b, seg, c] = the sum of term(a, b) down column c over segment seg
    of the rows: each thread's rows folded every FOLD rounds into compensated
    totals per column, then the 8 warps' totals added per column in warp
    order (shared memory)."""
    threads = COLUMN_THREADS
    lanes = threads // 32
    cols = 32 * vec
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_row_sum_column_sums(a: T.Tensor((B, R, C), dtype), b: T.Tensor((B, R, C), dtype),
                                    sums: T.Tensor((B, S, C), F32)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            tx = T.get_thread_binding()
            lane = tx % 32
            warp = tx // 32
            bi, tile, start, end, c0 = column_tile(bt, seg, R, C, S, cols, vec)
            buf_a = T.alloc_local((COLUMN_UNROLL, vec), dtype)
            buf_b = T.alloc_local((COLUMN_UNROLL, vec), dtype)
            part = T.alloc_local((vec,), F32)
            total = T.alloc_local((vec,), F32)
            comp = T.alloc_local((vec,), F32)
            tmp = T.alloc_local((2,), F32)
            red = T.alloc_shared((lanes, cols), F32)
            if vec > 1:
                T.assume(C % vec == 0)
            for v in T.unroll(vec):
                part[v] = T.float32(0)
                total[v] = T.float32(0)
                comp[v] = T.float32(0)
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), lanes * COLUMN_UNROLL)):
                    column_round_terms(fam, a, b, buf_a, buf_b, part, bi, start, end, k, lanes, c0, vec)
                    if k % FOLD == FOLD - 1:
                        for v in T.unroll(vec):
                            compensated_add(total, (v,), comp, (v,), part[v], tmp)
                            part[v] = T.float32(0)
            for v in T.unroll(vec):
                compensated_add(total, (v,), comp, (v,), part[v], tmp)
                red[warp, lane * vec + v] = total[v] - comp[v]
            T.sync_threads()
            for i in T.serial(T.ceildiv(cols, threads)):
                if i * threads + tx < cols and tile * cols + i * threads + tx < C:
                    add_warp_totals(total, comp, 0, red, i * threads + tx, tmp)
                    sums[bi, seg, tile * cols + i * threads + tx] = total[0]

    return softmax_row_sum_column_sums.with_attr("global_symbol", f"{fam.name}_row_sum_column_sums_v{vec}")


@with_denormals_flushed
def row_sum_column_apply(fam: RowSumFamily, dtype: str, vec: int):
    """out = value(a, b, s) over the column tile's segment, s the column's S
    segment sums added (compensated; warp w takes segments w, w + 8, ...,
    then the 8 warps' totals in warp order: every block of a column gets
    bitwise the same s). A round's loads all go out before its stores (out
    may be a or b)."""
    threads = COLUMN_THREADS
    lanes = threads // 32
    cols = 32 * vec
    B, R, C, S = T.dynamic("B R C S")

    @T.prim_func
    def softmax_row_sum_column_apply(a: T.Tensor((B, R, C), dtype), b: T.Tensor((B, R, C), dtype),
                                     sums: T.Tensor((B, S, C), F32), out: T.Tensor((B, R, C), dtype)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            tx = T.get_thread_binding()
            lane = tx % 32
            warp = tx // 32
            bi, tile, start, end, c0 = column_tile(bt, seg, R, C, S, cols, vec)
            buf_a = T.alloc_local((COLUMN_UNROLL, vec), dtype)
            buf_b = T.alloc_local((COLUMN_UNROLL, vec), dtype)
            res = T.alloc_local((vec,), dtype)
            total = T.alloc_local((vec,), F32)
            comp = T.alloc_local((vec,), F32)
            tmp = T.alloc_local((2,), F32)
            red = T.alloc_shared((lanes, cols), F32)
            if vec > 1:
                T.assume(C % vec == 0)
            for v in T.unroll(vec):
                total[v] = T.float32(0)
                comp[v] = T.float32(0)
            if c0 < C:
                for j in T.serial(T.ceildiv(S, lanes)):
                    if j * lanes + warp < S:
                        for v in T.unroll(vec):
                            compensated_add(total, (v,), comp, (v,), sums[bi, j * lanes + warp, c0 + v], tmp)
            for v in T.unroll(vec):
                red[warp, lane * vec + v] = total[v] - comp[v]
            T.sync_threads()
            for v in T.unroll(vec):
                add_warp_totals(total, comp, v, red, lane * vec + v, tmp)
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), lanes * COLUMN_UNROLL)):
                    if start + (k * COLUMN_UNROLL + COLUMN_UNROLL - 1) * lanes < end:
                        load_column_round(a, buf_a, bi, start, k, COLUMN_UNROLL, lanes, c0, vec)
                        load_column_round(b, buf_b, bi, start, k, COLUMN_UNROLL, lanes, c0, vec)
                        for u in T.unroll(COLUMN_UNROLL):
                            for v in T.unroll(vec):
                                res[v] = T.cast(fam.value(T.cast(buf_a[u, v], F32), T.cast(buf_b[u, v], F32),
                                                          total[v]), dtype)
                            for v in T.vectorized(vec):
                                out[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v] = res[v]
                    else:
                        for u in T.unroll(COLUMN_UNROLL):
                            if start + (k * COLUMN_UNROLL + u) * lanes < end:
                                for v in T.unroll(vec):
                                    out[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v] = T.cast(fam.value(
                                        T.cast(a[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v], F32),
                                        T.cast(b[bi, start + (k * COLUMN_UNROLL + u) * lanes, c0 + v], F32),
                                        total[v]), dtype)

    return softmax_row_sum_column_apply.with_attr("global_symbol", f"{fam.name}_row_sum_column_apply_v{vec}")


def block_threads(N: int) -> int:
    """row_sum_block_rows' threads for rows of N."""
    return ROW_SUM_BLOCK_THREADS[0] if N <= 8192 else ROW_SUM_BLOCK_THREADS[-1]


def _plan_row_sum_rows(fam: RowSumFamily, p, dtype, M: int, N: int):
    """Body (a, b, out: [M, N] dense views, ws)."""
    dt = p.dtype_name(dtype)
    if N <= ROW_SUM_WARP_MAX:
        kernel = p.kernel(row_sum_warp_rows, (fam, dt))
        return (lambda a, b, out, ws: kernel(a, b, out)), "row_sum_warp_rows"
    vec = vector_width(dt)
    S = segments(M, N, MIN_SEGMENT)
    vectors = -(-N // vec)
    if S == 1 and vectors <= HELD_THREADS[-1] * HELD:
        # (misaligned bases: the two-pass block kernel's scalar twin)
        threads = next(t for t in HELD_THREADS if t * HELD >= vectors)
        pick = p.launcher(row_sum_held_rows, (fam, dt, threads, vec), (fam, dt, block_threads(N), 1),
                          scalar_factory=row_sum_block_rows)
        return (lambda a, b, out, ws: pick(p.aligned(a, b, out))(a, b, out)), f"row_sum_held_rows{threads}"
    if S == 1:
        threads = block_threads(N)
        pick = p.launcher(row_sum_block_rows, (fam, dt, threads, vec), (fam, dt, threads, 1))
        return (lambda a, b, out, ws: pick(p.aligned(a, b, out))(a, b, out)), f"row_sum_block_rows{threads}"
    partials = p.launcher(row_sum_partials, (fam, dt, vec), (fam, dt, 1))
    apply = p.launcher(row_sum_apply, (fam, dt, vec), (fam, dt, 1))
    name = f"row_sums{len(p.ws.regions)}"
    p.ws.add(name, M * S, torch.float32)
    regions = p.ws

    def run(a, b, out, ws):
        sums = regions.view(ws, name, (M, S))
        aligned = p.aligned(a, b, out)
        partials(aligned)(a, b, sums)
        apply(aligned)(a, b, sums, out)

    return run, f"row_sum_split{S}"


def _plan_row_sum_columns(fam: RowSumFamily, p, dtype, B: int, R: int, C: int):
    """Body (a, b, out: [B, R, C] dense views, ws): column sums per row
    segment into the workspace, then each segment written (segments for
    about 8 blocks per SM, as the softmax's columns)."""
    dt = p.dtype_name(dtype)
    vec = vector_width(dt) if C % vector_width(dt) == 0 else 1
    tiles = B * -(-C // (32 * vec))
    S = segments(tiles, R, 64, 2 * TARGET_BLOCKS)
    sums_k = p.launcher(row_sum_column_sums, (fam, dt, vec), (fam, dt, 1))
    apply_k = p.launcher(row_sum_column_apply, (fam, dt, vec), (fam, dt, 1))
    name = f"column_sums{len(p.ws.regions)}"
    p.ws.add(name, B * S * C, torch.float32)
    regions = p.ws

    def run(a, b, out, ws):
        sums = regions.view(ws, name, (B, S, C))
        aligned = p.aligned(a, b, out)
        sums_k(aligned)(a, b, sums)
        apply_k(aligned)(a, b, sums, out)

    return run, f"row_sum_columns{S}"


def plan_row_sum(fam: RowSumFamily, p, out, a, b, dim: int):
    if out.numel() == 0:
        return p.done("empty")
    nd = a.dim()
    if nd == 0:
        body, variant = _plan_row_sum_rows(fam, p, a.dtype, 1, 1)
        one = ((1, 1), (1, 1))
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided(*one), ins[1].as_strided(*one),
                                                       o.as_strided(*one), ws))
    N = a.shape[dim]
    tensors = (a, b, out)
    along = [t.stride(dim) if N > 1 else 1 for t in tensors]
    others = [d for d in range(nd) if d != dim]
    o_shape, rows = p.coalesce([a.shape[d] for d in others], [[t.stride(d) for d in others] for t in tensors])
    M = math.prod(o_shape)
    form = p.dense_along_dim(o_shape, N, list(zip(rows, along)))
    if form:
        kind, shape = form
        plan = _plan_row_sum_rows if kind == "rows" else _plan_row_sum_columns
        body, variant = plan(fam, p, a.dtype, *shape)
        dense = shape, p.contiguous_strides(shape)
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided(*dense), ins[1].as_strided(*dense),
                                                       o.as_strided(*dense), ws))

    body, variant = _plan_row_sum_rows(fam, p, a.dtype, M, N)

    # staged: both inputs' rows [others (a's order), dim] gathered into the
    # workspace, computed in place over a's copy, scattered back into out
    gshape = list(o_shape) + [N]
    dense = p.contiguous_strides(gshape)
    p.ws.add("rows_a", M * N, a.dtype)
    p.ws.add("rows_b", M * N, a.dtype)
    gathers = [p.strided_copy(a.dtype, a.dtype, gshape, list(r) + [s], dense) for r, s in zip(rows[:2], along[:2])]
    scatter = p.strided_copy(a.dtype, a.dtype, gshape, dense, list(rows[2]) + [along[2]])
    regions = p.ws

    def run(o, ins, ws):
        staged = [regions.view(ws, name, (M, N)) for name in ("rows_a", "rows_b")]
        for gather, t, s in zip(gathers, ins, staged):
            gather(t, s)
        body(staged[0], staged[1], staged[0], ws)
        scatter(staged[0], o)

    return p.done(variant + "+staged", run)
