"""vector_add: ``a + b`` with torch broadcasting; a, b and out share a dtype."""

from __future__ import annotations

import torch

from .._internal.operator import Operator, Plan


def _plan(out, a, b):
    if a.dtype != b.dtype:
        raise TypeError(f"vector_add: a ({a.dtype}) and b ({b.dtype}) must share a dtype")
    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(f"vector_add: shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from None
    return Plan((a.expand(shape), b.expand(shape)), (), tuple(shape), a.dtype)


_VECTOR_ADD = Operator("vector_add", ("a", "b"), _plan)


def vector_add(a, b, *, backend=None):
    """A new tensor ``a + b`` (broadcast shape, the inputs' dtype)."""
    return _VECTOR_ADD.call(None, (a, b), (), backend)


def vector_add_(out, a, b, *, backend=None):
    """Writes ``a + b`` into ``out`` (which may be ``a`` or ``b`` itself); returns ``out``."""
    return _VECTOR_ADD.call(out, (a, b), (), backend)


def prepare_vector_add(out, a, b, *, backend=None):
    """A PreparedOp running ``vector_add_(out, a, b)``."""
    return _VECTOR_ADD.prepare(out, (a, b), (), backend)
