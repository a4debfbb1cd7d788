"""relu on TileLang: out = max(src, 0) elementwise, NaN kept (as
torch.relu); an instance of the elementwise layer (flat, transposed and
any-strides kernels; out may be src itself)."""

import tilelang.language as T

from operator_runtime.tilelang_authoring import F32, Unary


def relu(x):
    """0 where x < 0, else x: a NaN compares false and stays (fmaxf would drop it)."""
    return T.Select(x < T.float32(0), T.float32(0), x)


RELU = Unary("relu", relu, compute=F32, selects=True)
plan, variants = RELU.plan, RELU.variants
