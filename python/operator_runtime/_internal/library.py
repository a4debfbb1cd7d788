"""Finding and loading the compiled library, and the C ABI's ctypes types."""

from __future__ import annotations

import ctypes
import importlib
import importlib.machinery
import importlib.util
import os
from pathlib import Path

import torch

from ..errors import LibraryVersionError, OperatorRuntimeError

LIBRARY_NAME = "liboperator_runtime.so"
MAX_DIMS = 8
# OPRT_ABI_VERSION of include/operator_runtime/operator_runtime.h that this
# package's ctypes types and entry-point names were written for.
ABI_VERSION = 1


class TensorView(ctypes.Structure):
    """oprt_tensor_view_t: strides are in elements."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    ]


def library_path() -> Path:
    """$CAMP_BUILD_DIR (the manual CMake flow) wins; else the copy installed
    next to the package (found through importlib, which also serves editable
    installs whose .so lives outside the source tree)."""
    build_dir = os.environ.get("CAMP_BUILD_DIR")
    if build_dir:
        for candidate in (Path(build_dir) / LIBRARY_NAME, Path(build_dir) / "lib" / LIBRARY_NAME):
            if candidate.is_file():
                return candidate.resolve()
        raise FileNotFoundError(f"CAMP_BUILD_DIR={build_dir} holds no {LIBRARY_NAME}; build it with "
                                f"'cmake -B {build_dir} && cmake --build {build_dir}'")
    spec = importlib.util.find_spec("operator_runtime.liboperator_runtime")
    if spec is not None and spec.origin and Path(spec.origin).is_file():
        return Path(spec.origin)
    local = Path(__file__).resolve().parent.parent / LIBRARY_NAME
    if local.is_file():
        return local
    raise FileNotFoundError(f"{LIBRARY_NAME} not found: install the package with 'pip install -e .' "
                            "or build with CMake and set CAMP_BUILD_DIR to the build folder")


_library: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The loaded library (loaded once, on first use)."""
    global _library
    if _library is None:
        path = library_path()
        lib = ctypes.CDLL(str(path))
        check_abi_version(lib, str(path))
        lib.oprt_status_string.restype = ctypes.c_char_p
        lib.oprt_status_string.argtypes = [ctypes.c_int]
        lib.oprt_last_error.restype = ctypes.c_char_p
        lib.oprt_last_error.argtypes = []
        lib.oprt_descriptor_variant.restype = ctypes.c_char_p
        lib.oprt_descriptor_variant.argtypes = [ctypes.c_void_p]
        _library = lib
    return _library


def check_abi_version(lib, path: str) -> None:
    """Raises LibraryVersionError unless `lib` reports ABI_VERSION."""
    function = getattr(lib, "oprt_abi_version", None)
    found = None
    if function is not None:
        function.argtypes = []
        function.restype = ctypes.c_int
        found = function()
    if found != ABI_VERSION:
        raise LibraryVersionError(path, found, ABI_VERSION)


def abi_version() -> int:
    """The C ABI version of the loaded library (``oprt_abi_version()``)."""
    return library().oprt_abi_version()


def find_function(name: str, argtypes: list, restype=ctypes.c_int):
    """The library's exported function `name`, typed; None when not built."""
    function = getattr(library(), name, None)
    if function is not None:
        function.argtypes = argtypes
        function.restype = restype
    return function


def status_name(status: int) -> str:
    return library().oprt_status_string(status).decode()


def last_error() -> str:
    return library().oprt_last_error().decode(errors="replace")


def check_status(status: int, function: str) -> None:
    """Raises OperatorRuntimeError unless `status` is OPRT_STATUS_SUCCESS."""
    if status != 0:
        raise OperatorRuntimeError(function, status, status_name(status), last_error())


def _extension_module(name: str):
    """The compiled module operator_runtime._internal.<name>, or None where
    it was not built. With $CAMP_BUILD_DIR it is taken from that folder,
    like the library."""
    qualified = f"operator_runtime._internal.{name}"
    build_dir = os.environ.get("CAMP_BUILD_DIR")
    if not build_dir:
        try:
            return importlib.import_module(qualified)
        except ImportError:
            return None
    for folder in (Path(build_dir), Path(build_dir) / "lib"):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            if candidate.is_file():
                spec = importlib.util.spec_from_file_location(qualified, candidate)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    return None


FAST_CALL_INTERFACE = 3  # fast_call.c's kInterface


def fast_call_module():
    """The compiled fast path of the Python API (fast_call.c), or None when
    it was not built (no Python headers at build time), was built from other
    sources (a stale build folder) or OPRT_FAST_CALL=0; the same steps then
    run in Python."""
    if os.environ.get("OPRT_FAST_CALL", "1") == "0":
        return None
    module = _extension_module("_fast_call")
    return module if getattr(module, "INTERFACE", None) == FAST_CALL_INTERFACE else None


def torch_build() -> str:
    """The running torch as _tensor_access records the one it was built for."""
    return f"{torch.__version__}/{torch.version.git_version}"


TENSOR_ACCESS_INTERFACE = 2  # tensor_access.h's OPRT_TENSOR_ACCESS_INTERFACE


def tensor_access_api():
    """The _tensor_access extension's reads of tensor state for fast_call.c
    (a capsule), or None: not built, OPRT_TENSOR_ACCESS=0, built from other
    sources (a stale build folder), or built against another torch than the
    running one (its C++ ABI would not match)."""
    if os.environ.get("OPRT_TENSOR_ACCESS", "1") == "0":
        return None
    try:
        module = _extension_module("_tensor_access")
    except ImportError:  # (built against a torch whose symbols this one lacks)
        return None
    if module is None or getattr(module, "INTERFACE", None) != TENSOR_ACCESS_INTERFACE or \
            module.TORCH_BUILD != torch_build():
        return None
    return module.api
