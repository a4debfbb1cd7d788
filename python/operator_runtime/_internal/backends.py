"""Backend implementations behind one interface.

A backend turns (op, out, inputs, params) into a descriptor with
``workspace_size``, ``variant``, ``execute(out, inputs, workspace, stream)``
and ``destroy()``. Compiled backends (cpu, nvidia, metax) share CBackend,
which finds the op's four C functions by the naming convention
``oprt_<verb>_<op>..._<backend>``; nothing is registered by hand.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
from typing import Sequence

import torch

from ..backend import Backend
from ..errors import BackendUnavailableError
from . import library as lib
from .tensors import tensor_view

STANDARD_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class CDescriptor:
    """A live C descriptor; destroyed by destroy() or when garbage-collected."""

    __slots__ = ("_functions", "_handle", "_execute", "workspace_size", "variant")

    def __init__(self, functions: "COpFunctions", out: torch.Tensor, inputs: Sequence[torch.Tensor], c_params):
        self._functions = functions
        self._handle = None
        self._execute = functions.execute_fast
        handle = ctypes.c_void_p()
        views = [tensor_view(out, with_data=False)] + [tensor_view(t, with_data=False) for t in inputs]
        status = functions.create(ctypes.byref(handle), *[ctypes.byref(v) for v in views], *c_params)
        lib.check_status(status, functions.create.__name__)
        self._handle = handle.value
        size = ctypes.c_size_t()
        lib.check_status(functions.workspace(self._handle, ctypes.byref(size)), functions.workspace.__name__)
        self.workspace_size = size.value
        variant = lib.library().oprt_descriptor_variant(self._handle)
        self.variant = variant.decode() if variant else "unknown"

    @property
    def alive(self) -> bool:
        return self._handle is not None

    @property
    def execute_address(self) -> int:
        """The address of the op's C execute entry point (for fast_call.c)."""
        return self._functions.execute_address

    @property
    def c_execute(self):
        """run(ws_ptr, ws_size, out, inputs, stream), for callers that keep
        the workspace as a raw pointer and size (the fast paths)."""
        return self.run

    def check(self, status: int) -> None:
        """Raises OperatorRuntimeError for a failed execute status."""
        lib.check_status(status, self._functions.execute.__name__)

    def run(self, ws_ptr, ws_size: int, out: torch.Tensor, inputs: Sequence[torch.Tensor], stream) -> None:
        # The hot path of every call: no list building for the usual one or
        # two inputs, and a C function typed once (COpFunctions.execute_fast).
        handle = self._handle
        if handle is None:
            raise RuntimeError("descriptor was destroyed")
        count = len(inputs)
        if count == 1:
            status = self._execute(handle, ws_ptr, ws_size, out.data_ptr(), inputs[0].data_ptr(), stream)
        elif count == 2:
            status = self._execute(handle, ws_ptr, ws_size, out.data_ptr(), inputs[0].data_ptr(),
                                   inputs[1].data_ptr(), stream)
        else:
            status = self._execute(handle, ws_ptr, ws_size, out.data_ptr(), *[t.data_ptr() for t in inputs],
                                   stream)
        if status != 0:
            self.check(status)

    def execute(self, out: torch.Tensor, inputs: Sequence[torch.Tensor], workspace, stream) -> None:
        if workspace is None:
            self.run(None, 0, out, inputs, stream)
        else:
            self.run(workspace.data_ptr(), workspace.numel(), out, inputs, stream)

    def destroy(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            lib.check_status(self._functions.destroy(handle), self._functions.destroy.__name__)

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass


class COpFunctions:
    """The four C entry points of one (op, backend)."""

    def __init__(self, op: str, backend: str, num_inputs: int, c_param_types: Sequence):
        view_p = ctypes.POINTER(lib.TensorView)
        ptr = ctypes.c_void_p
        names = (f"oprt_create_{op}_descriptor_{backend}", f"oprt_get_{op}_workspace_size_{backend}",
                 f"oprt_execute_{op}_{backend}", f"oprt_destroy_{op}_descriptor_{backend}")
        argtypes = ([ctypes.POINTER(ptr), view_p] + [view_p] * num_inputs + list(c_param_types),
                    [ptr, ctypes.POINTER(ctypes.c_size_t)],
                    [ptr, ptr, ctypes.c_size_t, ptr] + [ptr] * num_inputs + [ptr],
                    [ptr])
        functions = [lib.find_function(name, types) for name, types in zip(names, argtypes)]
        missing = [name for name, f in zip(names, functions) if f is None]
        if missing:
            raise BackendUnavailableError(backend, f"this build has no {op} kernel ({missing[0]} is not exported)")
        self.create, self.workspace, self.execute, self.destroy = functions
        self.execute_address = ctypes.cast(self.execute, ctypes.c_void_p).value
        self.execute_fast = _fast_execute(self.execute, num_inputs)


def _fast_execute(function, num_inputs: int):
    """`function` (an execute entry point) retyped for the per-call path. On
    LP64 ABIs size_t and pointers share one register class and width, so
    every argument is declared c_void_p: ctypes converts a Python int to
    c_void_p faster than to c_size_t, and None passes as NULL / 0."""
    if ctypes.sizeof(ctypes.c_size_t) != ctypes.sizeof(ctypes.c_void_p):
        return function
    prototype = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * (num_inputs + 5))
    return prototype(ctypes.cast(function, ctypes.c_void_p).value)


