"""The C ABI called directly through ctypes with bad arguments: each call
must return the documented non-zero status and leave a last-error message
that names the function and the offending argument."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest
import torch

from operator_runtime._internal.library import TensorView, library
from operator_runtime._internal.tensors import DTYPE_CODES

STATUS = {name: code for code, name in enumerate([
    "OPRT_STATUS_SUCCESS", "OPRT_STATUS_NULL_POINTER", "OPRT_STATUS_INVALID_ARGUMENT",
    "OPRT_STATUS_UNSUPPORTED_DTYPE", "OPRT_STATUS_BAD_SHAPE", "OPRT_STATUS_BAD_STRIDES",
    "OPRT_STATUS_INVALID_DESCRIPTOR", "OPRT_STATUS_INSUFFICIENT_WORKSPACE", "OPRT_STATUS_DEVICE_UNAVAILABLE",
    "OPRT_STATUS_BACKEND_ERROR", "OPRT_STATUS_OUT_OF_MEMORY", "OPRT_STATUS_NOT_IMPLEMENTED",
    "OPRT_STATUS_INTERNAL_ERROR"])}
F32, F16 = DTYPE_CODES[torch.float32], DTYPE_CODES[torch.float16]
VIEW_P, PTR = ctypes.POINTER(TensorView), ctypes.c_void_p
DIMS_P = ctypes.POINTER(ctypes.c_int32)

# op -> (names of its input views, ctypes types of its create parameters)
OPS = {
    "copy": (("src",), ()),
    "vector_add": (("a", "b"), ()),
    "reduce_sum": (("src",), (DIMS_P, ctypes.c_int32, ctypes.c_int32)),
    "softmax": (("src",), (ctypes.c_int32,)),
}
op_names = pytest.mark.parametrize("op", list(OPS))


class Functions:
    """The four entry points of one (op, backend), typed as in <op>_api.h."""

    def __init__(self, op: str, backend: str):
        inputs, params = OPS[op]
        lib = library()
        self.create = _bind(lib, f"oprt_create_{op}_descriptor_{backend}",
                            [ctypes.POINTER(PTR), VIEW_P] + [VIEW_P] * len(inputs) + list(params))
        self.workspace = _bind(lib, f"oprt_get_{op}_workspace_size_{backend}", [PTR, ctypes.POINTER(ctypes.c_size_t)])
        self.execute = _bind(lib, f"oprt_execute_{op}_{backend}", [PTR, PTR, ctypes.c_size_t, PTR]
                             + [PTR] * len(inputs) + [PTR])
        self.destroy = _bind(lib, f"oprt_destroy_{op}_descriptor_{backend}", [PTR])


def _bind(lib, name, argtypes):
    function = getattr(lib, name)  # AttributeError: this build lacks the kernel
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function


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


def valid_args(op: str, shape=(2, 3)):
    """(out view, input views, params) of a valid call on `shape`."""
    if op == "reduce_sum":
        return view(shape[:-1]), [view(shape)], [(ctypes.c_int32 * 1)(len(shape) - 1), 1, 0]
    if op == "softmax":
        return view(shape), [view(shape)], [len(shape) - 1]
    return view(shape), [view(shape) for _ in OPS[op][0]], []


def create(functions, out, inputs, params):
    """(status, handle) of a create call; views may be None for NULL."""
    handle = PTR()
    refs = [None if v is None else ctypes.byref(v) for v in [out, *inputs]]
    status = functions.create(ctypes.byref(handle), *refs, *params)
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


@pytest.fixture
def fns(request, c_backend):
    return Functions(request.getfixturevalue("op"), c_backend)


@pytest.fixture
def live(fns, request):
    """A valid descriptor of the op under test, destroyed afterwards."""
    status, handle = create(fns, *valid_args(request.getfixturevalue("op")))
    assert status == 0, last_error()
    yield handle
    assert fns.destroy(handle) == 0


def _argument_names(op):
    return ["out", *OPS[op][0]]


# -- create ---------------------------------------------------------------------------

@op_names
def test_null_handle_pointer(op, fns):
    out, inputs, params = valid_args(op)
    status = fns.create(None, ctypes.byref(out), *[ctypes.byref(v) for v in inputs], *params)
    expect(status, "OPRT_STATUS_NULL_POINTER", f"create_{op}", "desc")


@op_names
def test_null_views(op, fns):
    for position, name in enumerate(_argument_names(op)):
        views = [valid_args(op)[0], *valid_args(op)[1]]
        views[position] = None
        status, handle = create(fns, views[0], views[1:], valid_args(op)[2])
        expect(status, "OPRT_STATUS_NULL_POINTER", name)
        assert handle is None


def _each_view_broken(op, fns, breaker, status_name, *fragments):
    """Breaks one view at a time (via breaker(view)) and expects the status."""
    for position, name in enumerate(_argument_names(op)):
        out, inputs, params = valid_args(op)
        views = [out, *inputs]
        breaker(views[position])
        status, handle = create(fns, views[0], views[1:], params)
        expect(status, status_name, name, *fragments)
        assert handle is None


@op_names
@pytest.mark.parametrize("ndim", [-1, 9, 1000])
def test_bad_ndim(op, fns, ndim):
    _each_view_broken(op, fns, lambda v: setattr(v, "ndim", ndim), "OPRT_STATUS_BAD_SHAPE", "ndim")


@op_names
def test_negative_size(op, fns):
    def breaker(v):
        v.ndim = max(v.ndim, 1)
        v.shape[0] = -2
    _each_view_broken(op, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "negative")


@op_names
@pytest.mark.parametrize("code", [99, -1, 4])
def test_unknown_dtype_code(op, fns, code):
    _each_view_broken(op, fns, lambda v: setattr(v, "dtype", code), "OPRT_STATUS_UNSUPPORTED_DTYPE", "dtype")


@op_names
def test_element_count_overflow(op, fns):
    def breaker(v):
        v.ndim = 2
        v.shape[0] = v.shape[1] = 2 ** 40
        v.strides[0], v.strides[1] = 2 ** 40, 1
    _each_view_broken(op, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "overflow")


@op_names
def test_byte_extent_overflow(op, fns):
    def breaker(v):  # few elements, but far apart
        v.ndim = 1
        v.shape[0], v.strides[0] = 4, 2 ** 62
    _each_view_broken(op, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "overflow")


@op_names
def test_shape_mismatch(op, fns):
    out, inputs, params = valid_args(op)
    out.shape[0] += 1
    status, handle = create(fns, out, inputs, params)
    expect(status, "OPRT_STATUS_BAD_SHAPE", "out")
    assert handle is None


@op_names
def test_out_overlapping_itself(op, fns):
    out, inputs, params = valid_args(op)
    out.strides[0] = 0  # every row of out is the same memory
    status, handle = create(fns, out, inputs, params)
    expect(status, "OPRT_STATUS_BAD_STRIDES", "out")
    assert handle is None


@pytest.mark.parametrize("op", ["vector_add", "reduce_sum", "softmax"])
def test_dtype_mismatch(op, fns):
    out, inputs, params = valid_args(op)
    inputs[-1].dtype = F16
    status, handle = create(fns, out, inputs, params)
    expect(status, "OPRT_STATUS_UNSUPPORTED_DTYPE", "dtype")


@pytest.mark.parametrize("op", ["copy"])
def test_copy_converts_between_dtypes(op, fns):
    out, inputs, params = valid_args(op)
    inputs[0].dtype = F16
    status, handle = create(fns, out, inputs, params)
    assert status == 0, last_error()
    assert fns.destroy(handle) == 0


@pytest.mark.parametrize("op", ["reduce_sum"])
@pytest.mark.parametrize("dims,status_name", [([2], "OPRT_STATUS_INVALID_ARGUMENT"),
                                              ([-3], "OPRT_STATUS_INVALID_ARGUMENT"),
                                              ([1, -1], "OPRT_STATUS_INVALID_ARGUMENT")])
def test_reduce_sum_bad_dims(op, fns, dims, status_name):
    out, inputs, _ = valid_args(op)
    status, _ = create(fns, out, inputs, [(ctypes.c_int32 * len(dims))(*dims), len(dims), 0])
    expect(status, status_name, "dim")


@pytest.mark.parametrize("op", ["reduce_sum"])
def test_reduce_sum_dims_pointer_and_count(op, fns):
    out, inputs, _ = valid_args(op)
    status, _ = create(fns, out, inputs, [None, 1, 0])
    expect(status, "OPRT_STATUS_NULL_POINTER", "dims")
    status, _ = create(fns, out, inputs, [(ctypes.c_int32 * 1)(1), -1, 0])
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT")
    status, _ = create(fns, out, inputs, [(ctypes.c_int32 * 9)(*range(9)), 9, 0])
    assert status != 0, "9 dims of a 2-d tensor must be refused"
    # keepdim=1 wants an out of shape (2, 1)
    status, _ = create(fns, out, inputs, [(ctypes.c_int32 * 1)(1), 1, 1])
    expect(status, "OPRT_STATUS_BAD_SHAPE", "out")


@pytest.mark.parametrize("op", ["reduce_sum"])
def test_reduce_sum_no_dims_is_identity(op, fns):
    """num_dims == 0 reduces nothing (dims may then be NULL)."""
    status, handle = create(fns, view((2, 3)), [view((2, 3))], [None, 0, 0])
    assert status == 0, last_error()
    assert fns.destroy(handle) == 0


@pytest.mark.parametrize("op", ["softmax"])
@pytest.mark.parametrize("dim", [2, -3, 100])
def test_softmax_dim_out_of_range(op, fns, dim):
    out, inputs, _ = valid_args(op)
    status, _ = create(fns, out, inputs, [dim])
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT", "dim")


# -- workspace / execute / destroy -------------------------------------------------------

def _tensors_for(op, device, shape=(2, 3)):
    """Real tensors (out, inputs) matching valid_args(op, shape)."""
    out_shape = shape[:-1] if op == "reduce_sum" else shape
    inputs = [torch.randn(shape, device=device) for _ in OPS[op][0]]
    return torch.full(out_shape, float("nan"), device=device), inputs


def _execute(fns, handle, out, inputs, workspace=None, workspace_bytes=0):
    pointers = [None if t is None else t.data_ptr() for t in [out, *inputs]]
    return fns.execute(handle, workspace, workspace_bytes, *pointers, None)


@op_names
def test_null_descriptor(op, fns, device):
    size = ctypes.c_size_t(123)
    expect(fns.workspace(None, ctypes.byref(size)), "OPRT_STATUS_INVALID_DESCRIPTOR", "NULL")
    out, inputs = _tensors_for(op, device)
    expect(_execute(fns, None, out, inputs), "OPRT_STATUS_INVALID_DESCRIPTOR", "NULL")
    expect(fns.destroy(None), "OPRT_STATUS_INVALID_DESCRIPTOR", "NULL")


@op_names
def test_null_workspace_size_pointer(op, fns, live):
    expect(fns.workspace(live, None), "OPRT_STATUS_NULL_POINTER", "workspace")


@op_names
def test_descriptor_of_another_op(op, fns, c_backend):
    """A descriptor of one op handed to another op's functions is refused,
    never misread."""
    other = "softmax" if op == "copy" else "copy"
    other_fns = Functions(other, c_backend)
    status, handle = create(other_fns, *valid_args(other))
    assert status == 0, last_error()
    try:
        size = ctypes.c_size_t(0)
        expect(fns.workspace(handle, ctypes.byref(size)), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
        dummy = ctypes.c_float()
        pointers = [ctypes.addressof(dummy)] * (1 + len(OPS[op][0]))
        expect(fns.execute(handle, None, 0, *pointers, None), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
        expect(fns.destroy(handle), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
    finally:
        assert other_fns.destroy(handle) == 0, "the descriptor must survive being refused elsewhere"


@op_names
def test_null_data_pointers(op, fns, live, device):
    out, inputs = _tensors_for(op, device)
    workspace = _workspace(fns, live, device)
    for position, name in enumerate(_argument_names(op)):
        tensors = [out, *inputs]
        tensors[position] = None
        status = _execute(fns, live, tensors[0], tensors[1:], *workspace)
        expect(status, "OPRT_STATUS_NULL_POINTER", name, "data")
    assert torch.isnan(out.cpu()).all(), "a refused execute must not write out"


def _workspace(fns, handle, device):
    size = ctypes.c_size_t()
    assert fns.workspace(handle, ctypes.byref(size)) == 0, last_error()
    if size.value == 0:
        return None, 0
    buffer = torch.empty(size.value, dtype=torch.uint8, device=device)
    return buffer.data_ptr(), size.value


@op_names
def test_execute_round_trip(op, fns, live, device):
    """A valid create/execute, and the variant the descriptor chose."""
    variant = library().oprt_descriptor_variant(live)
    assert variant and variant.decode() not in ("", "unset")
    out, inputs = _tensors_for(op, device)
    assert _execute(fns, live, out, inputs, *_workspace(fns, live, device)) == 0, last_error()
    assert not torch.isnan(out.cpu()).any()


@op_names
def test_empty_tensors_accept_null_data(op, fns, device):
    """require_data: NULL data is fine when a tensor has no elements."""
    status, handle = create(fns, *valid_args(op, shape=(0, 3)))
    assert status == 0, last_error()
    try:
        out, inputs = [None], [None] * len(OPS[op][0])
        assert _execute(fns, handle, out[0], inputs, *_workspace(fns, handle, device)) == 0, last_error()
    finally:
        assert fns.destroy(handle) == 0


@pytest.mark.parametrize("op", ["reduce_sum"])
def test_reduce_sum_over_empty_dim_writes_zeros(op, fns, device):
    """src has no elements (NULL is allowed) but out has 3, all zero."""
    status, handle = create(fns, *valid_args(op, shape=(3, 0)))
    assert status == 0, last_error()
    out = torch.full((3,), float("nan"), device=device)
    try:
        assert _execute(fns, handle, out, [None], *_workspace(fns, handle, device)) == 0, last_error()
    finally:
        assert fns.destroy(handle) == 0
    assert torch.equal(out.cpu(), torch.zeros(3))


# Shapes large enough that a backend might want scratch memory; create
# only reads the views' metadata, so nothing of this size is allocated here.
WORKSPACE_CANDIDATES = [
    ("reduce_sum", (1, 1 << 22), [1]), ("reduce_sum", (1 << 22,), [0]), ("reduce_sum", (2048, 2048), [0, 1]),
    ("reduce_sum", (1 << 20, 4), [0]), ("reduce_sum", (4, 1 << 20), [1]), ("reduce_sum", (64, 64, 1024), [0, 2]),
    ("softmax", (1, 1 << 22), [1]), ("softmax", (1 << 20, 4), [0]), ("softmax", (2048, 2048), [0]),
]


def _candidate_args(op, shape, dims):
    if op == "reduce_sum":
        out_shape = [s for d, s in enumerate(shape) if d not in dims]
        return view(out_shape), [view(shape)], [(ctypes.c_int32 * len(dims))(*dims), len(dims), 0]
    return view(shape), [view(shape)], [dims[0]]


def test_insufficient_workspace(c_backend, device):
    found = []
    for op, shape, dims in WORKSPACE_CANDIDATES:
        fns = Functions(op, c_backend)
        status, handle = create(fns, *_candidate_args(op, shape, dims))
        assert status == 0, last_error()
        size = ctypes.c_size_t()
        assert fns.workspace(handle, ctypes.byref(size)) == 0
        if size.value == 0:
            assert fns.destroy(handle) == 0
            continue
        found.append((op, shape, dims, size.value))
        out_shape = [s for d, s in enumerate(shape) if d not in dims] if op == "reduce_sum" else shape
        out, src = torch.zeros(out_shape, device=device), torch.ones(shape, device=device)
        scratch = torch.empty(size.value, dtype=torch.uint8, device=device)
        try:
            expect(_execute(fns, handle, out, [src], None, size.value), "OPRT_STATUS_INSUFFICIENT_WORKSPACE",
                   "workspace")
            expect(_execute(fns, handle, out, [src], scratch.data_ptr(), size.value - 1),
                   "OPRT_STATUS_INSUFFICIENT_WORKSPACE", "workspace")
            assert torch.equal(out.cpu(), torch.zeros(out_shape)), "a refused execute must not write out"
            assert _execute(fns, handle, out, [src], scratch.data_ptr(), size.value) == 0, last_error()
        finally:
            assert fns.destroy(handle) == 0
        break  # one case is enough; the check is shared by every descriptor
    if not found:
        pytest.skip(f"no candidate reports workspace_size > 0 on {c_backend}: "
                    + ", ".join(f"{op}{shape} dims {dims}" for op, shape, dims in WORKSPACE_CANDIDATES))


# -- backend-neutral functions ------------------------------------------------------------

def _header_status_names():
    header = Path(__file__).resolve().parent.parent / "include" / "operator_runtime" / "operator_runtime.h"
    if not header.is_file():
        return None
    return re.findall(r"(OPRT_STATUS_[A-Z_]+)\s*=\s*(\d+)", header.read_text())


def test_status_strings():
    lib = library()
    for name, code in STATUS.items():
        assert lib.oprt_status_string(code).decode() == name
    assert lib.oprt_status_string(99)  # an unknown code still gets a static string
    from_header = _header_status_names()
    if from_header is not None:
        assert {n: int(c) for n, c in from_header} == STATUS, "STATUS is out of date with operator_runtime.h"


def test_descriptor_variant_of_null():
    assert library().oprt_descriptor_variant(None) is None


def test_probe(c_backend):
    probe = getattr(library(), f"oprt_backend_probe_{c_backend}")
    probe.restype = ctypes.c_int
    assert probe() == 0, last_error()


def test_last_error_is_per_failure(c_backend):
    """Each failure replaces the message: it always describes the latest call."""
    fns = Functions("softmax", c_backend)
    out, inputs, _ = valid_args("softmax")
    create(fns, out, inputs, [7])
    first = last_error()
    create(fns, None, inputs, [1])
    second = last_error()
    assert first != second and "dim" in first and "out" in second
