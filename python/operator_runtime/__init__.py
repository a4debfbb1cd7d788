"""operator_runtime: memory-bound operators behind one descriptor lifecycle,
on CPU, NVIDIA (CUDA C++) and TileLang backends; the ops are the modules of
operator_runtime.ops, found by convention."""

from .backend import Backend, normalize_backend
from ._internal.backends import available_backends, backend_unavailable_reason
from .errors import BackendUnavailableError, LibraryVersionError, OperatorRuntimeError
from ._internal.library import abi_version
from ._internal.operator import PreparedOp
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all

__version__ = "0.1.0"

__all__ = ["Backend", "abi_version", "available_backends", "backend_unavailable_reason", "BackendUnavailableError",
           "LibraryVersionError", "normalize_backend", "OperatorRuntimeError", "PreparedOp", *_ops_all]
