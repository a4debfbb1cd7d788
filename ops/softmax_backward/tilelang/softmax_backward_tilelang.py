"""softmax_backward on TileLang: y * (g - sum(g * y)) along a dim, in
float32 and rounded once, as torch's _softmax_backward_data; an instance of
the softmax family's two-input kernels
(python/operator_runtime/_internal/tilelang_row_sum.py: a warp or a block
per row; other layouts staged)."""

from operator_runtime.tilelang_authoring import RowSumFamily


def term(g, y):
    return g * y


def value(g, y, s):
    return y * (g - s)


SOFTMAX_BACKWARD = RowSumFamily("softmax_backward", term, value)
plan, variants, cuts = SOFTMAX_BACKWARD.plan, SOFTMAX_BACKWARD.variants, SOFTMAX_BACKWARD.cuts
