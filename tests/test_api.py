"""The Python API contract of every discovered op: refused calls (the
descriptions' error cases), backend selection, prepared ops, the descriptor
cache and flat memory. Each op's call comes from its description
(described_calls.small_case); no op is named here."""

from __future__ import annotations

import gc
import os
import re
import tracemalloc

import pytest
import torch

import operator_runtime as oprt
from described_calls import OP_NAMES, Call, batched, forms, make_call, operator, planned_out_shape, small_call
from harness import skip_unless_available
from operator_runtime import Backend, BackendUnavailableError, OperatorRuntimeError
from operator_runtime._internal import backends as backends_module
from operator_runtime._internal.operator import DESCRIPTOR_CACHE
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import (assert_bitwise_equal, assert_untouched, make_generator, make_tensor,
                                      snapshot)

ERROR_CASES = [(name, case) for name, description in DESCRIPTIONS.items() for case in description.error_cases]
FORMS = {"op": 0, "op_": 1, "prepare": 2}

op_names = pytest.mark.parametrize("op", OP_NAMES)


def _make(op):
    """args(device, gen) -> a Call of op's small case (same layouts every time)."""
    return lambda device, gen: small_call(op, device, gen)


# -- refused calls -------------------------------------------------------------------

@pytest.mark.parametrize(("op", "case"), [pytest.param(n, c, id=f"{n}-{c.name}") for n, c in ERROR_CASES])
def test_refused_call_leaves_tensors_untouched(op, case, backend, device):
    args = case.make(device)
    tensors = [a for a in args if isinstance(a, torch.Tensor) and a.layout == torch.strided]
    before = [snapshot(t) for t in tensors]
    call = forms(op)[FORMS[case.form]]
    try:
        with pytest.raises(case.error, match=re.escape(case.fragment)):
            call(*args, backend=backend)
    except BackendUnavailableError as error:  # the check needs the kernel (none here)
        pytest.skip(f"{op} on {backend}: {error.reason}")
    for i, (t, s) in enumerate(zip(tensors, before)):
        assert_untouched(t, s, f"argument {i} of the refused call")


@op_names
def test_error_cases_are_well_formed(op):
    cases = DESCRIPTIONS[op].error_cases
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), f"{op}: error case names repeat"
    for case in cases:
        assert isinstance(case.name, str) and case.name and callable(case.make)
        assert case.form in FORMS, (case.name, case.form)
        assert isinstance(case.error, type) and issubclass(case.error, Exception), case.name
        assert isinstance(case.fragment, str) and case.fragment, case.name


@op_names
@pytest.mark.parametrize("name", ["bogus", "cuda", "", 3])
def test_unknown_backend_name(op, name, device, backend):
    call = small_call(op, device, make_generator(0))
    before = snapshot(call.out)
    with pytest.raises(ValueError, match="backend"):
        call.op_(call.out, name)
    assert_untouched(call.out, before)


@op_names
def test_metax_is_unavailable(op):
    call = small_call(op, torch.device("cpu"), make_generator(0))
    for name in ("metax", "MetaX", Backend.METAX):
        with pytest.raises(BackendUnavailableError, match="metax") as info:
            call.op(name)
        assert isinstance(info.value, NotImplementedError)
        assert info.value.backend == "metax" and info.value.reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
@op_names
def test_nvidia_without_gpu(op):
    call = small_call(op, torch.device("cpu"), make_generator(0))
    with pytest.raises(BackendUnavailableError, match="no CUDA device") as info:
        call.op("nvidia")
    assert "nvidia" in str(info.value) and isinstance(info.value, NotImplementedError)


def test_unavailable_backends_name_themselves():
    calls = [small_call(op, torch.device("cpu"), make_generator(0)) for op in OP_NAMES]
    for member in Backend:
        reason = oprt.backend_unavailable_reason(member)
        if reason is None:
            assert member.value in oprt.available_backends()
            continue
        assert isinstance(reason, str) and reason
        assert member.value not in oprt.available_backends()
        for call in calls:
            with pytest.raises(BackendUnavailableError, match=member.value):
                call.op(member)


@op_names
def test_device_mismatch(op, backend, device):
    """An input on another device (meta stands in for a second device)."""
    call = small_call(op, device, make_generator(0))
    out, inputs = call.out, call.inputs
    before = [snapshot(t) for t in [out, *inputs]]
    meta_inputs = [inputs[0].to("meta")] + inputs[1:]
    with pytest.raises(ValueError, match="meta"):
        call.op_(out, backend, meta_inputs)
    with pytest.raises(ValueError, match="meta"):
        call.op_(torch.empty_like(out, device="meta"), backend)
    for t, s in zip([out, *inputs], before):
        assert_untouched(t, s)


