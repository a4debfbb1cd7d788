"""The C ABI of every discovered op, called directly through ctypes with bad
arguments: each call must return the documented non-zero status and leave a
last-error message that names the function and the offending argument.

Each op's entry points are typed from the signature the library reports
(oprt_<op>_signature_<backend>, generated from ops/<op>/<op>_api.h); a
valid call's views and C params come from the op's description (its plan
and c_params). Tests of a C parameter convention (an int32_t `dim`; a
`dims` list with `num_dims`, and `keepdim`) run for every op whose
signature has it. No op is named here."""

from __future__ import annotations

import ctypes
import random
import re
import threading
from pathlib import Path

import pytest
import torch

from c_abi_calls import (F16, STATUS, create, expect, functions, last_error, planned, signature_of, valid_args,
                         view)
from described_calls import OP_NAMES, default_params
from harness import spec_for, upcast
from operator_runtime._internal.backends import COpFunctions, c_signature
import operator_runtime
from operator_runtime import LibraryVersionError
from operator_runtime._internal.library import ABI_VERSION, check_abi_version, library
from operator_runtime.ops import DESCRIPTIONS

op_names = pytest.mark.parametrize("op", OP_NAMES)


@pytest.fixture
def fns(request, c_backend):
    return functions(request.getfixturevalue("op"), c_backend)


@pytest.fixture
def live(fns, request):
    """A valid descriptor of the op under test, destroyed afterwards."""
    status, handle = create(fns, *valid_args(request.getfixturevalue("op")))
    assert status == 0, last_error()
    yield handle
    assert fns.destroy(handle) == 0


def _argument_names(op, backend):
    return ["out", *signature_of(op, backend)[0]]


def _c_param_names(op, backend):
    return [name for _, name in signature_of(op, backend)[1]]


def _with(op, backend, c_params, **values):
    """c_params with the named C parameters replaced."""
    names = _c_param_names(op, backend)
    c_params = list(c_params)
    for name, value in values.items():
        c_params[names.index(name)] = value
    return c_params


# -- the signature ------------------------------------------------------------------------

@op_names
def test_signature_matches_the_description(op, c_backend):
    """The C header's argument list and the Python description agree: the
    same inputs, in order, and as many C params as c_params gives."""
    inputs, params = signature_of(op, c_backend)
    assert inputs == tuple(DESCRIPTIONS[op].inputs)
    assert len(valid_args(op)[2]) == len(params), (params, valid_args(op)[2])


# -- create ---------------------------------------------------------------------------

@op_names
def test_null_handle_pointer(op, fns):
    out, inputs, params = valid_args(op)
    status = fns.create(None, ctypes.byref(out), *[ctypes.byref(v) for v in inputs], *params)
    expect(status, "OPRT_STATUS_NULL_POINTER", f"create_{op}", "desc")


@op_names
def test_null_views(op, fns, c_backend):
    for position, name in enumerate(_argument_names(op, c_backend)):
        out, inputs, params = valid_args(op)
        views = [out, *inputs]
        views[position] = None
        status, handle = create(fns, views[0], views[1:], params)
        expect(status, "OPRT_STATUS_NULL_POINTER", name)
        assert handle is None


def _each_view_broken(op, backend, fns, breaker, status_name, *fragments):
    """Breaks one view at a time (via breaker(view)) and expects the status."""
    for position, name in enumerate(_argument_names(op, backend)):
        out, inputs, params = valid_args(op)
        views = [out, *inputs]
        breaker(views[position])
        status, handle = create(fns, views[0], views[1:], params)
        expect(status, status_name, name, *fragments)
        assert handle is None


@op_names
@pytest.mark.parametrize("ndim", [-1, 9, 1000])
def test_bad_ndim(op, fns, c_backend, ndim):
    _each_view_broken(op, c_backend, fns, lambda v: setattr(v, "ndim", ndim), "OPRT_STATUS_BAD_SHAPE", "ndim")


@op_names
def test_negative_size(op, fns, c_backend):
    def breaker(v):
        v.ndim = max(v.ndim, 1)
        v.shape[0] = -2
    _each_view_broken(op, c_backend, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "negative")


@op_names
@pytest.mark.parametrize("code", [99, -1, 4])
def test_unknown_dtype_code(op, fns, c_backend, code):
    _each_view_broken(op, c_backend, fns, lambda v: setattr(v, "dtype", code), "OPRT_STATUS_UNSUPPORTED_DTYPE",
                      "dtype")


