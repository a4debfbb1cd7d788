"""copy on TileLang: converting copies between float32/float16/bfloat16.

Kernels (all sizes are T.dynamic: one compiled kernel per dtype pair and
variant, whatever the tensor size):

  contiguous(src, dst, vec)   dst[i] = src[i] over a flat length; vec = 16-byte
                              vectors (vec=1: pointers not 16-byte aligned)
  transpose(src, dst, pair)   dst[b, i, j] = src[b, j, i]: both sides dense, the
                              inner two dims swapped; 64x64 tiles (32x32 when
                              pair = 1: odd sizes or misaligned pointers)
                              through shared memory, so reads and writes are
                              both coalesced
  strided(src, dst, ndim)     any strides on both sides (broadcast stride 0
                              included), ndim 4 or 8 after padding; also the
                              staging kernel other ops use to gather operands
                              into, and scatter results out of, the workspace

Two teaching forms of the plain copy are kept as documented examples (see
docs/tilelang.md, "Two ways to write a kernel"):

  copy_eager(src)             eager style: T.Tensor annotations, the output is
                              declared with T.empty and returned
  copy_lazy(dtype)            lazy style: a factory returning a prim_func,
                              compiled with out_idx=[-1] so the kernel
                              allocates and returns its last parameter
"""


import itertools

import tilelang
import tilelang.language as T

from operator_runtime._internal.tilelang_common import vector_width

DTYPES = ("float32", "float16", "bfloat16")
THREADS = 256


def contiguous(src_dtype: str, dst_dtype: str, vec: int, unroll: int = 4):
    threads = THREADS
    tile = threads * vec * unroll
    N = T.dynamic("N")

    @T.prim_func
    def copy_contiguous(src: T.Tensor((N,), src_dtype), dst: T.Tensor((N,), dst_dtype)):
        with T.Kernel(T.ceildiv(N, tile), threads=threads) as bx:
            tx = T.get_thread_binding()
            base = bx * tile
            if base + tile <= N:
                for u in T.unroll(unroll):
                    for v in T.vectorized(vec):
                        dst[base + (u * threads + tx) * vec + v] = T.cast(src[base + (u * threads + tx) * vec + v],
                                                                          dst_dtype)
            else:
                for u in T.unroll(unroll):
                    for v in T.serial(vec):
                        if base + (u * threads + tx) * vec + v < N:
                            dst[base + (u * threads + tx) * vec + v] = T.cast(
                                src[base + (u * threads + tx) * vec + v], dst_dtype)

    return copy_contiguous


