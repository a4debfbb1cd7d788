"""A property-based fuzz of the C ABI: every discovered op called directly
through ctypes on random shapes (0- and 1-size dims included), random
strides (any dim order, steps, negative and zero strides, anything on size-1
dims), random dtypes (a converting out dtype where the plan allows one),
random params drawn like the ones the op's own cases use, and workspaces of
the exact, a larger and a smaller size (refused with INSUFFICIENT_WORKSPACE).

Every operand lives in its own base buffer with guard elements on both
sides; the C views point into it, so negative strides stay in bounds
without torch having to express them. The out's elements are NaN before the
call; afterwards they must match the float64 torch reference (judged by the
op's description), every other byte of out's buffer (guards and gaps) and
every input byte must be unchanged, and so must the workspace's guard.

Under the sanitizer build (.ci/run) the same calls also prove that nothing
reads or writes outside the buffers. No op is named here."""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import pytest
import torch
from hypothesis import assume, event, given
from hypothesis import strategies as st

from described_calls import OP_NAMES
from harness import SIZES, spec_for, upcast
from operator_runtime import Backend
from operator_runtime._internal.backends import backend_impl
from operator_runtime._internal.tensors import DTYPE_CODES
from operator_runtime.description import REQUIRED
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import make_generator, random_values
# The C call helpers stay in test_c_abi.py (shared from there).
from c_abi_calls import STATUS, create, functions, last_error, view

MAX_ELEMENTS = 4096          # keeps one example cheap; long dims still reach the vector loops' tails
MAX_MEDIUM_ELEMENTS = 2**17  # a few examples big enough for the CPU backend's threaded paths
LONG_SIZES = st.sampled_from([8, 15, 16, 17, 31, 33, 64, 67, 130, 257])
MEDIUM_SIZES = st.sampled_from([1025, 4099, 33000, 70001])
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


# -- operands in guarded base buffers ----------------------------------------------------

@dataclass
class Operand:
    """A strided view into `base` (1-D, on the device): `offsets` holds the
    base index of every element, shaped like the view."""

    base: torch.Tensor
    shape: tuple
    strides: tuple
    origin: int          # base index of element (0, ..., 0)
    offsets: torch.Tensor
    null_data: bool      # an empty view passed with NULL data

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def data(self):
        if self.null_data:
            return None
        return self.base.data_ptr() + self.origin * self.base.element_size()

    def c_view(self):
        return view(self.shape, self.strides, DTYPE_CODES[self.base.dtype], data=self.data)

    def values(self) -> torch.Tensor:
        return self.base[self.offsets]

    def outside_mask(self) -> torch.Tensor:
        """True at every base element the view does not cover."""
        mask = torch.ones(self.base.numel(), dtype=torch.bool, device=self.base.device)
        mask[self.offsets.reshape(-1)] = False
        return mask


def bits(tensor: torch.Tensor) -> torch.Tensor:
    """The raw bits (so NaN == NaN), on the CPU."""
    return tensor.detach().cpu().contiguous().view(_BITS[tensor.element_size()]).clone()


@st.composite
def strides_for(draw, shape, may_repeat: bool) -> tuple:
    """Strides over a random storage order: steps of 1-3, some dims negative
    (sometimes all), zero strides on inputs, anything on size-1 dims."""
    ndim = len(shape)
    order = draw(st.permutations(list(range(ndim))))
    flip_all = draw(st.integers(0, 3)) == 0
    strides = [0] * ndim
    running = 1
    for d in reversed(order):  # innermost first
        if shape[d] <= 1:  # never stepped over: any value is legal
            strides[d] = draw(st.integers(-40, 40))
            continue
        if may_repeat and draw(st.integers(0, 4)) == 0:  # a broadcast dim
            continue
        step = draw(st.sampled_from([1, 1, 1, 2, 3]))
        sign = -1 if flip_all else draw(st.sampled_from([1, 1, -1]))
        strides[d] = sign * step * running
        running *= step * shape[d]
    return tuple(strides)