@op_names
def test_backend_device_mismatch(op, backend):
    """Tensors on a device the named backend does not serve."""
    call = small_call(op, torch.device("meta"), make_generator(0))
    with pytest.raises(ValueError, match=backend):
        call.op(backend)
    with pytest.raises(ValueError, match="meta"):
        call.op(None)  # backend=None: no backend serves meta tensors


@op_names
def test_failing_c_call_raises_runtime_error(op, backend, device):
    """A C status reaches Python as OperatorRuntimeError (a RuntimeError) with
    the status and the library's message; the Python checks are bypassed (an
    out one row too long goes straight to create) to provoke it."""
    skip_unless_available(op, backend, device)
    description = DESCRIPTIONS[op]
    call = small_call(op, device, make_generator(0))
    plan = description.plan(None, *call.inputs, *description.bound_params(call.params))
    shape = tuple(plan.out_shape)
    bad_out = torch.empty((shape[0] + 1,) + shape[1:], device=device)
    impl = backends_module.backend_impl(Backend(backend))
    with pytest.raises(OperatorRuntimeError) as info:
        impl.create(operator(op), bad_out, plan.inputs, plan.params)
    error = info.value
    assert isinstance(error, RuntimeError)
    assert error.status == 4 and error.status_name == "OPRT_STATUS_BAD_SHAPE"
    assert "out" in error.message and error.message in str(error)


# -- backend names and out-variants ---------------------------------------------------

@op_names
def test_backend_names_are_case_insensitive(op, backend, device):
    skip_unless_available(op, backend, device)
    call = small_call(op, device, make_generator(1))
    reference = call.op(backend)
    for name in (backend.upper(), backend.capitalize(), Backend(backend)):
        assert_bitwise_equal(call.op(name), reference, f"backend={name!r}")
    if torch.device(device).type == "cpu" and backend == "cpu":
        assert_bitwise_equal(call.op(None), reference, "backend=None")


def test_available_backends_lists_cpu():
    names = oprt.available_backends()
    assert "cpu" in names
    assert all(isinstance(n, str) and n == n.lower() for n in names)
    assert oprt.backend_unavailable_reason("cpu") is None
    assert oprt.backend_unavailable_reason("CPU") is None


@op_names
def test_out_variants_return_out(op, backend, device):
    skip_unless_available(op, backend, device)
    call = small_call(op, device, make_generator(2))
    assert call.op_(call.out, backend) is call.out
    assert not torch.isnan(call.out.cpu()).any()
    call.check(call.out, msg=f"{op}_")


def _carve(base, shapes):
    """Contiguous views of `shapes`, one after another in `base`."""
    views, start = [], 0
    for shape in shapes:
        count = torch.Size(shape).numel()
        views.append(base[start:start + count].view(shape))
        start += count
    return views


@op_names
@pytest.mark.parametrize("out_first", [False, True], ids=["out_last", "out_first"])
def test_disjoint_views_of_one_storage_are_accepted(op, out_first, backend, device, gen):
    """Only overlap is refused: out and inputs may share a storage."""
    skip_unless_available(op, backend, device)
    call = small_call(op, device, gen, contiguous=True)
    shapes = [tuple(t.shape) for t in call.inputs]
    out_shape = tuple(call.out.shape)
    total = sum(torch.Size(s).numel() for s in shapes) + torch.Size(out_shape).numel()
    base = make_tensor((total,), torch.float32, device, "contiguous", gen)
    if out_first:
        out, *inputs = _carve(base, [out_shape, *shapes])
    else:
        *inputs, out = _carve(base, [*shapes, out_shape])
    expected_inputs = [t.clone() for t in inputs]
    assert call.op_(out, backend, inputs) is out
    call.check(out, expected_inputs, f"{op}_ into a view of its inputs' storage")
    for t, e in zip(inputs, expected_inputs):
        assert torch.equal(t.cpu(), e.cpu()), "an input changed"


# -- prepared execution -----------------------------------------------------------------

