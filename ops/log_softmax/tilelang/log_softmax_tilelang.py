"""log_softmax on TileLang: x - max - log(sum(exp(x - max))) along a dim,
in float32 and rounded once, as torch.log_softmax (a NaN or +inf in a row,
or a row of all -inf, gives a NaN row; a -inf element stays -inf); an
instance of the softmax family, the same kernels as softmax with this
epilogue (python/operator_runtime/_internal/tilelang_softmax.py).

log(sum) is taken once per row with the accurate logf, and subtracted after
max (x - max is exact where x is near the max: adding max + log(sum) first
would round away log(sum) next to a large max).
"""

import tilelang.language as T

from operator_runtime.tilelang_authoring import SoftmaxFamily


def log_of_sum(s):
    return T.log(s)


def from_input(x, m, k):
    return (x - m) - k


LOG_SOFTMAX = SoftmaxFamily("log_softmax", log_of_sum, from_input)
plan, variants, cuts = LOG_SOFTMAX.plan, LOG_SOFTMAX.variants, LOG_SOFTMAX.cuts
