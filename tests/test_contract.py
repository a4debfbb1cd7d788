"""The Python API contract under hostile use, for every discovered op:
prepared ops whose tensors changed since prepare, tensors with torch's
negative or conjugate bit, concurrent runs of one prepared op, a missing
out, nested tensors, interleaved views and numpy integer dims. Each test
that goes through a fast path runs with the compiled one (fast_call.c) and
with the same steps in Python. Calls come from each op's description
(described_calls); no op is named here."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from described_calls import OP_NAMES, cases_needing_workspace, forms, make_call, small_call
from harness import skip_unless_available
from operator_runtime._internal.tensors import shares_memory
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_bitwise_equal, assert_untouched, snapshot

op_names = pytest.mark.parametrize("op", OP_NAMES)


@pytest.fixture
def ready(request, backend, device):
    """The backend, once the op under test is known to run on it."""
    skip_unless_available(request.getfixturevalue("op"), backend, device)
    return backend


def _fresh(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(t, memory_format=torch.contiguous_format)


# -- prepared ops whose tensors changed since prepare ----------------------------------

# Inference tensors (made under torch.inference_mode) have no version
# counter: a prepared op over them compares shapes and strides on every run.
inference_modes = pytest.mark.parametrize("inference", [False, True], ids=["", "inference"])


@op_names
@inference_modes
def test_prepared_run_refuses_a_tensor_whose_layout_changed(op, engine_path, ready, device, gen, inference):
    """set_ to a smaller storage after prepare: run() refuses instead of
    writing (or reading) the prepared extent past the new storage's end."""
    with torch.inference_mode(inference):
        _refuses_a_changed_layout(op, ready, device, gen)


def _refuses_a_changed_layout(op, ready, device, gen):
    count = 1 + len(small_call(op, device, gen).inputs)
    for index in range(count):
        call = small_call(op, device, gen)
        prepared = call.prepare(ready)
        prepared.run()
        target = ([call.out] + call.inputs)[index]
        guard = torch.full((2 * call.out.numel() + 64,), 7.0, dtype=target.dtype, device=device)
        target.set_(guard.untyped_storage(), 0, (1,), (1,))
        out_before = snapshot(call.out)
        with pytest.raises(ValueError, match="changed since prepare"):
            prepared.run()
        assert bool((guard == 7).all()), f"run() wrote past the new storage of tensor {index}"
        assert_untouched(call.out, out_before, "out after the refused run")
        prepared.destroy()


@op_names
@inference_modes
def test_prepared_run_follows_tensors_moved_to_new_memory(op, engine_path, ready, device, gen, inference):
    """set_ to new memory of the same layout: run() computes from and into
    the new memory (overlap checked again); a torch write between runs keeps
    the prepared layout valid."""
    with torch.inference_mode(inference):
        _follows_moved_tensors(op, ready, device, gen)


def _follows_moved_tensors(op, ready, device, gen):
    call = small_call(op, device, gen)
    prepared = call.prepare(ready)
    prepared.run()
    other = small_call(op, device, gen)  # the same case: same layouts, new values
    for mine, theirs in zip([call.out] + call.inputs, [other.out] + other.inputs):
        mine.set_(theirs)
    expected = other.op_(_fresh(other.out), ready)
    assert prepared.run() is call.out
    assert_bitwise_equal(call.out, expected, "run() after set_")
    assert_bitwise_equal(other.out, expected, "the new memory holds the result")
    call.out.fill_(float("nan"))  # bumps the version counter, keeps the layout
    prepared.run()
    assert_bitwise_equal(call.out, expected, "run() after a torch write")
    prepared.destroy()


# -- torch's negative and conjugate bits -----------------------------------------------

def _lazily_negated(t: torch.Tensor) -> torch.Tensor:
    """t's values through the public API's negative-bit view: the memory
    holds -t and torch negates on read."""
    view = torch.complex(torch.zeros_like(t), -t).conj().imag
    assert view.is_neg() and torch.equal(view, t)
    return view