@op_names
def test_prepared_run_and_rebind(op, backend, device, gen):
    skip_unless_available(op, backend, device)
    make = _make(op)
    call = make(device, gen)
    out = call.out
    expected = call.op_(torch.empty_like(out), backend)
    prepared = call.prepare(backend)
    assert prepared.backend == backend
    assert type(prepared.workspace_size) is int and prepared.workspace_size >= 0
    assert prepared.run() is out
    assert_bitwise_equal(out, expected, "run()")
    new = make(device, gen)
    new_expected = new.op_(torch.empty_like(new.out), backend)
    assert prepared.run(new.out, *new.inputs) is new.out
    assert_bitwise_equal(new.out, new_expected, "run(new tensors)")
    assert repr(prepared)
    prepared.destroy()
    prepared.destroy()  # idempotent
    with pytest.raises(RuntimeError):
        prepared.run()
    with pytest.raises(RuntimeError):
        prepared.run(new.out, *new.inputs)


@op_names
def test_prepared_context_manager(op, backend, device, gen):
    skip_unless_available(op, backend, device)
    call = small_call(op, device, gen)
    with call.prepare(backend) as prepared:
        assert prepared.run() is call.out
    with pytest.raises(RuntimeError):
        prepared.run()
    prepared.destroy()


def _strides_that_matter(tensor):
    return [s for s, n in zip(tensor.stride(), tensor.shape) if n > 1]


def _variants(tensor):
    """Tensors that differ from `tensor` in exactly one of shape, strides
    (of a dim longer than 1), dtype, device."""
    shape = tuple(tensor.shape)
    bigger = (shape[0] + 1,) + shape[1:]
    yield "shape", torch.empty(bigger, dtype=tensor.dtype, device=tensor.device)
    reverse = tuple(reversed(range(tensor.dim())))
    others = [torch.empty(shape, dtype=tensor.dtype, device=tensor.device),
              torch.empty(shape[::-1], dtype=tensor.dtype, device=tensor.device).permute(reverse),
              torch.empty(shape[:-1] + (shape[-1] * 2,), dtype=tensor.dtype, device=tensor.device)[..., ::2]]
    for other in others:
        if _strides_that_matter(other) != _strides_that_matter(tensor):
            yield "strides", other
    yield "dtype", torch.empty_like(tensor, dtype=torch.float16)
    yield "device", torch.empty_like(tensor, device="meta")


@op_names
def test_prepared_rebind_refuses_other_layouts(op, backend, device, gen):
    skip_unless_available(op, backend, device)
    make = _make(op)
    call = make(device, gen)
    with call.prepare(backend) as prepared:
        fresh = make(device, gen)
        fresh_out, fresh_inputs = fresh.out, fresh.inputs
        snapshots = [snapshot(t) for t in [fresh_out, *fresh_inputs]]
        for what, bad in _variants(fresh_out):
            with pytest.raises(ValueError):
                prepared.run(bad, *fresh_inputs)
        for i in range(len(fresh_inputs)):
            for what, bad in _variants(fresh_inputs[i]):
                args = list(fresh_inputs)
                args[i] = bad
                with pytest.raises(ValueError):
                    prepared.run(fresh_out, *args)
        with pytest.raises(ValueError):
            prepared.run(fresh_out, *fresh_inputs, fresh_inputs[0])  # one input too many
        with pytest.raises(TypeError):
            prepared.run(fresh_out, *(["not a tensor"] * len(fresh_inputs)))
        for t, s in zip([fresh_out, *fresh_inputs], snapshots):
            assert_untouched(t, s, "tensors of a refused run")


@op_names
def test_prepared_rebind_refuses_partial_overlap(op, backend, device, gen):
    """run(out, ...) with an out one element past input 0, in one storage."""
    skip_unless_available(op, backend, device)
    call = small_call(op, device, gen, contiguous=True)
    src, out = call.inputs[0], call.out
    with call.prepare(backend) as prepared:
        base = make_tensor((src.numel() + out.numel() + 1,), torch.float32, device, "contiguous", gen)
        aliased_src = base[:src.numel()].view(src.shape)
        aliased_out = base[1:1 + out.numel()].view(out.shape)
        before = snapshot(base)
        with pytest.raises(ValueError, match="overlap"):
            prepared.run(aliased_out, aliased_src, *call.inputs[1:])
        assert_untouched(base, before)


def _empty_out_case(op):
    description = DESCRIPTIONS[op]
    for case in description.cases:
        try:
            if torch.Size(planned_out_shape(description, case.shapes, case.params, case.out_shape)).numel() == 0:
                return case
        except (TypeError, ValueError):
            continue
    return None


