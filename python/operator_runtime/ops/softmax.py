"""softmax along ``dim``, computed in float32 or wider, in the input's dtype;
-inf, +inf and NaN behave as in torch (a row of all -inf gives NaN)."""

from __future__ import annotations

import ctypes

from .._internal.operator import Operator, Plan
from .._internal.tensors import normalize_dim


def _plan(out, src, dim=-1):
    dim = normalize_dim("softmax", dim, src.dim())
    return Plan((src,), (dim,), tuple(src.shape), src.dtype)


_SOFTMAX = Operator("softmax", ("src",), _plan, c_param_types=(ctypes.c_int32,), c_params=lambda p: p)


def softmax(src, dim=-1, *, backend=None):
    """A new tensor: softmax of ``src`` along ``dim``."""
    return _SOFTMAX.call(None, (src,), (dim,), backend)


def softmax_(out, src, dim=-1, *, backend=None):
    """Writes softmax of ``src`` along ``dim`` into ``out`` (which may be ``src``); returns ``out``."""
    return _SOFTMAX.call(out, (src,), (dim,), backend)


def prepare_softmax(out, src, dim=-1, *, backend=None):
    """A PreparedOp running ``softmax_(out, src, dim)``."""
    return _SOFTMAX.prepare(out, (src,), (dim,), backend)
