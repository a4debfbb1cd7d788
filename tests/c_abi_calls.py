"""Calls into the C ABI through ctypes, shared by the C-level tests
(test_c_abi, test_layouts, test_fuzz_c_abi, test_threads): status codes,
typed entry points, tensor views, and create / last-error helpers."""

from __future__ import annotations

import ctypes

import pytest
import torch

from described_calls import default_params
from operator_runtime import BackendUnavailableError
from operator_runtime._internal.backends import COpFunctions, c_signature
from operator_runtime._internal.library import TensorView, library
from operator_runtime._internal.tensors import DTYPE_CODES
from operator_runtime.ops import DESCRIPTIONS

STATUS = {name: code for code, name in enumerate([
    "OPRT_STATUS_SUCCESS", "OPRT_STATUS_NULL_POINTER", "OPRT_STATUS_INVALID_ARGUMENT",
    "OPRT_STATUS_UNSUPPORTED_DTYPE", "OPRT_STATUS_BAD_SHAPE", "OPRT_STATUS_BAD_STRIDES",
    "OPRT_STATUS_INVALID_DESCRIPTOR", "OPRT_STATUS_INSUFFICIENT_WORKSPACE", "OPRT_STATUS_DEVICE_UNAVAILABLE",
    "OPRT_STATUS_BACKEND_ERROR", "OPRT_STATUS_OUT_OF_MEMORY", "OPRT_STATUS_NOT_IMPLEMENTED",
    "OPRT_STATUS_INTERNAL_ERROR"])}
F32, F16 = DTYPE_CODES[torch.float32], DTYPE_CODES[torch.float16]
PTR = ctypes.c_void_p


def signature_of(op: str, backend: str):
    """(input names, ((C type, name), ...)) of op on backend; skips the test
    when this build has no such kernel."""
    signature = c_signature(op, backend)
    if signature is None:
        pytest.skip(f"this build has no {op} kernel on {backend} (oprt_{op}_signature_{backend} is not exported)")
    return signature


def functions(op: str, backend: str) -> COpFunctions:
    """The four entry points of one (op, backend), typed from its signature."""
    signature_of(op, backend)
    try:
        return COpFunctions(op, backend)
    except BackendUnavailableError as error:
        pytest.skip(error.reason)


def view(shape, strides=None, dtype=F32, data=None, ndim=None) -> TensorView:
    v = TensorView()
    v.data, v.dtype = data, dtype
    v.ndim = len(shape) if ndim is None else ndim
    if strides is None:
        strides, running = [], 1
        for size in reversed(shape):
            strides.insert(0, running)
            running *= max(size, 1)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        v.shape[d], v.strides[d] = size, stride
    return v


def planned(op: str, shapes, params: dict | None = None):
    """(out shape, input shapes after broadcasting, C params) of op on inputs
    of `shapes`: params as given, else the description's defaults."""
    description = DESCRIPTIONS[op]
    inputs = [torch.empty(s, device="meta") for s in shapes]
    values = default_params(description, inputs) if params is None else description.bound_params(params)
    plan = description.plan(None, *inputs, *values)
    return tuple(plan.out_shape), [tuple(t.shape) for t in plan.inputs], list(description.c_params(*plan.params))


def valid_args(op: str, shape=(2, 3)):
    """(out view, input views, C params) of a valid call with every input of `shape`."""
    out_shape, input_shapes, c_params = planned(op, [shape] * len(DESCRIPTIONS[op].inputs))
    return view(out_shape), [view(s) for s in input_shapes], c_params


def create(fns, out, inputs, params):
    """(status, handle) of a create call; views may be None for NULL."""
    handle = PTR()
    refs = [None if v is None else ctypes.byref(v) for v in [out, *inputs]]
    status = fns.create(ctypes.byref(handle), *refs, *params)
    return status, handle.value


def last_error() -> str:
    return library().oprt_last_error().decode()


def expect(status, name, *fragments):
    """`status` is STATUS[name] and the last error mentions every fragment."""
    message = last_error()
    assert status == STATUS[name], (f"got {library().oprt_status_string(status).decode()} ({status}), "
                                    f"expected {name}; last error: {message!r}")
    assert message, "oprt_last_error() is empty after a failure"
    for fragment in fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in last error {message!r}"
