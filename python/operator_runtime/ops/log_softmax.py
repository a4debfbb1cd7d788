"""log_softmax along ``dim``: src - max - log(sum(exp(src - max))), computed
in float32 or wider, in the input's dtype; -inf, +inf and NaN as in torch."""

from __future__ import annotations

import torch

from ..description import Backward, OpDescription, Param
from ..families import ALONG_DIM_TINY, along_dim_benchmarks, along_dim_cases, along_dim_error_cases, along_dim_plan


def _backward(ctx, grad):
    """The gradient grad - exp(output) * sum(grad) along dim, by the runtime's
    log_softmax_backward, from the output (saved, as torch saves it)."""
    return (ctx.ops.log_softmax_backward(grad, ctx.output, ctx.params[0]),)


DESCRIPTION = OpDescription(
    name="log_softmax",
    summary="log of the softmax of src along dim",
    family="along_dim",
    inputs=("src",),
    params=(Param("dim", -1, doc="the dim to normalize along (negative counts from the end)"),),
    plan=along_dim_plan("log_softmax"),
    c_params=lambda dim: (dim,),
    reference=lambda src, dim=-1: torch.log_softmax(src, dim),
    torch_out=lambda out, src, dim=-1: torch.ops.aten._log_softmax.out(src, dim, False, out=out),
    flops_per_element=5,
    accuracy="log",
    special_values="rows",
    cases=along_dim_cases(),
    error_cases=along_dim_error_cases(),
    tiny=ALONG_DIM_TINY,
    benchmarks=along_dim_benchmarks(),
    backward=Backward(_backward, saves=("out",)),
)
