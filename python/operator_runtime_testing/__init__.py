"""Test-only helpers for operator_runtime: NaN poisoning, dtype-aware
comparison against a float64 reference, and tensor layout makers.

They ship in the wheel so that a backend developer can run the same checks
on a new machine without the repository's tests/ folder.
"""

from .assertions import (ACCUMULATION_EPS, TOLERANCES, assert_bitwise_equal, assert_close,
                         assert_outside_untouched, assert_untouched, poison, reduction_tolerance,
                         require_cuda, snapshot, tolerance)
from .layouts import (INPUT_LAYOUTS, LAYOUT_KINDS, OUTPUT_LAYOUTS, fresh_like, make_generator,
                      make_out, make_tensor, random_values, seed_from_text, strided_tensor)

__all__ = [
    "ACCUMULATION_EPS", "TOLERANCES", "assert_bitwise_equal", "assert_close", "assert_outside_untouched",
    "assert_untouched", "poison", "reduction_tolerance", "require_cuda", "snapshot", "tolerance",
    "INPUT_LAYOUTS", "LAYOUT_KINDS", "OUTPUT_LAYOUTS", "fresh_like", "make_generator", "make_out",
    "make_tensor", "random_values", "seed_from_text", "strided_tensor",
]
