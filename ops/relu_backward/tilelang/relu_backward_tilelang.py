"""relu_backward on TileLang: out = grad where x > 0, else 0 (a NaN x passes
grad, as torch's threshold_backward); an instance of the elementwise layer
(flat, row-bias, other layouts staged through the workspace; out may be grad
or x itself)."""

import tilelang.language as T

from operator_runtime.tilelang_authoring import F32, Binary


def relu_backward(grad, x):
    """0 where x <= 0, else grad: a NaN x compares false and keeps grad."""
    return T.Select(x <= T.float32(0), T.float32(0), grad)


RELU_BACKWARD = Binary("relu_backward", relu_backward, compute=F32, selects=True)
plan, variants = RELU_BACKWARD.plan, RELU_BACKWARD.variants
