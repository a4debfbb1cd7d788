"""vector_add: ``a + b`` with torch broadcasting; a, b and out share a dtype."""

from __future__ import annotations

import torch

from ..description import Backward, OpDescription
from ..gradients import each_input, sum_to
from ..families import BINARY_TINY, binary_benchmarks, binary_cases, elementwise_error_cases, elementwise_plan



def _backward(ctx, grad):
    """Each input's gradient is grad, summed over its broadcast dims."""
    return each_input(ctx, (lambda: sum_to(ctx.ops, grad, ctx.shapes[0], ctx.dtypes[0]),
                            lambda: sum_to(ctx.ops, grad, ctx.shapes[1], ctx.dtypes[1])))


DESCRIPTION = OpDescription(
    name="vector_add",
    summary="a + b (broadcast shape, the inputs' dtype)",
    family="elementwise",
    inputs=("a", "b"),
    plan=elementwise_plan("vector_add", ("a", "b")),
    reference=torch.add,
    torch_out=lambda out, a, b: torch.add(a, b, out=out),
    flops_per_element=1,
    special_values="elementwise",
    cases=binary_cases(),
    error_cases=elementwise_error_cases(2),
    tiny=BINARY_TINY,
    benchmarks=binary_benchmarks(),
    backward=Backward(_backward),
)
