"""log_softmax_backward on TileLang: g - exp(y) * sum(g) along a dim, in
float32 and rounded once, as torch's _log_softmax_backward_data; an
instance of the softmax family's two-input kernels
(python/operator_runtime/_internal/tilelang_row_sum.py: a warp or a block
per row; other layouts staged).

exp(y) is the accurate expf: y is any input here, and exp(y) scales the
row's sum, so its error is not divided away as softmax's is."""

import tilelang.language as T

from operator_runtime.tilelang_authoring import RowSumFamily


def term(g, y):
    return g


def value(g, y, s):
    return g - T.exp(y) * s


LOG_SOFTMAX_BACKWARD = RowSumFamily("log_softmax_backward", term, value)
plan, variants, cuts = LOG_SOFTMAX_BACKWARD.plan, LOG_SOFTMAX_BACKWARD.variants, LOG_SOFTMAX_BACKWARD.cuts