@op_names
def test_prepared_empty(op, backend, device, gen):
    case = _empty_out_case(op)
    if case is None:
        pytest.skip(f"{op} has no case with an empty out")
    skip_unless_available(op, backend, device)
    call = make_call(op, case, device, gen)
    with call.prepare(backend) as prepared:
        assert prepared.run() is call.out
        assert prepared.run().shape == call.out.shape


# -- descriptor cache and memory -----------------------------------------------------------

@pytest.fixture
def descriptor_counts(monkeypatch):
    """Counts descriptors created and destroyed while the test runs: the C
    backends' (CDescriptor) and TileLang's (TileLangDescriptor, Python)."""
    kinds = [(backends_module.CDescriptor, lambda d: getattr(d, "_handle", None) is not None)]
    try:
        from operator_runtime._internal import tilelang_backend
    except ImportError:  # without TileLang only C descriptors can be made
        pass
    else:
        kinds.append((tilelang_backend.TileLangDescriptor, lambda d: not getattr(d, "_destroyed", True)))

    counts = {"created": 0, "destroyed": 0}
    for cls, is_live in kinds:
        def counting_init(self, *args, _init=cls.__init__, **kwargs):
            _init(self, *args, **kwargs)
            counts["created"] += 1

        def counting_destroy(self, _destroy=cls.destroy, _is_live=is_live):
            if _is_live(self):
                counts["destroyed"] += 1
            _destroy(self)

        monkeypatch.setattr(cls, "__init__", counting_init)
        monkeypatch.setattr(cls, "destroy", counting_destroy)
    return counts


@op_names
def test_steady_state_calls_create_no_descriptor(op, backend, device, gen, descriptor_counts):
    skip_unless_available(op, backend, device)
    make = _make(op)
    call = make(device, gen)
    call.op_(call.out, backend)
    call.op(backend)
    created, cached = descriptor_counts["created"], len(DESCRIPTOR_CACHE)
    for _ in range(50):
        call.op_(call.out, backend)
        call.op(backend)
        # new storage with the same layout reuses the descriptor too
        new = make(device, gen)
        new.op_(new.out, backend)
    assert descriptor_counts["created"] == created
    assert len(DESCRIPTOR_CACHE) == cached


@op_names
def test_descriptor_cache_is_bounded(op, backend, device, descriptor_counts):
    skip_unless_available(op, backend, device)
    DESCRIPTOR_CACHE.clear()
    gc.collect()
    base, created = descriptor_counts["destroyed"], descriptor_counts["created"]
    shapes = 3 * DESCRIPTOR_CACHE.capacity
    op_plain = forms(op)[0]
    storage = {}
    for n in range(1, shapes + 1):
        inputs, params = batched(op, n, device, storage=storage)
        op_plain(*inputs, **params, backend=backend)
        assert len(DESCRIPTOR_CACHE) <= DESCRIPTOR_CACHE.capacity
    gc.collect()
    assert descriptor_counts["created"] - created >= shapes
    live = descriptor_counts["created"] - created - (descriptor_counts["destroyed"] - base)
    assert live <= DESCRIPTOR_CACHE.capacity, "evicted descriptors must be destroyed"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _available_calls(backend, device) -> list[Call]:
    gen = make_generator(3)
    calls = []
    for op in OP_NAMES:
        call = small_call(op, device, gen)
        try:
            call.op(backend)
        except BackendUnavailableError:
            continue
        calls.append(call)
    if not calls:
        pytest.skip(f"no op runs on {backend}")
    return calls


def _many_calls(calls, backend, count):
    for _ in range(count):
        for call in calls:
            call.op_(call.out, backend)
            call.op(backend)  # out-of-place allocates each time


def test_python_memory_flat(backend, device):
    calls = _available_calls(backend, device)
    _many_calls(calls, backend, 200)
    gc.collect()
    tracemalloc.start()
    try:
        _many_calls(calls, backend, 100)
        start, _ = tracemalloc.get_traced_memory()
        _many_calls(calls, backend, 1000)
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end - start < 64 * 1024, f"Python heap grew by {end - start} bytes over {2000 * len(calls)} calls"


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_process_memory_flat(backend, device):
    calls = _available_calls(backend, device)
    _many_calls(calls, backend, 500)
    gc.collect()
    cuda = torch.device(device).type == "cuda"
    device_before = torch.cuda.memory_allocated() if cuda else 0
    rss_before = _rss_bytes()
    _many_calls(calls, backend, 5000)
    gc.collect()
    growth = _rss_bytes() - rss_before
    assert growth < 4 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over {10000 * len(calls)} calls"
    if cuda:
        assert torch.cuda.memory_allocated() == device_before
