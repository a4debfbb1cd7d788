"""softmax_backward: softmax's gradient along ``dim`` from the gradient of
its output and the output itself, ``output * (grad - sum(grad * output,
dim))``, the sum in float32 or wider, as torch's _softmax_backward_data;
grad, output and out share a shape and dtype."""

from __future__ import annotations

import torch

from ..description import OpDescription, Param
from ..families import (ALONG_DIM_BACKWARD_TINY, SECOND_ORDER_NO_BACKWARD, along_dim_backward_benchmarks,
                        along_dim_backward_cases, along_dim_backward_error_cases, along_dim_backward_plan)

def _error_scale(inputs, ref, dim=-1):
    """|output| * (|grad| + sum|grad * output|): the size of the two terms
    whose difference out is (and of the float32 sum's error)."""
    grad, output = (t.to(torch.float64) for t in inputs)
    return output.abs() * (grad.abs() + (grad * output).abs().sum(dim, keepdim=True))


DESCRIPTION = OpDescription(
    name="softmax_backward",
    summary="output * (grad - sum(grad * output, dim)) (softmax's gradient)",
    family="along_dim_backward",
    inputs=("grad", "output"),
    params=(Param("dim", -1, doc="the dim softmax normalized along (negative counts from the end)"),),
    plan=along_dim_backward_plan("softmax_backward"),
    c_params=lambda dim: (dim,),
    reference=lambda grad, output, dim=-1: torch.ops.aten._softmax_backward_data(grad, output, dim, grad.dtype),
    torch_out=lambda out, grad, output, dim=-1: torch.ops.aten._softmax_backward_data.out(
        grad, output, dim, grad.dtype, grad_input=out),
    flops_per_element=4,
    accuracy="scaled",
    error_scale=_error_scale,
    cases=along_dim_backward_cases(),
    error_cases=along_dim_backward_error_cases(),
    tiny=ALONG_DIM_BACKWARD_TINY,
    benchmarks=along_dim_backward_benchmarks(),
    no_backward_reason=SECOND_ORDER_NO_BACKWARD,
)
