"""copy: a contiguous copy, or ``copy_(out, src)`` into any strides and any
supported dtype (src broadcasts to out's shape, like ``Tensor.copy_``)."""

from __future__ import annotations

from .._internal.operator import Operator, Plan


def _plan(out, src):
    if out is None:
        return Plan((src,), (), tuple(src.shape), src.dtype)
    try:
        expanded = src.expand(out.shape)
    except RuntimeError:
        raise ValueError(f"copy: src of shape {tuple(src.shape)} cannot broadcast to out's shape "
                         f"{tuple(out.shape)}") from None
    return Plan((expanded,), (), tuple(out.shape), None)


_COPY = Operator("copy", ("src",), _plan)


def copy(src, *, backend=None):
    """A new contiguous tensor equal to ``src``."""
    return _COPY.call(None, (src,), (), backend)


def copy_(out, src, *, backend=None):
    """Writes ``src`` (converted to out's dtype, broadcast to out's shape) into ``out``; returns ``out``."""
    return _COPY.call(out, (src,), (), backend)


def prepare_copy(out, src, *, backend=None):
    """A PreparedOp running ``copy_(out, src)``; ``.run()`` repeats it."""
    return _COPY.prepare(out, (src,), (), backend)