@op_names
def test_inputs_with_the_negative_bit_are_read_as_torch_reads_them(op, engine_path, ready, device, gen):
    call = small_call(op, device, gen, contiguous=True)
    plain_inputs = [torch.complex(torch.zeros_like(t), t).imag for t in call.inputs]  # the lazy ones' layouts
    expected = call.op(ready, plain_inputs)  # records the signatures the lazy inputs share
    call.op_(torch.empty_like(expected), ready, plain_inputs)
    lazy = [_lazily_negated(t) for t in call.inputs]
    for _ in range(2):  # the second time through the recorded signature's fast path
        call.check(call.op(ready, lazy), msg="op() of negative-bit inputs")
        out = torch.empty_like(expected)
        assert call.op_(out, ready, lazy) is out
        call.check(out, msg="op_() of negative-bit inputs")
    with pytest.raises(ValueError, match="negative bit"):
        forms(op)[2](torch.empty_like(expected), *lazy, **call.params, backend=ready)
    prepared = forms(op)[2](torch.empty_like(expected), *plain_inputs, **call.params, backend=ready)
    with pytest.raises(ValueError, match="negative bit"):
        prepared.run(prepared.out, *lazy)
    prepared.destroy()


@op_names
def test_out_with_the_negative_bit_is_refused(op, engine_path, ready, device, gen):
    call = small_call(op, device, gen, contiguous=True)
    ones = torch.ones_like(call.out)
    plain = torch.complex(torch.zeros_like(ones), ones).imag  # the layout of the lazy out, no bit
    call.op_(plain, ready)  # records the signature the lazy out shares
    holder = torch.complex(torch.zeros_like(ones), ones)
    lazy = holder.conj().imag
    assert lazy.is_neg()
    before = snapshot(holder)
    for _ in range(2):
        with pytest.raises(ValueError, match="out has torch's negative bit"):
            call.op_(lazy, ready)
    with pytest.raises(ValueError, match="out has torch's negative bit"):
        call.prepare(ready, out=lazy)
    prepared = call.prepare(ready, out=plain)
    with pytest.raises(ValueError, match="out has torch's negative bit"):
        prepared.run(lazy, *call.inputs)
    assert_untouched(holder, before, "the negative-bit out")
    prepared.destroy()


# -- concurrent runs of one prepared op -----------------------------------------------

