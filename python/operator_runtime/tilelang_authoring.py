"""Everything a TileLang kernel file takes from operator_runtime.

A kernel file, ops/<op>/tilelang/<op>_tilelang.py, imports this module (and
TileLang, torch) and nothing else of the package. It defines

  plan(planner, out, inputs, params) -> descriptor   the op's planner
  variants() -> [(name, factory, args)]              every kernel it may compile
  cuts(out, inputs, params), split_reduction(...)    optional: see
                                                     _internal/tilelang_kernels.py

`inputs` arrive broadcast to out's shape (stride-0 dims) and `params`
normalized, as the op's description (operator_runtime/ops/<op>.py) plans
them. An op built on a shared layer is an instance of it:

    RELU = Unary("relu", lambda x: ..., compute=F32)
    plan, variants = RELU.plan, RELU.variants

  Unary, Binary     out[i] = fn(inputs[i]...) (copy is COPY, the identity)
  SoftmaxFamily     ops from each row's max and sum of exp, by their epilogue
  RowSumFamily      ops of two inputs from each row's sum of a term of both
                    (softmax's gradients), by their epilogue
"""

from ._internal.tilelang_device import (DTYPES, F32, MAX_GRID_Y, NEG_INF, PASS_CONFIGS, RESIDENT_BLOCKS,
                                        TARGET_BLOCKS, WARP, block_max, block_sum, column_tile, compensated_add,
                                        exp_term, fast_exp, itemsize, load_column_round, pass_configs, rescale,
                                        row_edge, rows_per_warp, scaled, segments, term_under_neg_inf_max, tuned_off,
                                        vector_width, warp_max, warp_sum, with_bounds_trusted,
                                        with_denormals_flushed, with_stores_lowered)
from ._internal.tilelang_elementwise import COPY, Binary, Unary, identity
from ._internal.tilelang_row_sum import RowSumFamily
from ._internal.tilelang_softmax import SoftmaxFamily

__all__ = [
    # constants and launch geometry
    "DTYPES", "F32", "WARP", "NEG_INF", "RESIDENT_BLOCKS", "TARGET_BLOCKS", "MAX_GRID_Y",
    "itemsize", "vector_width", "rows_per_warp", "segments", "tuned_off",
    # how kernels are compiled
    "PASS_CONFIGS", "pass_configs", "with_stores_lowered", "with_denormals_flushed", "with_bounds_trusted",
    # device macros and math
    "warp_sum", "warp_max", "block_sum", "block_max", "compensated_add", "column_tile", "load_column_round",
    "row_edge", "fast_exp", "scaled", "exp_term", "term_under_neg_inf_max", "rescale",
    # shared layers
    "Unary", "Binary", "COPY", "identity", "SoftmaxFamily", "RowSumFamily",
]