@op_names
def test_element_count_overflow(op, fns, c_backend):
    def breaker(v):
        v.ndim = 2
        v.shape[0] = v.shape[1] = 2 ** 40
        v.strides[0], v.strides[1] = 2 ** 40, 1
    _each_view_broken(op, c_backend, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "overflow")


@op_names
def test_byte_extent_overflow(op, fns, c_backend):
    def breaker(v):  # few elements, but far apart
        v.ndim = 1
        v.shape[0], v.strides[0] = 4, 2 ** 62
    _each_view_broken(op, c_backend, fns, breaker, "OPRT_STATUS_BAD_SHAPE", "overflow")


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


def _python_accepts_mixed_dtypes(op) -> bool:
    """Whether the Python plan takes a float32 out with the last input float16
    (an op whose out may take any dtype converts; the others refuse)."""
    description = DESCRIPTIONS[op]
    shapes = [(2, 3)] * len(description.inputs)
    inputs = [torch.empty(s, device="meta") for s in shapes]
    inputs[-1] = inputs[-1].half()
    out = torch.empty(planned(op, shapes)[0], device="meta")
    try:
        plan = description.plan(out, *inputs, *default_params(description, inputs))
    except TypeError:
        return False
    return plan.out_dtype is None or plan.out_dtype == out.dtype


@op_names
def test_mixed_dtypes_as_the_python_plan_says(op, fns):
    """The last input in float16, out in float32: C refuses exactly where the
    Python plan does (UNSUPPORTED_DTYPE), and converts where it converts."""
    out, inputs, params = valid_args(op)
    inputs[-1].dtype = F16
    status, handle = create(fns, out, inputs, params)
    if _python_accepts_mixed_dtypes(op):
        assert status == 0, last_error()
        assert fns.destroy(handle) == 0
    else:
        expect(status, "OPRT_STATUS_UNSUPPORTED_DTYPE", "dtype")
        assert handle is None


# -- C parameter conventions (run for every op whose signature has them) ----------------------

def _require_params(op, backend, *wanted):
    names = _c_param_names(op, backend)
    if not all(w in names for w in wanted):
        pytest.skip(f"{op}'s C signature has no {', '.join(wanted)} ({', '.join(names) or 'no params'})")


@op_names
@pytest.mark.parametrize("dim", [2, -3, 100])
def test_int_dim_out_of_range(op, fns, c_backend, dim):
    """A `dim` outside -ndim..ndim-1 (here of a 2-d tensor) is refused."""
    _require_params(op, c_backend, "dim")
    out, inputs, params = valid_args(op)
    status, _ = create(fns, out, inputs, _with(op, c_backend, params, dim=dim))
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT", "dim")


def _dims(values):
    return (ctypes.c_int32 * max(len(values), 1))(*values)


@op_names
@pytest.mark.parametrize("dims", [[2], [-3], [1, -1]], ids=["too_large", "too_negative", "repeated"])
def test_dims_out_of_range_or_repeated(op, fns, c_backend, dims):
    _require_params(op, c_backend, "dims", "num_dims")
    out, inputs, params = valid_args(op)
    status, _ = create(fns, out, inputs, _with(op, c_backend, params, dims=_dims(dims), num_dims=len(dims)))
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT", "dim")


@op_names
def test_dims_pointer_and_count(op, fns, c_backend):
    _require_params(op, c_backend, "dims", "num_dims")
    out, inputs, params = valid_args(op)
    status, _ = create(fns, out, inputs, _with(op, c_backend, params, dims=None, num_dims=1))
    expect(status, "OPRT_STATUS_NULL_POINTER", "dims")
    status, _ = create(fns, out, inputs, _with(op, c_backend, params, num_dims=-1))
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT")
    status, _ = create(fns, out, inputs, _with(op, c_backend, params, dims=_dims(range(9)), num_dims=9))
    assert status != 0, "9 dims of a 2-d tensor must be refused"
    if "keepdim" in _c_param_names(op, c_backend):
        # keepdim=1 wants an out that keeps the reduced dim (size 1)
        status, _ = create(fns, out, inputs, _with(op, c_backend, params, keepdim=1))
        expect(status, "OPRT_STATUS_BAD_SHAPE", "out")


@op_names
def test_no_dims_is_identity(op, fns, c_backend):
    """num_dims == 0 reduces nothing (dims may then be NULL): out is shaped like src."""
    _require_params(op, c_backend, "dims", "num_dims")
    out, inputs, params = valid_args(op)
    status, handle = create(fns, view((2, 3)), inputs, _with(op, c_backend, params, dims=None, num_dims=0))
    assert status == 0, last_error()
    assert fns.destroy(handle) == 0


