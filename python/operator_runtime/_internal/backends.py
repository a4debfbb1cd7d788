"""Backend implementations behind one interface.

A backend turns (op, out, inputs, params) into a descriptor with
``workspace_size``, ``variant``, ``execute(out, inputs, workspace, stream)``
and ``destroy()``. Compiled backends (cpu, nvidia, metax) share CBackend,
which finds the op's four C functions by the naming convention
``oprt_<verb>_<op>..._<backend>`` (create: the full-argument
``oprt_create_<op>_descriptor_ex_<backend>``); nothing is registered by hand.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
from typing import Sequence

import torch

from ..backend import Backend, parse_backend
from ..errors import BackendUnavailableError
from . import library as lib
from .cuda import CUDA_RAW_STREAM, cuda_raw_stream
from .tensors import STANDARD_DTYPES, tensor_view


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


# C spellings in an op's signature string -> ctypes types.
_C_TYPES = {"int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "double": ctypes.c_double,
            "float": ctypes.c_float, "const int32_t*": ctypes.POINTER(ctypes.c_int32),
            "const int64_t*": ctypes.POINTER(ctypes.c_int64)}


def c_signature(op: str, backend: str) -> tuple[tuple, tuple] | None:
    """(input names, [(C type, name)] of params) from the library's
    oprt_<op>_signature_<backend>(), which the op's C header generates; None
    where this build has no such op."""
    function = lib.find_function(f"oprt_{op}_signature_{backend}", [], ctypes.c_char_p)
    if function is None:
        return None
    inputs, params = [], []
    for item in filter(None, (part.strip() for part in function().decode().split(","))):
        kind, name = item.rsplit(" ", 1)
        if kind == "tensor":
            inputs.append(name)
        else:
            params.append((kind, name))
    return tuple(inputs), tuple(params)


class COpFunctions:
    """The four C entry points of one (op, backend), typed from the
    signature the library reports."""

    def __init__(self, op: str, backend: str):
        signature = c_signature(op, backend)
        if signature is None:
            raise BackendUnavailableError(backend, f"this build has no {op} kernel "
                                          f"(oprt_{op}_signature_{backend} is not exported)")
        inputs, params = signature
        try:
            param_types = [_C_TYPES[kind] for kind, _ in params]
        except KeyError as error:
            raise BackendUnavailableError(backend, f"{op}: the C parameter type {error} has no ctypes mapping")
        self.num_inputs = num_inputs = len(inputs)
        view_p = ctypes.POINTER(lib.TensorView)
        ptr = ctypes.c_void_p
        names = (f"oprt_create_{op}_descriptor_ex_{backend}", f"oprt_get_{op}_workspace_size_{backend}",
                 f"oprt_execute_{op}_{backend}", f"oprt_destroy_{op}_descriptor_{backend}")
        argtypes = ([ctypes.POINTER(ptr), view_p] + [view_p] * num_inputs + param_types,
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
            functions = self._functions[op.name] = COpFunctions(op.name, self.name)
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


def available_backends() -> list[str]:
    """Names of the backends that can run in this process."""
    names = []
    for backend in Backend:
        try:
            backend_impl(backend)
        except BackendUnavailableError:
            continue
        names.append(backend.value)
    return names


def backend_unavailable_reason(backend: str | Backend) -> str | None:
    """None if `backend` can run here, else why it cannot."""
    try:
        backend_impl(parse_backend(backend))
    except BackendUnavailableError as error:
        return error.reason
    return None
