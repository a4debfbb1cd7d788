"""copy on TileLang: converting copies between float32/float16/bfloat16,
into any strides (src broadcast to out's shape).

copy is the elementwise layer's COPY (the identity, every dtype pair, an
in-place call a no-op): its kernels, contiguous (16-byte vectors, a scalar
twin for unaligned pointers), transpose (tiles through shared memory) and
strided (any strides, up to 8 dims), are also the staging copies every op
gathers operands and scatters results with (see
python/operator_runtime/_internal/tilelang_elementwise.py).

Two teaching forms of the plain copy are kept as documented examples (see
docs/tilelang.md, "Two ways to write a kernel"):

  copy_eager(src)             eager style: T.Tensor annotations, the output is
                              declared with T.empty and returned
  copy_lazy(dtype)            lazy style: a factory returning a prim_func,
                              compiled with out_idx=[-1] so the kernel
                              allocates and returns its last parameter
"""

import tilelang
import tilelang.language as T

from operator_runtime.tilelang_authoring import COPY

plan, variants = COPY.plan, COPY.variants


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
