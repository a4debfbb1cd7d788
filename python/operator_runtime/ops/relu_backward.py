"""relu_backward: relu's gradient, ``grad`` where ``x > 0`` else 0, as
torch.ops.aten.threshold_backward(grad, x, 0) (a NaN x passes grad); grad, x
and out share a dtype and broadcast."""

from __future__ import annotations

import torch

from ..description import OpDescription
from ..families import BINARY_TINY, binary_benchmarks, binary_cases, elementwise_error_cases, elementwise_plan

DESCRIPTION = OpDescription(
    name="relu_backward",
    summary="grad where x > 0, else 0 (relu's gradient)",
    family="elementwise",
    inputs=("grad", "x"),
    plan=elementwise_plan("relu_backward", ("grad", "x")),
    reference=lambda grad, x: torch.ops.aten.threshold_backward(grad, x, 0),
    torch_out=lambda out, grad, x: torch.ops.aten.threshold_backward.grad_input(grad, x, 0, grad_input=out),
    accuracy="exact",
    special_values="elementwise",
    cases=binary_cases(),
    error_cases=elementwise_error_cases(2),
    tiny=BINARY_TINY,
    benchmarks=binary_benchmarks(),
)
