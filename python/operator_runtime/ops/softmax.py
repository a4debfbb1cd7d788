"""softmax along ``dim``, computed in float32 or wider, in the input's dtype;
-inf, +inf and NaN behave as in torch (a row of all -inf gives NaN)."""

from __future__ import annotations

import torch

from ..description import Backward, OpDescription, Param
from ..families import ALONG_DIM_TINY, along_dim_benchmarks, along_dim_cases, along_dim_error_cases, along_dim_plan


def _backward(ctx, grad):
    """The gradient output * (grad - sum(grad * output)) along dim, by the runtime's
    softmax_backward, from the output (saved, as torch saves it)."""
    return (ctx.ops.softmax_backward(grad, ctx.output, ctx.params[0]),)


DESCRIPTION = OpDescription(
    name="softmax",
    summary="softmax of src along dim",
    family="along_dim",
    inputs=("src",),
    params=(Param("dim", -1, doc="the dim to normalize along (negative counts from the end)"),),
    plan=along_dim_plan("softmax"),
    c_params=lambda dim: (dim,),
    reference=lambda src, dim=-1: torch.softmax(src, dim),
    torch_out=lambda out, src, dim=-1: torch.ops.aten._softmax.out(src, dim, False, out=out),
    flops_per_element=5,
    accuracy="normalized",
    special_values="rows",
    cases=along_dim_cases(),
    error_cases=along_dim_error_cases(),
    tiny=ALONG_DIM_TINY,
    benchmarks=along_dim_benchmarks(),
    backward=Backward(_backward, saves=("out",)),
)
