"""Exception types raised by operator_runtime.

Argument problems use the built-in types: dtype problems raise ``TypeError``;
shape, dim, layout, overlap, device and backend-name problems raise
``ValueError``. Three classes of our own add what the built-ins cannot carry.
"""

from __future__ import annotations


class BackendUnavailableError(NotImplementedError):
    """A backend that exists but cannot run in this process (stub, no device,
    missing package or kernel). ``backend`` and ``reason`` say which and why."""

    def __init__(self, backend: str, reason: str):
        self.backend = backend
        self.reason = reason
        super().__init__(f"backend '{backend}' is not available: {reason}")


class OperatorRuntimeError(RuntimeError):
    """A C entry point returned a failure status. ``status`` is the numeric
    code, ``status_name`` its name, ``message`` the library's last error."""

    def __init__(self, function: str, status: int, status_name: str, message: str):
        self.function = function
        self.status = status
        self.status_name = status_name
        self.message = message
        super().__init__(f"{function} failed with {status_name} ({status}): {message}")


class LibraryVersionError(OSError):
    """The compiled library speaks another C ABI version than this Python
    package was written for (a stale build or a mixed install). ``found``
    is the library's version (None: it predates ``oprt_abi_version``),
    ``expected`` the package's."""

    def __init__(self, path: str, found: int | None, expected: int):
        self.path = path
        self.found = found
        self.expected = expected
        spoken = "no oprt_abi_version (an older build)" if found is None else f"C ABI version {found}"
        super().__init__(f"{path} has {spoken}, but this operator_runtime package was written for C ABI "
                         f"version {expected}; rebuild and reinstall the library with the package "
                         "(pip install ., or cmake --build for $CAMP_BUILD_DIR)")
