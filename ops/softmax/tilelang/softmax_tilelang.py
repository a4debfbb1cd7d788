"""softmax on TileLang: exp(x - max) / sum(exp(x - max)) along a dim, in
float32 and rounded once, as torch.softmax (a NaN or +inf in a row, or a
row of all -inf, gives a NaN row); an instance of the softmax family
(python/operator_runtime/_internal/tilelang_softmax.py: rows in registers,
split long rows, columns, column clusters; other layouts staged).

The epilogue multiplies by the reciprocal of the sum (safe: sum >= 1), and
the register-resident kernels keep exp(x - max) from the sum for the write.
"""

import tilelang.language as T

from operator_runtime.tilelang_authoring import SoftmaxFamily, fast_exp


def reciprocal(s):
    return T.float32(1) / s


def from_input(x, m, k):
    return fast_exp(x - m) * k


def from_exp(e, k):
    return e * k


SOFTMAX = SoftmaxFamily("softmax", reciprocal, from_input, from_exp)
plan, variants, cuts = SOFTMAX.plan, SOFTMAX.variants, SOFTMAX.cuts