# -- workspace / execute / destroy -------------------------------------------------------

def _tensors_for(op, device, shape=(2, 3)):
    """Real tensors (out, inputs) matching valid_args(op, shape)."""
    out_shape, _, _ = planned(op, [shape] * len(DESCRIPTIONS[op].inputs))
    inputs = [torch.randn(shape, device=device) for _ in DESCRIPTIONS[op].inputs]
    return torch.full(out_shape, float("nan"), device=device), inputs


def _execute(fns, handle, out, inputs, workspace=None, workspace_bytes=0):
    """workspace: a tensor, a raw address or None."""
    if isinstance(workspace, torch.Tensor):
        workspace = workspace.data_ptr()
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
    others = [o for o in OP_NAMES if o != op and c_signature(o, c_backend) is not None]
    if not others:
        pytest.skip(f"no other op is built for {c_backend}")
    other = others[0]
    other_fns = functions(other, c_backend)
    status, handle = create(other_fns, *valid_args(other))
    assert status == 0, last_error()
    try:
        size = ctypes.c_size_t(0)
        expect(fns.workspace(handle, ctypes.byref(size)), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
        dummy = ctypes.c_float()
        pointers = [ctypes.addressof(dummy)] * (1 + len(DESCRIPTIONS[op].inputs))
        expect(fns.execute(handle, None, 0, *pointers, None), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
        expect(fns.destroy(handle), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
    finally:
        assert other_fns.destroy(handle) == 0, "the descriptor must survive being refused elsewhere"


@op_names
def test_null_data_pointers(op, fns, live, device, c_backend):
    out, inputs = _tensors_for(op, device)
    workspace = _workspace(fns, live, device)
    for position, name in enumerate(_argument_names(op, c_backend)):
        tensors = [out, *inputs]
        tensors[position] = None
        status = _execute(fns, live, tensors[0], tensors[1:], *workspace)
        expect(status, "OPRT_STATUS_NULL_POINTER", name, "data")
    assert torch.isnan(out.cpu()).all(), "a refused execute must not write out"


def _workspace(fns, handle, device):
    """(buffer, bytes) of a workspace the handle may use: the tensor itself,
    so it stays alive for as long as the caller holds the pair."""
    size = ctypes.c_size_t()
    assert fns.workspace(handle, ctypes.byref(size)) == 0, last_error()
    if size.value == 0:
        return None, 0
    return torch.empty(size.value, dtype=torch.uint8, device=device), size.value


@op_names
def test_execute_round_trip(op, fns, live, device):
    """A valid create/execute, and the variant the descriptor chose."""
    variant = library().oprt_descriptor_variant(live)
    assert variant and variant.decode() not in ("", "unset")
    out, inputs = _tensors_for(op, device)
    assert _execute(fns, live, out, inputs, *_workspace(fns, live, device)) == 0, last_error()
    assert not torch.isnan(out.cpu()).any()
    description = DESCRIPTIONS[op]
    params = dict(zip(description.param_names, default_params(description, inputs)))
    expected = spec_for(op).reference(upcast(inputs), params)
    spec_for(op).check(out, expected.expand(out.shape), inputs, params, f"{op} through the C ABI")


@op_names
def test_empty_tensors_accept_null_data(op, fns, device):
    """require_data: NULL data is fine when a tensor has no elements."""
    status, handle = create(fns, *valid_args(op, shape=(0, 3)))
    assert status == 0, last_error()
    try:
        out, inputs = None, [None] * len(DESCRIPTIONS[op].inputs)
        assert _execute(fns, handle, out, inputs, *_workspace(fns, handle, device)) == 0, last_error()
    finally:
        assert fns.destroy(handle) == 0


def _empty_input_cases():
    """(op, case) of every case whose inputs are empty but whose out is not."""
    found = []
    for name, description in DESCRIPTIONS.items():
        for case in description.cases:
            if case.out_shape is not None or any(torch.Size(s).numel() for s in case.shapes):
                continue
            try:
                out_shape, _, _ = planned(name, case.shapes, case.params)
            except (TypeError, ValueError):
                continue
            if torch.Size(out_shape).numel():
                found.append(pytest.param(name, case, id=f"{name}-{case.name}"))
    return found


@pytest.mark.parametrize(("op", "case"), _empty_input_cases())
def test_empty_inputs_give_the_reference_out(op, case, fns, device):
    """Inputs without elements (NULL data is allowed) but an out with some
    (e.g. a sum over an empty dim): out gets the reference (e.g. zeros)."""
    out_shape, input_shapes, c_params = planned(op, case.shapes, case.params)
    status, handle = create(fns, view(out_shape), [view(s) for s in input_shapes], c_params)
    assert status == 0, last_error()
    out = torch.full(out_shape, float("nan"), device=device)
    try:
        assert _execute(fns, handle, out, [None] * len(input_shapes), *_workspace(fns, handle, device)) == 0, \
            last_error()
    finally:
        assert fns.destroy(handle) == 0
    inputs = [torch.empty(s) for s in case.shapes]
    expected = spec_for(op).reference(upcast(inputs), case.params)
    spec_for(op).check(out, expected, inputs, case.params, f"{op} {case.name} through the C ABI")


def _workspace_candidates():
    """(op, out shape, input shapes, C params) of every benchmark shape,
    smallest first: shapes large enough that a backend might want scratch
    memory. create only reads the views' metadata, so nothing of these sizes
    is allocated until one asks for a workspace."""
    found = []
    for name, description in DESCRIPTIONS.items():
        for bench in description.benchmarks:
            try:
                out_shape, input_shapes, c_params = planned(name, bench.shapes, bench.params)
            except (TypeError, ValueError):
                continue
            found.append((sum(torch.Size(s).numel() for s in bench.shapes), name, out_shape, input_shapes, c_params))
    return [c[1:] for c in sorted(found, key=lambda c: c[0])]


def test_insufficient_workspace(c_backend, device):
    tried = []
    for op, out_shape, input_shapes, c_params in _workspace_candidates():
        if c_signature(op, c_backend) is None:
            continue
        fns = COpFunctions(op, c_backend)
        status, handle = create(fns, view(out_shape), [view(s) for s in input_shapes], c_params)
        assert status == 0, last_error()
        size = ctypes.c_size_t()
        assert fns.workspace(handle, ctypes.byref(size)) == 0
        tried.append(f"{op}{tuple(input_shapes[0])}")
        if size.value == 0:
            assert fns.destroy(handle) == 0
            continue
        out = torch.zeros(out_shape, device=device)
        inputs = [torch.ones(s, device=device) for s in input_shapes]
        scratch = torch.empty(size.value, dtype=torch.uint8, device=device)
        try:
            expect(_execute(fns, handle, out, inputs, None, size.value), "OPRT_STATUS_INSUFFICIENT_WORKSPACE",
                   "workspace")
            expect(_execute(fns, handle, out, inputs, scratch.data_ptr(), size.value - 1),
                   "OPRT_STATUS_INSUFFICIENT_WORKSPACE", "workspace")
            assert torch.equal(out.cpu(), torch.zeros(out_shape)), "a refused execute must not write out"
            assert _execute(fns, handle, out, inputs, scratch.data_ptr(), size.value) == 0, last_error()
        finally:
            assert fns.destroy(handle) == 0
        return  # one case is enough; the check is shared by every descriptor
    pytest.skip(f"no benchmark shape reports workspace_size > 0 on {c_backend}: " + ", ".join(tried))


# -- handles: refused unless live, without reading freed memory ----------------------------------

def _refused_everywhere(fns, handle, device, op, why):
    """Every entry point refuses `handle` (workspace, execute, destroy) and
    oprt_descriptor_variant returns NULL for it."""
    size = ctypes.c_size_t(123)
    status = fns.workspace(handle, ctypes.byref(size))
    assert status == STATUS["OPRT_STATUS_INVALID_DESCRIPTOR"], f"workspace_size accepted {why} ({last_error()!r})"
    assert size.value == 123, f"workspace_size wrote through {why}"
    out, inputs = _tensors_for(op, device)
    assert _execute(fns, handle, out, inputs) == STATUS["OPRT_STATUS_INVALID_DESCRIPTOR"], f"execute ran {why}"
    assert torch.isnan(out.cpu()).all(), f"execute of {why} wrote out"
    assert library().oprt_descriptor_variant(handle) is None, f"oprt_descriptor_variant answered for {why}"
    expect(fns.destroy(handle), "OPRT_STATUS_INVALID_DESCRIPTOR", op)


def _runs(fns, handle, op, device):
    """Executes `handle` on fresh inputs and returns out (checks success)."""
    out, inputs = _tensors_for(op, device)
    assert _execute(fns, handle, out, inputs, *_workspace(fns, handle, device)) == 0, last_error()
    assert not torch.isnan(out.cpu()).any()
    return out


@op_names
def test_destroyed_handle_is_refused(op, fns, device):
    status, handle = create(fns, *valid_args(op))
    assert status == 0, last_error()
    assert fns.destroy(handle) == 0, last_error()
    _refused_everywhere(fns, handle, device, op, "a destroyed handle")


@op_names
def test_double_destroy_never_frees_another_descriptor(op, fns, device):
    """destroy(A) twice is refused, also after a create(B) that takes A's
    place (its memory and its table slot), and B lives on."""
    status, a = create(fns, *valid_args(op))
    assert status == 0, last_error()
    assert fns.destroy(a) == 0, last_error()
    expect(fns.destroy(a), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
    status, b = create(fns, *valid_args(op))
    assert status == 0, last_error()
    try:
        expect(fns.destroy(a), "OPRT_STATUS_INVALID_DESCRIPTOR", op)
        _runs(fns, b, op, device)
    finally:
        assert fns.destroy(b) == 0, f"destroy(A) freed B: {last_error()}"


@op_names
def test_stale_handle_after_its_place_is_reused(op, fns, device):
    """destroy(A); create(B) (same op and shapes: B takes A's memory and slot):
    A is refused everywhere and B still works."""
    status, a = create(fns, *valid_args(op))
    assert status == 0, last_error()
    assert fns.destroy(a) == 0, last_error()
    status, b = create(fns, *valid_args(op))
    assert status == 0, last_error()
    try:
        _refused_everywhere(fns, a, device, op, "a handle destroyed before its place was reused")
        assert library().oprt_descriptor_variant(b), "B lost its variant"
        _runs(fns, b, op, device)
    finally:
        assert fns.destroy(b) == 0, last_error()


@op_names
def test_stale_handle_of_another_op_after_reuse(op, fns, c_backend, device):
    """A destroyed handle of another op whose place this op's new descriptor
    took is refused by both ops."""
    others = [o for o in OP_NAMES if o != op and c_signature(o, c_backend) is not None]
    if not others:
        pytest.skip(f"no other op is built for {c_backend}")
    other_fns = functions(others[0], c_backend)
    status, a = create(other_fns, *valid_args(others[0]))
    assert status == 0, last_error()
    assert other_fns.destroy(a) == 0, last_error()
    status, b = create(fns, *valid_args(op))
    assert status == 0, last_error()
    try:
        _refused_everywhere(fns, a, device, op, f"a destroyed {others[0]} handle")
        expect(other_fns.destroy(a), "OPRT_STATUS_INVALID_DESCRIPTOR", others[0])
        _runs(fns, b, op, device)
    finally:
        assert fns.destroy(b) == 0, last_error()


def _descriptor_like_memory(op, backend, fill_tag: bool):
    """A buffer laid out as a forger would guess a descriptor is: zeros, or
    every word the FNV-1a tag of "<op>/<backend>"."""
    words = (ctypes.c_uint64 * 512)()
    if fill_tag:
        tag = 1469598103934665603
        for byte in f"{op}/{backend}".encode():
            tag = ((tag ^ byte) * 1099511628211) % 2 ** 64
        for i in range(len(words)):
            words[i] = tag
    return words


@op_names
def test_forged_handles_are_refused(op, fns, c_backend, live, device):
    """Values create never returned: pointers to memory shaped like a
    descriptor, a live handle with bits flipped or nudged, small integers,
    random bits. All refused; the live handle keeps working."""
    for fill_tag in (True, False):
        memory = _descriptor_like_memory(op, c_backend, fill_tag)
        _refused_everywhere(fns, ctypes.addressof(memory), device, op,
                            "a pointer to memory " + ("full of the type tag" if fill_tag else "of zeros"))
    rng = random.Random(41)
    forged = {live ^ (1 << bit) for bit in range(64)} | {(live + delta) % 2 ** 64 for delta in range(-8, 9)}
    forged |= set(range(1, 17)) | {2 ** 64 - 1, 2 ** 63} | {rng.getrandbits(64) for _ in range(200)}
    forged -= {live, 0}
    for value in sorted(forged):
        _refused_everywhere(fns, value, device, op, f"forged handle {value:#x}")
    _runs(fns, live, op, device)


@op_names
def test_zeroed_handle_is_refused(op, fns, device):
    _refused_everywhere(fns, None, device, op, "a NULL handle")
    _refused_everywhere(fns, 0, device, op, "a zero handle")


@op_names
def test_handle_values_are_never_reissued(op, fns, device):
    """Many create/destroy cycles (each reusing the last one's place): every
    handle value is new, and every earlier one stays refused."""
    args = valid_args(op)
    handles = []
    for _ in range(3000):
        status, handle = create(fns, *args)
        assert status == 0, last_error()
        handles.append(handle)
        assert fns.destroy(handle) == 0, last_error()
    assert len(set(handles)) == len(handles), f"{len(handles) - len(set(handles))} handle values were issued twice"
    status, live_handle = create(fns, *args)
    assert status == 0, last_error()
    try:
        size = ctypes.c_size_t()
        for handle in handles:
            assert fns.workspace(handle, ctypes.byref(size)) == STATUS["OPRT_STATUS_INVALID_DESCRIPTOR"]
        _runs(fns, live_handle, op, device)
    finally:
        assert fns.destroy(live_handle) == 0, last_error()


@op_names
def test_threaded_create_execute_destroy(op, fns, device):
    """Threads create, execute and destroy their own descriptors at once
    (ctypes drops the GIL in each call): results equal a single-threaded
    run, and each thread's destroyed handles stay refused while the others
    reuse their places."""
    args = valid_args(op)
    out, inputs = _tensors_for(op, device)
    status, handle = create(fns, *args)
    assert status == 0, last_error()
    expected = torch.full_like(out, float("nan"))
    assert _execute(fns, handle, expected, inputs, *_workspace(fns, handle, device)) == 0, last_error()
    assert fns.destroy(handle) == 0
    num_threads, rounds = 4, 300
    start = threading.Barrier(num_threads)
    issued, failures = [[] for _ in range(num_threads)], []

    def worker(slot):
        try:
            mine = torch.full_like(out, float("nan"))
            start.wait()
            for _ in range(rounds):
                status, h = create(fns, *args)
                assert status == 0, last_error()
                issued[slot].append(h)
                workspace = _workspace(fns, h, device)
                mine.fill_(float("nan"))
                assert _execute(fns, h, mine, inputs, *workspace) == 0, last_error()
                assert torch.equal(mine, expected), "a threaded execute differs from the single-threaded one"
                for stale in issued[slot][-4:-1]:  # destroyed; h or another thread's may sit in their place
                    assert _execute(fns, stale, mine, inputs, *workspace) == STATUS["OPRT_STATUS_INVALID_DESCRIPTOR"], \
                        "a destroyed handle ran"
                    assert library().oprt_descriptor_variant(stale) is None
                    assert fns.destroy(stale) == STATUS["OPRT_STATUS_INVALID_DESCRIPTOR"]
                assert fns.destroy(h) == 0, last_error()
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(num_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    every = [h for handles in issued for h in handles]
    assert len(set(every)) == len(every), "a handle value was issued twice"


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


@op_names
def test_last_error_is_per_failure(op, fns, c_backend):
    """Each failure replaces the message: it always describes the latest call."""
    name = _argument_names(op, c_backend)[1]
    out, inputs, params = valid_args(op)
    inputs[0].shape[0] = -2
    create(fns, out, inputs, params)
    first = last_error()
    out, inputs, params = valid_args(op)
    create(fns, None, inputs, params)
    second = last_error()
    assert first != second and name in first and "negative" in first and "out" in second


# -- ABI version ---------------------------------------------------------------------------

def test_abi_version_is_the_headers():
    header = (Path(__file__).resolve().parent.parent / "include/operator_runtime/operator_runtime.h").read_text()
    declared = int(re.search(r"#define OPRT_ABI_VERSION (\d+)", header).group(1))
    assert operator_runtime.abi_version() == declared == ABI_VERSION


class _Library:
    """A stand-in for a loaded library reporting `version` (None: no oprt_abi_version)."""

    def __init__(self, version):
        if version is not None:
            self.oprt_abi_version = lambda: version


@pytest.mark.parametrize("version, fragment", [(ABI_VERSION + 1, f"C ABI version {ABI_VERSION + 1}"),
                                               (None, "no oprt_abi_version")])
def test_another_abi_version_is_refused_at_load(version, fragment):
    with pytest.raises(LibraryVersionError, match=fragment) as caught:
        check_abi_version(_Library(version), "/somewhere/liboperator_runtime.so")
    assert caught.value.expected == ABI_VERSION and caught.value.found == version
    assert "/somewhere/liboperator_runtime.so" in str(caught.value) and "reinstall" in str(caught.value)