@st.composite
def operands(draw, shape, dtype, device, *, is_out: bool) -> Operand:
    """A view of `shape` into a fresh base buffer with 1-8 guard elements on
    each side; inputs get random data everywhere, out NaN in its elements and
    random data in its gaps and guards."""
    shape = tuple(shape)
    strides = draw(strides_for(shape, may_repeat=not is_out))
    empty = math.prod(shape) == 0
    low = 0 if empty else sum(min(0, (s - 1) * st_) for s, st_ in zip(shape, strides))
    high = 0 if empty else sum(max(0, (s - 1) * st_) for s, st_ in zip(shape, strides))
    guard_lo, guard_hi = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    origin = guard_lo - low
    count = guard_lo + (high - low + 1) + guard_hi
    base = random_values(count, dtype, make_generator(draw(st.integers(0, 2**31 - 1))), device)
    offsets = torch.full(shape, origin, dtype=torch.int64, device=device)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        along = torch.arange(size, dtype=torch.int64, device=device) * stride
        offsets = offsets + along.reshape([size if k == d else 1 for k in range(len(shape))])
    if is_out:
        base[offsets.reshape(-1)] = float("nan")
    null_data = empty and draw(st.booleans())
    return Operand(base, shape, strides, origin, offsets, null_data)


# -- shapes and params ---------------------------------------------------------------------

