"""The two-input ops of the TileLang softmax family (softmax_backward,
log_softmax_backward): a row's sum of a term of both inputs, then each
output from both inputs and that sum, in float32 and rounded once. The
one-input kernels (tilelang_softmax.py) hold one input's row in registers or
carry its running (max, sum of exp) pair; these need neither.

An op is an instance, RowSumFamily, holding term(a, b) and value(a, b, s).
Canonical form (anything else is staged through the workspace, as
tilelang_softmax.plan_along_dim stages it):

  rows      a/b/out [M, N] dense, the op over N

Kernels (sizes T.dynamic):
  row_sum_warp_rows(fam, dtype)           N <= ROW_SUM_WARP_MAX: a warp per
                                          row, each lane summing every 32nd
                                          element, then writing it
  row_sum_block_rows(fam, dtype, threads) any N: a block per row, the same
Both read the row twice (the second time from L1/L2). out may be either
input itself: every element is read before its own write.
"""

# No `from __future__ import annotations`: TileLang evaluates the prim_funcs'
# annotations, which name the factories' local variables (dtypes, sizes).

import math

import tilelang.language as T

from .tilelang_device import DTYPES, F32, block_sum, warp_sum, with_denormals_flushed

ROW_SUM_WARP_MAX = 1024
ROW_SUM_BLOCK_THREADS = (256, 1024)


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
        return [item for d in DTYPES for item in
                [(f"row_sum_warp_rows_{d}", row_sum_warp_rows, (self, d))]
                + [(f"row_sum_block_rows_{d}_{t}", row_sum_block_rows, (self, d, t)) for t in ROW_SUM_BLOCK_THREADS]]


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


@with_denormals_flushed
def row_sum_block_rows(fam: RowSumFamily, dtype: str, threads: int):
    M, N = T.dynamic("M N")

    @T.prim_func
    def softmax_row_sum_block_rows(a: T.Tensor((M, N), dtype), b: T.Tensor((M, N), dtype),
                                   out: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as row:
            tx = T.get_thread_binding()
            s = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            s[0] = T.float32(0)
            for j in T.serial(T.ceildiv(N, threads)):
                if j * threads + tx < N:
                    s[0] = s[0] + fam.term(T.cast(a[row, j * threads + tx], F32), T.cast(b[row, j * threads + tx], F32))
            block_sum(s, red, tx, threads)
            for j in T.serial(T.ceildiv(N, threads)):
                if j * threads + tx < N:
                    out[row, j * threads + tx] = T.cast(
                        fam.value(T.cast(a[row, j * threads + tx], F32), T.cast(b[row, j * threads + tx], F32), s[0]),
                        dtype)

    return softmax_row_sum_block_rows.with_attr("global_symbol", f"{fam.name}_row_sum_block_rows{threads}")


def _plan_row_sum_rows(fam: RowSumFamily, p, dtype, N: int):
    """Body (a, b, out: [M, N] dense views, ws)."""
    dt = p.dtype_name(dtype)
    if N <= ROW_SUM_WARP_MAX:
        kernel = p.kernel(row_sum_warp_rows, (fam, dt))
        return (lambda a, b, out, ws: kernel(a, b, out)), "row_sum_warp_rows"
    threads = ROW_SUM_BLOCK_THREADS[0] if N <= 8192 else ROW_SUM_BLOCK_THREADS[-1]
    kernel = p.kernel(row_sum_block_rows, (fam, dt, threads))
    return (lambda a, b, out, ws: kernel(a, b, out)), f"row_sum_block_rows{threads}"


def plan_row_sum(fam: RowSumFamily, p, out, a, b, dim: int):
    if out.numel() == 0:
        return p.done("empty")
    nd = a.dim()
    if nd == 0:
        body, variant = _plan_row_sum_rows(fam, p, a.dtype, 1)
        one = ((1, 1), (1, 1))
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided(*one), ins[1].as_strided(*one),
                                                       o.as_strided(*one), ws))
    N = a.shape[dim]
    tensors = (a, b, out)
    along = [t.stride(dim) if N > 1 else 1 for t in tensors]
    others = [d for d in range(nd) if d != dim]
    o_shape, rows = p.coalesce([a.shape[d] for d in others], [[t.stride(d) for d in others] for t in tensors])
    M = math.prod(o_shape)
    body, variant = _plan_row_sum_rows(fam, p, a.dtype, N)

    def rows_ok(strides_rows, stride_dim):
        return stride_dim == 1 and (not o_shape or (len(o_shape) == 1 and strides_rows[0] == N))

    if all(rows_ok(r, s) for r, s in zip(rows, along)):
        dense = ((M, N), (N, 1))
        return p.done(variant, lambda o, ins, ws: body(ins[0].as_strided(*dense), ins[1].as_strided(*dense),
                                                       o.as_strided(*dense), ws))

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