def transpose(src_dtype: str, dst_dtype: str, pair: int = 1):
    """Tiles of 32 * pair square through shared memory; a lane moves `pair`
    consecutive elements per row (pair = 2: 4- or 8-byte accesses, which
    needs R and C even and pointers aligned to two elements), 8 warps on
    interleaved rows: 4 * pair loads in flight per thread."""
    tile = 32 * pair
    warps = THREADS // 32
    B, R, C = T.dynamic("B R C")

    @T.prim_func
    def copy_transpose(src: T.Tensor((B, C, R), src_dtype), dst: T.Tensor((B, R, C), dst_dtype)):
        with T.Kernel(T.ceildiv(C, tile), T.ceildiv(R, tile), B, threads=THREADS) as (bj, bi, b):
            tx = T.get_thread_binding()
            lane = tx % 32
            w = tx // 32
            buf = T.alloc_shared((tile, tile + 1), "float32")
            val = T.alloc_local((tile // warps, pair), src_dtype)
            res = T.alloc_local((pair,), dst_dtype)
            if pair > 1:
                T.assume(R % pair == 0)
                T.assume(C % pair == 0)
            # read: consecutive lanes walk src's contiguous dim (i); every load first
            for k in T.unroll(tile // warps):
                if bj * tile + w + k * warps < C and bi * tile + lane * pair < R:
                    for v in T.vectorized(pair):
                        val[k, v] = src[b, bj * tile + w + k * warps, bi * tile + lane * pair + v]
            for k in T.unroll(tile // warps):
                for v in T.unroll(pair):
                    buf[w + k * warps, lane * pair + v] = T.cast(val[k, v], "float32")
            T.sync_threads()
            # write: consecutive lanes walk dst's contiguous dim (j)
            for k in T.unroll(tile // warps):
                if bi * tile + w + k * warps < R and bj * tile + lane * pair < C:
                    for v in T.unroll(pair):
                        res[v] = T.cast(buf[lane * pair + v, w + k * warps], dst_dtype)
                    for v in T.vectorized(pair):
                        dst[b, bi * tile + w + k * warps, bj * tile + lane * pair + v] = res[v]

    return copy_transpose


def unravel(linear, shape):
    """The multi-index of a row-major linear index (built at trace time)."""
    idx = []
    rest = linear
    for k in range(len(shape) - 1, 0, -1):
        idx.append(T.truncmod(rest, shape[k]))
        rest = T.truncdiv(rest, shape[k])
    idx.append(rest)
    return tuple(idx[::-1])


def strided(src_dtype: str, dst_dtype: str, ndim: int = 8, per_thread: int = 4):
    """dst[idx] = src[idx] for every multi-index of the (padded) shape; any strides."""
    shape = T.dynamic(" ".join(f"d{k}" for k in range(ndim)))
    src_strides = T.dynamic(" ".join(f"s{k}" for k in range(ndim)), "int64")
    dst_strides = T.dynamic(" ".join(f"t{k}" for k in range(ndim)), "int64")
    threads = THREADS
    chunk = threads * per_thread
    total = shape[0]
    for k in range(1, ndim):
        total = total * shape[k]

    @T.prim_func
    def copy_strided(src: T.StridedTensor(shape, src_strides, src_dtype),
                     dst: T.StridedTensor(shape, dst_strides, dst_dtype)):
        with T.Kernel(T.ceildiv(total, chunk), threads=threads) as bx:
            tx = T.get_thread_binding()
            for u in T.unroll(per_thread):
                if bx * chunk + u * threads + tx < total:
                    idx = unravel(bx * chunk + u * threads + tx, shape)
                    dst[idx] = T.cast(src[idx], dst_dtype)

    return copy_strided


def variants():
    """Every kernel this file defines, as (name, factory, args): CI compiles them all."""
    out = []
    for s, d in itertools.product(DTYPES, DTYPES):
        out.append((f"contiguous_{s}_{d}_v", contiguous, (s, d, vector_width(s, d))))
        out.append((f"contiguous_{s}_{d}_1", contiguous, (s, d, 1)))
        out.append((f"transpose_{s}_{d}_2", transpose, (s, d, 2)))
        out.append((f"transpose_{s}_{d}_1", transpose, (s, d, 1)))
        out.append((f"strided4_{s}_{d}", strided, (s, d, 4)))
        out.append((f"strided8_{s}_{d}", strided, (s, d, 8)))
    return out


# -- the two teaching forms -------------------------------------------------------------

@tilelang.jit
def copy_eager(src, block: int = 1024):
    """Eager style: compiles on first call for these dtypes and runs at once,
    returning a new tensor (T.empty). N is T.dynamic, so a new length reuses
    the kernel."""
    N = T.dynamic("N")
    src: T.Tensor[[N], T.float32]
    out = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=256) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                out[bx * block + i] = src[bx * block + i]
    return out


def copy_lazy(dtype: str = "float32", block: int = 1024):
    """Lazy style (TileOPs' output-position contract): a prim_func whose last
    parameter is the output; tilelang.compile(..., out_idx=[-1]) makes the
    kernel allocate it and return it. Without out_idx the same kernel writes
    into a caller's tensor."""
    N = T.dynamic("N")

    @T.prim_func
    def copy_lazy_kernel(src: T.Tensor((N,), dtype), out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=256) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    out[bx * block + i] = src[bx * block + i]

    return copy_lazy_kernel
