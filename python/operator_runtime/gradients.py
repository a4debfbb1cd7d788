"""Pieces the ops' backward formulas share (``OpDescription.backward``),
computed with the runtime's own ops so gradients run on the same kernels
and backends as the forward calls."""

from __future__ import annotations

import torch


def broadcast_dims(grad_shape: tuple, shape: tuple) -> tuple:
    """The dims of an output of ``grad_shape`` along which an input of
    ``shape`` was broadcast: the leading dims it lacks and its size-1 dims
    the output widened."""
    lead = len(grad_shape) - len(shape)
    widened = (lead + i for i, size in enumerate(shape) if size == 1 and grad_shape[lead + i] != 1)
    return tuple(range(lead)) + tuple(widened)


def sum_to(ops, grad: torch.Tensor, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """The gradient of an input of ``shape`` and ``dtype`` from the output's
    ``grad``: summed over its broadcast dims (the runtime's reduce_sum with
    keepdim, then a view of the input's shape), converted by its copy_.
    ``ops``: the runtime's public functions (GradContext.ops)."""
    dims = broadcast_dims(tuple(grad.shape), tuple(shape))
    if dims:
        grad = ops.reduce_sum(grad, dim=dims, keepdim=True).reshape(shape)
    if grad.dtype != dtype:
        grad = ops.copy_(torch.empty(shape, dtype=dtype, device=grad.device), grad)
    return grad


def each_input(ctx, grads) -> tuple:
    """``grads`` (callables, one per input) run only for the inputs that
    need a gradient."""
    return tuple(g() if needed else None for g, needed in zip(grads, ctx.needs_input_grad))
