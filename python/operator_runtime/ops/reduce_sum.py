"""reduce_sum: the sum over ``dim`` (an int, a tuple of ints, or None for
all dims), accumulated in float32 or wider, in the input's dtype."""

from __future__ import annotations

import ctypes

from .._internal.operator import Operator, Plan
from .._internal.tensors import normalize_dim


def reduced_dims(op: str, dim, ndim: int) -> tuple:
    """Sorted, normalized dims to reduce. None and () mean every dim (as in torch)."""
    if dim is None:
        dims = list(range(ndim))
    elif isinstance(dim, (tuple, list)):
        dims = [normalize_dim(op, d, ndim) for d in dim] if len(dim) else list(range(ndim))
    else:
        dims = [normalize_dim(op, dim, ndim)]
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim} names a dimension more than once")
    return tuple(sorted(d for d in dims if d < ndim))  # a 0-d tensor has nothing to reduce


def _plan(out, src, dim=-1, keepdim=False):
    if not isinstance(keepdim, bool):
        raise TypeError(f"reduce_sum: keepdim must be a bool, got {type(keepdim).__name__}")
    dims = reduced_dims("reduce_sum", dim, src.dim())
    if keepdim:
        shape = tuple(1 if d in dims else s for d, s in enumerate(src.shape))
    else:
        shape = tuple(s for d, s in enumerate(src.shape) if d not in dims)
    return Plan((src,), (dims, keepdim), shape, src.dtype)


def _c_params(params):
    dims, keepdim = params
    return ((ctypes.c_int32 * max(len(dims), 1))(*dims), len(dims), int(keepdim))


_REDUCE_SUM = Operator("reduce_sum", ("src",), _plan,
                       c_param_types=(ctypes.POINTER(ctypes.c_int32), ctypes.c_int32, ctypes.c_int32),
                       c_params=_c_params)


def reduce_sum(src, dim=-1, keepdim=False, *, backend=None):
    """A new tensor: ``src`` summed over ``dim``."""
    return _REDUCE_SUM.call(None, (src,), (dim, keepdim), backend)


def reduce_sum_(out, src, dim=-1, keepdim=False, *, backend=None):
    """Writes the sum of ``src`` over ``dim`` into ``out``; returns ``out``."""
    return _REDUCE_SUM.call(out, (src,), (dim, keepdim), backend)


def prepare_reduce_sum(out, src, dim=-1, keepdim=False, *, backend=None):
    """A PreparedOp running ``reduce_sum_(out, src, dim, keepdim)``."""
    return _REDUCE_SUM.prepare(out, (src,), (dim, keepdim), backend)