def _capped(shape, cap: int) -> tuple:
    """`shape` with its largest dims shrunk until it has at most `cap` elements."""
    shape = list(shape)
    while math.prod(shape) > cap:
        largest = max(range(len(shape)), key=lambda d: shape[d])
        shape[largest] = max(1, shape[largest] // 2)
    return tuple(shape)


@st.composite
def fuzz_shapes(draw) -> tuple:
    shape = draw(st.lists(SIZES, min_size=0, max_size=6))
    medium = draw(st.integers(0, 7)) == 0
    if shape and (medium or draw(st.integers(0, 3)) == 0):  # one long dim
        shape[draw(st.integers(0, len(shape) - 1))] = draw(MEDIUM_SIZES if medium else LONG_SIZES)
    return _capped(shape, MAX_MEDIUM_ELEMENTS if medium else MAX_ELEMENTS)


def _case_values(description, name) -> list:
    return [case.params[name] for case in description.cases if name in case.params]


@st.composite
def dim_values(draw, ndim: int, kinds: set):
    """A dim argument of one of `kinds` (int, None, tuple, list) for a tensor
    of `ndim` dims, negative spellings included."""
    rank = max(ndim, 1)
    kind = draw(st.sampled_from(sorted(kinds, key=str)))
    if kind == "int":
        return draw(st.integers(-rank, rank - 1))
    if kind == "none":
        return None
    dims = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
    dims = [d - ndim if draw(st.booleans()) else d for d in dims]
    return tuple(dims) if kind == "tuple" else list(dims)


def _kind(value) -> str:
    if value is None:
        return "none"
    return {bool: "bool", int: "int", tuple: "tuple", list: "list"}.get(type(value), "other")


@st.composite
def params_for(draw, description, ndim: int) -> dict:
    """Keyword params of the kinds the op's own cases use (an int dim; None,
    tuples or lists of dims; bools), each param sometimes left to its default."""
    params = {}
    for param in description.params:
        seen = _case_values(description, param.name)
        if not seen or (param.default is not REQUIRED and draw(st.integers(0, 4)) == 0):
            continue  # the default
        kinds = {_kind(v) for v in seen} - {"other"}
        if kinds == {"bool"}:
            params[param.name] = draw(st.booleans())
        elif kinds and kinds <= {"int", "none", "tuple", "list"}:
            params[param.name] = draw(dim_values(ndim, kinds))
        else:
            params[param.name] = draw(st.sampled_from(seen))
    return params


def _meta(shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


def _converts(description, out_shape, input_shapes, dtype, values) -> bool:
    """Whether the plan takes an out of another dtype (it then converts)."""
    other = torch.float16 if dtype != torch.float16 else torch.float32
    try:
        plan = description.plan(_meta(out_shape, other), *[_meta(s, dtype) for s in input_shapes], *values)
    except (TypeError, ValueError):
        return False
    return plan.out_dtype is None


# -- the property ----------------------------------------------------------------------------

@dataclass
class FuzzCall:
    op: str
    params: dict
    c_params: list
    out: Operand
    inputs: list
    workspace: str       # "exact", "larger" or "smaller"

    def describe(self) -> str:
        parts = [f"{self.op} params={self.params} workspace={self.workspace}",
                 f"out {self.out.base.dtype} shape={self.out.shape} strides={self.out.strides}"]
        parts += [f"input {k} {t.base.dtype} shape={t.shape} strides={t.strides}" for k, t in enumerate(self.inputs)]
        return "; ".join(parts)


@st.composite
def fuzz_calls(draw, op: str, dtypes: tuple, device) -> FuzzCall:
    description = DESCRIPTIONS[op]
    shape = draw(fuzz_shapes())
    dtype = draw(st.sampled_from(dtypes))
    params = draw(params_for(description, len(shape)))
    inputs_meta = [_meta(shape, dtype) for _ in description.inputs]
    try:
        values = description.bound_params(params)
        plan = description.plan(None, *inputs_meta, *values)
    except (TypeError, ValueError):
        assume(False)
    out_shape, input_shapes = tuple(plan.out_shape), [tuple(t.shape) for t in plan.inputs]
    out_dtype = dtype
    if _converts(description, out_shape, input_shapes, dtype, values):
        out_dtype = draw(st.sampled_from(dtypes))
    inputs = [draw(operands(s, dtype, device, is_out=False)) for s in input_shapes]
    out = draw(operands(out_shape, out_dtype, device, is_out=True))
    workspace = draw(st.sampled_from(["exact", "larger", "smaller"]))
    return FuzzCall(op, params, list(description.c_params(*plan.params)), out, inputs, workspace)


def _workspace(needed: int, kind: str, device, draw_int) -> tuple:
    """(buffer or None, bytes passed, guard start): a buffer with a 64-byte
    guard after the bytes passed."""
    if kind == "smaller":
        given = draw_int(0, needed - 1)
    elif kind == "larger":
        given = needed + draw_int(1, 256)
    else:
        given = needed
    if given == 0 and draw_int(0, 1) == 0:
        return None, 0, 0
    buffer = torch.full((given + 64,), 0xA5, dtype=torch.uint8, device=device)
    return buffer, given, given


def run_call(call: FuzzCall, c_backend: str, draw_int):
    """Creates, sizes, executes and destroys one descriptor; returns (execute
    status, its last error, workspace kind used, workspace buffer, guard start)."""
    fns = functions(call.op, c_backend)
    status, handle = create(fns, call.out.c_view(), [t.c_view() for t in call.inputs], call.c_params)
    assert status == 0, f"create refused a valid call: {last_error()}"
    try:
        size = ctypes.c_size_t(12345)
        assert fns.workspace(handle, ctypes.byref(size)) == 0, last_error()
        kind = "exact" if call.workspace == "smaller" and size.value == 0 else call.workspace
        event(f"workspace {kind}" if size.value else "no workspace")  # --hypothesis-show-statistics
        buffer, given, guard = _workspace(size.value, kind, call.out.base.device, draw_int)
        pointer = None if buffer is None else buffer.data_ptr()
        status = fns.execute(handle, pointer, given, call.out.data, *[t.data for t in call.inputs], None)
        message = last_error() if status else ""
    finally:
        assert fns.destroy(handle) == 0, last_error()
    return status, message, kind, buffer, guard


def _dtypes(c_backend: str) -> tuple:
    return backend_impl(Backend(c_backend)).dtypes


@pytest.mark.parametrize("op", OP_NAMES)
@given(data=st.data())
def test_fuzz_c_abi(op, c_backend, device, data):
    call = data.draw(fuzz_calls(op, _dtypes(c_backend), device), label="call")
    what = call.describe()
    out_before = bits(call.out.base)
    inputs_before = [bits(t.base) for t in call.inputs]
    draw_int = lambda lo, hi: data.draw(st.integers(lo, hi))  # noqa: E731

    status, message, kind, buffer, guard = run_call(call, c_backend, draw_int)

    for k, (t, before) in enumerate(zip(call.inputs, inputs_before)):
        assert torch.equal(bits(t.base), before), f"input {k} was written: {what}"
    if buffer is not None:
        assert bool((buffer[guard:] == 0xA5).all()), f"written past the workspace's {guard} bytes: {what}"
    if kind == "smaller":
        assert status == STATUS["OPRT_STATUS_INSUFFICIENT_WORKSPACE"], (status, message, what)
        assert torch.equal(bits(call.out.base), out_before), f"a refused execute wrote out: {what}"
        return
    assert status == 0, f"execute failed ({message}): {what}"
    outside = call.out.outside_mask().cpu()
    assert torch.equal(bits(call.out.base)[outside], out_before[outside]), \
        f"out's guards or gaps were written: {what}"

    inputs = [t.values() for t in call.inputs]
    actual = call.out.values()
    expected = spec_for(op).reference(upcast(inputs), call.params)
    if tuple(expected.shape) != tuple(actual.shape):
        expected = expected.expand(actual.shape)
    spec_for(op).check(actual, expected, inputs, call.params, what)