class CBackend:
    """A backend compiled into liboperator_runtime."""

    def __init__(self, backend: Backend, device_type: str, dtypes: Sequence[torch.dtype]):
        self.backend = backend
        self.name = backend.value
        self.device_type = device_type
        self.dtypes = tuple(dtypes)
        probe = lib.find_function(f"oprt_backend_probe_{self.name}", [])
        if probe is None:
            raise BackendUnavailableError(self.name, "the library was built without it "
                                          f"(rebuild with -DCAMP_ENABLE_{self.name.upper()}=ON)")
        status = probe()
        if status != 0:
            raise BackendUnavailableError(self.name, lib.last_error())
        self._functions: dict[str, COpFunctions] = {}

    def create(self, op, out, inputs, params) -> CDescriptor:
        functions = self._functions.get(op.name)
        if functions is None:
            functions = self._functions[op.name] = COpFunctions(op.name, self.name, len(inputs), op.c_param_types)
        if self.device_type == "cuda" and out.device.index is not None:
            with torch.cuda.device(out.device.index):  # device facts are read for the tensors' device
                return CDescriptor(functions, out, inputs, op.c_params(params))
        return CDescriptor(functions, out, inputs, op.c_params(params))

    def stream(self, device: torch.device):
        if self.device_type == "cuda":
            return cuda_raw_stream(device.index)
        return None

    @property
    def raw_stream(self):
        """index -> the current cudaStream_t of that device, as one call into
        torch (None where this torch has no such entry point)."""
        return CUDA_RAW_STREAM if self.device_type == "cuda" else None


# -- CUDA helpers for the per-call path (cheap private torch entry points when
#    this torch build has them, the public API otherwise) ------------------------

CUDA_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)
CUDA_GET_DEVICE = getattr(torch._C, "_cuda_getDevice", None)
_IS_CAPTURING = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


def cuda_raw_stream(index) -> int:
    """The cudaStream_t (as an int; 0 for the legacy default stream) that is
    current on device `index` (None: the current device)."""
    if index is None:
        index = cuda_current_device()
    if CUDA_RAW_STREAM is not None:
        return CUDA_RAW_STREAM(index)
    return torch.cuda.current_stream(index).cuda_stream


def cuda_current_device() -> int:
    return CUDA_GET_DEVICE() if CUDA_GET_DEVICE is not None else torch.cuda.current_device()


def cuda_is_capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph."""
    return _IS_CAPTURING() if _IS_CAPTURING is not None else torch.cuda.is_current_stream_capturing()


def _nvidia() -> CBackend:
    if not torch.cuda.is_available():
        raise BackendUnavailableError("nvidia", "no CUDA device is available (torch.cuda.is_available() is False)")
    return CBackend(Backend.NVIDIA, "cuda", STANDARD_DTYPES)


def _tilelang():
    if importlib.util.find_spec("tilelang") is None:
        raise BackendUnavailableError("tilelang", "the tilelang package is not installed "
                                      "(pip install -e .[tilelang], TileLang 0.1.15)")
    if not torch.cuda.is_available():
        raise BackendUnavailableError("tilelang", "no CUDA device is available for TileLang kernels")
    from .tilelang_backend import TileLangBackend  # present once the TileLang kernels land

    return TileLangBackend()


def _metax():
    raise BackendUnavailableError("metax", "the MetaX backend is a stub in this build; "
                                  "ops/<op>/metax/README.md says what a port needs")


_FACTORIES = {
    Backend.CPU: lambda: CBackend(Backend.CPU, "cpu", STANDARD_DTYPES + (torch.float64,)),
    Backend.NVIDIA: _nvidia,
    Backend.TILELANG: _tilelang,
    Backend.METAX: _metax,
}


@functools.lru_cache(maxsize=None)
def _backend_impl_or_error(backend: Backend):
    try:
        return _FACTORIES[backend](), None
    except BackendUnavailableError as error:
        return None, error
    except ImportError as error:
        return None, BackendUnavailableError(backend.value, f"its implementation failed to import: {error}")
    except OSError as error:  # the compiled library is missing or does not load
        return None, BackendUnavailableError(backend.value, str(error))


def backend_impl(backend: Backend):
    """The implementation of `backend`, or BackendUnavailableError saying why not."""
    impl, error = _backend_impl_or_error(backend)
    if error is not None:
        raise BackendUnavailableError(error.backend, error.reason)
    return impl
