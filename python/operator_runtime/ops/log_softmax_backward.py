"""log_softmax_backward: log_softmax's gradient along ``dim`` from the
gradient of its output and the output itself, ``grad - exp(output) *
sum(grad, dim)``, the sum in float32 or wider, as torch's
_log_softmax_backward_data; grad, output and out share a shape and dtype."""

from __future__ import annotations

import torch

from ..description import OpDescription, Param
from ..families import (ALONG_DIM_BACKWARD_TINY, SECOND_ORDER_NO_BACKWARD, along_dim_backward_benchmarks,
                        along_dim_backward_cases, along_dim_backward_error_cases, along_dim_backward_plan)

def _error_scale(inputs, ref, dim=-1):
    """|grad| + exp(output) * sum|grad|: the size of the two terms whose
    difference out is (and of the float32 sum's error)."""
    grad, output = (t.to(torch.float64) for t in inputs)
    return grad.abs() + output.exp() * grad.abs().sum(dim, keepdim=True)


DESCRIPTION = OpDescription(
    name="log_softmax_backward",
    summary="grad - exp(output) * sum(grad, dim) (log_softmax's gradient)",
    family="along_dim_backward",
    inputs=("grad", "output"),
    params=(Param("dim", -1, doc="the dim log_softmax normalized along (negative counts from the end)"),),
    plan=along_dim_backward_plan("log_softmax_backward"),
    c_params=lambda dim: (dim,),
    reference=lambda grad, output, dim=-1: torch.ops.aten._log_softmax_backward_data(grad, output, dim,
                                                                                     grad.dtype),
    torch_out=lambda out, grad, output, dim=-1: torch.ops.aten._log_softmax_backward_data.out(
        grad, output, dim, grad.dtype, out=out),
    flops_per_element=4,
    accuracy="scaled",
    error_scale=_error_scale,
    cases=along_dim_backward_cases(),
    error_cases=along_dim_backward_error_cases(),
    tiny=ALONG_DIM_BACKWARD_TINY,
    benchmarks=along_dim_backward_benchmarks(),
    no_backward_reason=SECOND_ORDER_NO_BACKWARD,
)