@op_names
def test_concurrent_runs_of_one_prepared_op(op, engine_path, ready, device, gen):
    """Threads share one prepared op that needs a workspace, each on its own
    tensors: every result is bitwise the single-threaded one."""
    cases = cases_needing_workspace(op, ready, device, gen)
    if not cases:
        pytest.skip(f"no case of {op} needs a workspace on {ready}")
    case = cases[0]
    prepared = make_call(op, case, device, gen).prepare(ready)
    threads, rounds = 4, 60
    calls = [make_call(op, case, device, gen) for _ in range(threads)]
    expected = [c.op_(_fresh(c.out), ready) for c in calls]
    barrier = threading.Barrier(threads)
    wrong = []

    def work(call, want):
        barrier.wait()
        for round_ in range(rounds):
            prepared.run(call.out, *call.inputs)
            if not torch.equal(call.out.nan_to_num(), want.nan_to_num()):
                wrong.append(round_)
                return

    workers = [threading.Thread(target=work, args=args) for args in zip(calls, expected)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not wrong, f"{op} ({case.name}): concurrent runs gave wrong results (rounds {wrong})"
    prepared.destroy()


# -- smaller gaps ------------------------------------------------------------------------

@op_names
def test_out_variant_requires_out(op, ready, device, gen):
    call = small_call(op, device, gen)
    before = [snapshot(t) for t in call.inputs]
    with pytest.raises(TypeError, match="out is required"):
        call.op_(None, ready)
    with pytest.raises(TypeError, match="out is required"):
        forms(op)[2](None, *call.inputs, **call.params, backend=ready)
    for t, s in zip(call.inputs, before):
        assert_untouched(t, s, "an input of the refused call")


@op_names
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_nested_tensors_are_refused(op, ready, device, gen):
    call = small_call(op, device, gen)
    nested = torch.nested.nested_tensor([torch.ones(2, device=device), torch.ones(3, device=device)])
    for position in range(len(call.inputs)):
        inputs = list(call.inputs)
        inputs[position] = nested
        with pytest.raises(ValueError, match="nested"):
            call.op(ready, inputs)
    with pytest.raises(ValueError, match="nested"):
        call.op_(nested, ready)


def _interleaved(base: torch.Tensor, start: int, shape) -> torch.Tensor:
    """A view of shape `shape` over every other element of base from `start`."""
    count = torch.Size(shape).numel()
    return base[start::2][:count].view(shape)


@op_names
def test_interleaved_views_that_share_no_element(op, engine_path, ready, device, gen):
    """out on the even elements of a storage, the inputs on the odd ones:
    accepted (no element shared); out shifted onto the inputs' elements: refused."""
    call = small_call(op, device, gen, contiguous=True)
    shapes = [tuple(t.shape) for t in call.inputs] + [tuple(call.out.shape)]
    base = torch.randn(2 * max(torch.Size(s).numel() for s in shapes) + 4, generator=gen).to(device)
    inputs = [_interleaved(base, 1, s) for s in shapes[:-1]]
    values = [t.clone() for t in inputs]
    for _ in range(2):
        out = _interleaved(base, 0, shapes[-1])
        assert call.op_(out, ready, inputs) is out
        call.check(out, values, f"{op}_ into the even elements, inputs on the odd ones")
        for t, v in zip(inputs, values):
            assert torch.equal(t, v), "an input changed"
    before = snapshot(base)
    sharing = _interleaved(base, 3, shapes[-1])  # the odd elements, one step on
    if any(shares_memory(sharing, t) for t in inputs):
        with pytest.raises(ValueError, match="overlap"):
            call.op_(sharing, ready, inputs)
        assert_untouched(base, before, "the refused call's storage")


@st.composite
def _views(draw):
    """A view of a 64-byte buffer: dtype, shape and strides (0 included), offset."""
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.float64]))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    strides = tuple(draw(st.integers(0, 5)) for _ in range(ndim))
    item = torch.empty((), dtype=dtype).element_size()
    reach = sum((n - 1) * s for n, s in zip(shape, strides)) + 1
    offset = draw(st.integers(0, max(0, 64 // item - reach)))
    return dtype, shape, strides, offset


def _bytes(view: torch.Tensor, base: int) -> set:
    item = view.element_size()
    starts = {view.data_ptr() - base + item * sum(i * s for i, s in zip(index, view.stride()))
              for index in itertools.product(*map(range, view.shape))}
    return {start + k for start in starts for k in range(item)}


@given(_views(), _views())
def test_shares_memory_is_exact(a, b):
    """The overlap rule against every byte of both views (small views are
    always decided exactly)."""
    buffer = torch.zeros(64, dtype=torch.uint8)
    views = []
    for dtype, shape, strides, offset in (a, b):
        item = torch.empty((), dtype=dtype).element_size()
        if offset * item + item * (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) > 64:
            return
        views.append(buffer.view(dtype).as_strided(shape, strides, offset))
    base = buffer.data_ptr()
    assert shares_memory(*views) == bool(_bytes(views[0], base) & _bytes(views[1], base))


def test_shares_memory_decides_large_interleavings():
    """Views too large to enumerate: the gcd test decides interleaved
    columns; interleaved rows of few runs are enumerated."""
    x = torch.empty(2048, 2048)
    assert not shares_memory(x[:, ::2], x[:, 1::2])
    assert shares_memory(x[:, ::2], x[:, 2::2])
    assert not shares_memory(x[::2], x[1::2])
    assert shares_memory(x[::2], x[2::2])


@op_names
def test_numpy_integer_dims(op, engine_path, ready, device, gen):
    """dim accepts whatever operator.index takes, as torch does."""
    names = [p.name for p in DESCRIPTIONS[op].params]
    if "dim" not in names:
        pytest.skip(f"{op} has no dim")
    call = small_call(op, device, gen)
    dim = call.params.get("dim", DESCRIPTIONS[op].params[names.index("dim")].default)
    if dim is None:
        dim = -1
    as_numpy = tuple(np.int64(d) for d in dim) if isinstance(dim, (tuple, list)) else np.int32(dim)
    expected = forms(op)[0](*call.inputs, **{**call.params, "dim": dim}, backend=ready)
    params = {**call.params, "dim": as_numpy}
    for _ in range(2):
        assert_bitwise_equal(forms(op)[0](*call.inputs, **params, backend=ready), expected, "op(dim=numpy)")
    out = _fresh(expected)
    with forms(op)[2](out, *call.inputs, **params, backend=ready) as prepared:
        prepared.run()
    assert_bitwise_equal(out, expected, "prepare(dim=numpy).run()")
