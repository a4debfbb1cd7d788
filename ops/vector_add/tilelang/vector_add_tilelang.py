"""vector_add on TileLang: out = a + b (float32/float16/bfloat16, fp32 math
for 16-bit types, rounded once).

Kernels (sizes T.dynamic):

  contiguous(dtype, vec)          out[i] = a[i] + b[i] over a flat length;
                                  vec=1 when a pointer is not 16-byte aligned
  row_bias(dtype, vec)            out[m, n] = a[m, n] + b[n] (b broadcast over
                                  rows); vec > 1 needs N % vec == 0 and
                                  aligned pointers, vec=1 walks columns with
                                  coalesced scalar accesses

Every other layout (transposed, sliced, column bias, ...) is staged by the
backend: operands are gathered into the workspace with copy's strided kernel
and the result scattered into out the same way. out may alias a or b exactly
(each element is read before it is written by the same thread), so the
buffers are declared non-restrict.
"""


import tilelang.language as T

from operator_runtime._internal.tilelang_common import vector_width

DTYPES = ("float32", "float16", "bfloat16")
THREADS = 256


def _add(x, y, dtype):
    if dtype == "float32":
        return x + y
    return T.cast(T.cast(x, "float32") + T.cast(y, "float32"), dtype)


def contiguous(dtype: str, vec: int, unroll: int = 4):
    threads = THREADS
    tile = threads * vec * unroll
    N = T.dynamic("N")

    @T.prim_func
    def add_contiguous(a: T.Tensor((N,), dtype), b: T.Tensor((N,), dtype), out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, tile), threads=threads) as bx:
            T.annotate_restrict_buffers(a, b, out)
            tx = T.get_thread_binding()
            base = bx * tile
            if base + tile <= N:
                for u in T.unroll(unroll):
                    for v in T.vectorized(vec):
                        out[base + (u * threads + tx) * vec + v] = _add(a[base + (u * threads + tx) * vec + v],
                                                                        b[base + (u * threads + tx) * vec + v], dtype)
            else:
                for u in T.unroll(unroll):
                    for v in T.serial(vec):
                        if base + (u * threads + tx) * vec + v < N:
                            out[base + (u * threads + tx) * vec + v] = _add(a[base + (u * threads + tx) * vec + v],
                                                                            b[base + (u * threads + tx) * vec + v],
                                                                            dtype)

    return add_contiguous


def row_bias(dtype: str, vec: int, rows_per_block: int = 4):
    threads = THREADS
    cols = threads * vec if vec > 1 else threads * 8  # columns one block covers
    M, N = T.dynamic("M N")

    @T.prim_func
    def add_row_bias(a: T.Tensor((M, N), dtype), b: T.Tensor((N,), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, rows_per_block), T.ceildiv(N, cols), threads=threads) as (by, bx):
            T.annotate_restrict_buffers(a, b, out)
            tx = T.get_thread_binding()
            if vec > 1:
                T.assume(N % vec == 0)
                if (bx + 1) * cols <= N:
                    for r in T.unroll(rows_per_block):
                        if by * rows_per_block + r < M:
                            for v in T.vectorized(vec):
                                out[by * rows_per_block + r, bx * cols + tx * vec + v] = _add(
                                    a[by * rows_per_block + r, bx * cols + tx * vec + v], b[bx * cols + tx * vec + v],
                                    dtype)
                else:
                    for r in T.unroll(rows_per_block):
                        if by * rows_per_block + r < M:
                            for v in T.serial(vec):
                                if bx * cols + tx * vec + v < N:
                                    out[by * rows_per_block + r, bx * cols + tx * vec + v] = _add(
                                        a[by * rows_per_block + r, bx * cols + tx * vec + v],
                                        b[bx * cols + tx * vec + v], dtype)
            else:
                for r in T.unroll(rows_per_block):
                    if by * rows_per_block + r < M:
                        for k in T.unroll(8):
                            if bx * cols + k * threads + tx < N:
                                out[by * rows_per_block + r, bx * cols + k * threads + tx] = _add(
                                    a[by * rows_per_block + r, bx * cols + k * threads + tx],
                                    b[bx * cols + k * threads + tx], dtype)

    return add_row_bias


def variants():
    out = []
    for d in DTYPES:
        out.append((f"contiguous_{d}_v", contiguous, (d, vector_width(d))))
        out.append((f"contiguous_{d}_1", contiguous, (d, 1)))
        out.append((f"row_bias_{d}_v", row_bias, (d, vector_width(d))))
        out.append((f"row_bias_{d}_1", row_bias, (d, 1)))
    return out
