"""relu: max(src, 0) elementwise, as torch.relu (NaN stays NaN)."""

from __future__ import annotations

import torch

from ..description import Backward, OpDescription
from ..families import UNARY_TINY, elementwise_error_cases, elementwise_plan, unary_benchmarks, unary_cases



def _backward(ctx, grad):
    """grad where src > 0, else 0, by the runtime's relu_backward."""
    return (ctx.ops.relu_backward(grad, ctx.saved[0]),)


DESCRIPTION = OpDescription(
    name="relu",
    summary="max(src, 0) elementwise",
    family="elementwise",
    inputs=("src",),
    plan=elementwise_plan("relu", ("src",)),
    reference=torch.relu,
    torch_out=lambda out, src: torch.clamp_min(src, 0, out=out),
    flops_per_element=1,
    accuracy="exact",
    special_values="elementwise",
    cases=unary_cases(),
    error_cases=elementwise_error_cases(1),
    tiny=UNARY_TINY,
    benchmarks=unary_benchmarks(),
    backward=Backward(_backward, saves=("src",)),
)
