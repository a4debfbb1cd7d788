"""operator_runtime: memory-bound operators behind one descriptor lifecycle,
on CPU, NVIDIA (CUDA C++) and TileLang backends; the ops are the modules of
operator_runtime.ops, found by convention."""

from .backend import Backend
from ._internal.backends import available_backends, backend_unavailable_reason
from .errors import BackendUnavailableError, OperatorRuntimeError
from ._internal.operator import PreparedOp
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all

__version__ = "0.1.0"

__all__ = ["Backend", "available_backends", "backend_unavailable_reason", "BackendUnavailableError",
           "OperatorRuntimeError", "PreparedOp", *_ops_all]
