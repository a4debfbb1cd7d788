"""The public operators, three forms each: op(...), op_(out, ...), prepare_op(out, ...)."""

from .copy import copy, copy_, prepare_copy
from .reduce_sum import prepare_reduce_sum, reduce_sum, reduce_sum_
from .softmax import prepare_softmax, softmax, softmax_
from .vector_add import prepare_vector_add, vector_add, vector_add_

__all__ = [
    "copy", "copy_", "prepare_copy",
    "vector_add", "vector_add_", "prepare_vector_add",
    "reduce_sum", "reduce_sum_", "prepare_reduce_sum",
    "softmax", "softmax_", "prepare_softmax",
]
