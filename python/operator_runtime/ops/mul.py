"""mul: ``a * b`` with torch broadcasting; a, b and out share a dtype."""

from __future__ import annotations

import torch

from ..description import Backward, OpDescription
from ..gradients import each_input, sum_to
from ..families import BINARY_TINY, binary_benchmarks, binary_cases, elementwise_error_cases, elementwise_plan



def _backward(ctx, grad):
    """d(a*b)/da = b, d(a*b)/db = a, each summed over its broadcast dims."""
    a, b, ops = *ctx.saved, ctx.ops
    return each_input(ctx, (lambda: sum_to(ops, ops.mul(grad, b), ctx.shapes[0], ctx.dtypes[0]),
                            lambda: sum_to(ops, ops.mul(grad, a), ctx.shapes[1], ctx.dtypes[1])))


DESCRIPTION = OpDescription(
    name="mul",
    summary="a * b (broadcast shape, the inputs' dtype)",
    family="elementwise",
    inputs=("a", "b"),
    plan=elementwise_plan("mul", ("a", "b")),
    reference=torch.mul,
    torch_out=lambda out, a, b: torch.mul(a, b, out=out),
    flops_per_element=1,
    special_values="elementwise",
    cases=binary_cases(),
    error_cases=elementwise_error_cases(2),
    tiny=BINARY_TINY,
    benchmarks=binary_benchmarks(),
    backward=Backward(_backward, saves=("a", "b")),
)
