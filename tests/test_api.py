"""The Python API contract: errors, backend selection, prepared ops, the
descriptor cache and flat memory."""

from __future__ import annotations

import gc
import os
import re
import tracemalloc

import pytest
import torch

import operator_runtime as oprt
from cases import copy as copy_cases, reduce_sum as reduce_sum_cases, softmax as softmax_cases
from cases import vector_add as vector_add_cases
from operator_runtime import Backend, BackendUnavailableError, OperatorRuntimeError
from operator_runtime._internal import backends as backends_module
from operator_runtime._internal.operator import DESCRIPTOR_CACHE
from operator_runtime_testing import assert_bitwise_equal, assert_untouched, make_out, make_tensor, snapshot

ERROR_CASES = [(module.__name__.split(".")[-1], case)
               for module in (copy_cases, vector_add_cases, reduce_sum_cases, softmax_cases)
               for case in module.api_error_cases()]


# One small call per op: (out-variant, prepare, out-of-place, args builder);
# args(device, gen) returns (out, inputs, params).
def _args_copy(device, gen):
    return make_out((4, 5), torch.float32, device), [make_tensor((4, 5), torch.float32, device, "mixed", gen)], ()


def _args_add(device, gen):
    return (make_out((4, 5), torch.float32, device),
            [make_tensor((4, 5), torch.float32, device, "transposed", gen),
             make_tensor((5,), torch.float32, device, "offset", gen)], ())


def _args_sum(device, gen):
    return make_out((4,), torch.float32, device), [make_tensor((4, 5), torch.float32, device, "sliced", gen)], (1,)


def _args_softmax(device, gen):
    return make_out((4, 5), torch.float32, device), [make_tensor((4, 5), torch.float32, device, "offset", gen)], (1,)


OPS = {
    "copy": (oprt.copy_, oprt.prepare_copy, oprt.copy, _args_copy),
    "vector_add": (oprt.vector_add_, oprt.prepare_vector_add, oprt.vector_add, _args_add),
    "reduce_sum": (oprt.reduce_sum_, oprt.prepare_reduce_sum, oprt.reduce_sum, _args_sum),
    "softmax": (oprt.softmax_, oprt.prepare_softmax, oprt.softmax, _args_softmax),
}
op_names = pytest.mark.parametrize("op", list(OPS))


# -- refused calls -------------------------------------------------------------------

@pytest.mark.parametrize("case", [c for _, c in ERROR_CASES], ids=[f"{m}-{c.name}" for m, c in ERROR_CASES])
def test_refused_call_leaves_tensors_untouched(case, backend, device):
    args = case.make(device)
    tensors = [a for a in args if isinstance(a, torch.Tensor) and a.layout == torch.strided]
    before = [snapshot(t) for t in tensors]
    with pytest.raises(case.error, match=re.escape(case.fragment)):
        case.call(backend, *args)
    for i, (t, s) in enumerate(zip(tensors, before)):
        assert_untouched(t, s, f"argument {i} of the refused call")


def test_error_cases_unpack_as_tuples(backend, device):
    for _, case in ERROR_CASES:
        name, call, error, fragment = case
        assert isinstance(name, str) and callable(call) and issubclass(error, Exception) and fragment


@op_names
@pytest.mark.parametrize("name", ["bogus", "cuda", "", 3])
def test_unknown_backend_name(op, name, device, backend):
    op_, _, _, make = OPS[op]
    out, inputs, params = make(device, torch.Generator().manual_seed(0))
    before = snapshot(out)
    with pytest.raises(ValueError, match="backend"):
        op_(out, *inputs, *params, backend=name)
    assert_untouched(out, before)


@op_names
def test_metax_is_unavailable(op):
    _, _, op_plain, make = OPS[op]
    _, inputs, params = make(torch.device("cpu"), torch.Generator().manual_seed(0))
    for name in ("metax", "MetaX", Backend.METAX):
        with pytest.raises(BackendUnavailableError, match="metax") as info:
            op_plain(*inputs, *params, backend=name)
        assert isinstance(info.value, NotImplementedError)
        assert info.value.backend == "metax" and info.value.reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
@op_names
def test_nvidia_without_gpu(op):
    _, _, op_plain, make = OPS[op]
    _, inputs, params = make(torch.device("cpu"), torch.Generator().manual_seed(0))
    with pytest.raises(BackendUnavailableError, match="no CUDA device") as info:
        op_plain(*inputs, *params, backend="nvidia")
    assert "nvidia" in str(info.value) and isinstance(info.value, NotImplementedError)


def test_unavailable_backends_name_themselves():
    for member in Backend:
        reason = oprt.backend_unavailable_reason(member)
        if reason is None:
            assert member.value in oprt.available_backends()
            continue
        assert isinstance(reason, str) and reason
        assert member.value not in oprt.available_backends()
        with pytest.raises(BackendUnavailableError, match=member.value):
            oprt.copy(torch.ones(3), backend=member)


@op_names
def test_device_mismatch(op, backend, device):
    """An input on another device (meta stands in for a second device)."""
    op_, _, _, make = OPS[op]
    out, inputs, params = make(device, torch.Generator().manual_seed(0))
    before = [snapshot(t) for t in [out, *inputs]]
    meta_inputs = [inputs[0].to("meta")] + inputs[1:]
    with pytest.raises(ValueError, match="meta"):
        op_(out, *meta_inputs, *params, backend=backend)
    with pytest.raises(ValueError, match="meta"):
        op_(torch.empty_like(out, device="meta"), *inputs, *params, backend=backend)
    for t, s in zip([out, *inputs], before):
        assert_untouched(t, s)


@op_names
def test_backend_device_mismatch(op, backend):
    """Tensors on a device the named backend does not serve."""
    op_, _, op_plain, make = OPS[op]
    out, inputs, params = make(torch.device("meta"), torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=backend):
        op_plain(*inputs, *params, backend=backend)
    with pytest.raises(ValueError, match="meta"):
        op_plain(*inputs, *params)  # backend=None: no backend serves meta tensors


def test_failing_c_call_raises_runtime_error(backend, device):
    """A C status reaches Python as OperatorRuntimeError (a RuntimeError) with
    the status and the library's message; the Python checks are bypassed to
    provoke it."""
    from operator_runtime.ops.copy import _COPY

    impl = backends_module.backend_impl(Backend(backend))
    with pytest.raises(OperatorRuntimeError) as info:
        impl.create(_COPY, torch.empty(3, device=device), [torch.empty(4, device=device)], ())
    error = info.value
    assert isinstance(error, RuntimeError)
    assert error.status == 4 and error.status_name == "OPRT_STATUS_BAD_SHAPE"
    assert "shape" in error.message and error.message in str(error)


# -- backend names and out-variants ---------------------------------------------------

@op_names
def test_backend_names_are_case_insensitive(op, backend, device):
    op_, _, op_plain, make = OPS[op]
    _, inputs, params = make(device, torch.Generator().manual_seed(1))
    reference = op_plain(*inputs, *params, backend=backend)
    for name in (backend.upper(), backend.capitalize(), Backend(backend)):
        assert_bitwise_equal(op_plain(*inputs, *params, backend=name), reference, f"backend={name!r}")
    if torch.device(device).type == "cpu" and backend == "cpu":
        assert_bitwise_equal(op_plain(*inputs, *params), reference, "backend=None")


def test_available_backends_lists_cpu():
    names = oprt.available_backends()
    assert "cpu" in names
    assert all(isinstance(n, str) and n == n.lower() for n in names)
    assert oprt.backend_unavailable_reason("cpu") is None
    assert oprt.backend_unavailable_reason("CPU") is None


@op_names
def test_out_variants_return_out(op, backend, device):
    op_, _, _, make = OPS[op]
    out, inputs, params = make(device, torch.Generator().manual_seed(2))
    assert op_(out, *inputs, *params, backend=backend) is out
    assert not torch.isnan(out.cpu()).any()


def test_disjoint_views_of_one_storage_are_accepted(backend, device, gen):
    """Only overlap is refused: out and inputs may share a storage."""
    base = make_tensor((30,), torch.float32, device, "contiguous", gen)
    expected = base[:10].cpu() + base[10:20].cpu()
    assert oprt.vector_add_(base[20:], base[:10], base[10:20], backend=backend) is not None
    assert torch.equal(base[20:].cpu(), expected)
    oprt.copy_(base[:10], base[20:], backend=backend)
    assert torch.equal(base[:10].cpu(), expected)

# -- prepared execution -----------------------------------------------------------------

@op_names
def test_prepared_run_and_rebind(op, backend, device, gen):
    op_, prepare, _, make = OPS[op]
    out, inputs, params = make(device, gen)
    expected = op_(torch.empty_like(out), *inputs, *params, backend=backend)
    prepared = prepare(out, *inputs, *params, backend=backend)
    assert prepared.backend == backend
    assert type(prepared.workspace_size) is int and prepared.workspace_size >= 0
    assert prepared.run() is out
    assert_bitwise_equal(out, expected, "run()")
    new_out, new_inputs, _ = make(device, gen)
    new_expected = op_(torch.empty_like(new_out), *new_inputs, *params, backend=backend)
    assert prepared.run(new_out, *new_inputs) is new_out
    assert_bitwise_equal(new_out, new_expected, "run(new tensors)")
    assert repr(prepared)
    prepared.destroy()
    prepared.destroy()  # idempotent
    with pytest.raises(RuntimeError):
        prepared.run()
    with pytest.raises(RuntimeError):
        prepared.run(new_out, *new_inputs)


@op_names
def test_prepared_context_manager(op, backend, device, gen):
    _, prepare, _, make = OPS[op]
    out, inputs, params = make(device, gen)
    with prepare(out, *inputs, *params, backend=backend) as prepared:
        assert prepared.run() is out
    with pytest.raises(RuntimeError):
        prepared.run()
    prepared.destroy()


def _variants(tensor):
    """Tensors that differ from `tensor` in exactly one of shape, strides, dtype, device."""
    shape = tuple(tensor.shape)
    bigger = (shape[0] + 1,) + shape[1:]
    yield "shape", torch.empty(bigger, dtype=tensor.dtype, device=tensor.device)
    if not tensor.is_contiguous():
        yield "strides", torch.empty(shape, dtype=tensor.dtype, device=tensor.device)
    elif tensor.dim() >= 2:
        yield "strides", torch.empty(shape[::-1], dtype=tensor.dtype, device=tensor.device).t()
    yield "strides", torch.empty(shape[:-1] + (shape[-1] * 2,), dtype=tensor.dtype, device=tensor.device)[..., ::2]
    yield "dtype", torch.empty_like(tensor, dtype=torch.float16)
    yield "device", torch.empty_like(tensor, device="meta")


@op_names
def test_prepared_rebind_refuses_other_layouts(op, backend, device, gen):
    _, prepare, _, make = OPS[op]
    out, inputs, params = make(device, gen)
    with prepare(out, *inputs, *params, backend=backend) as prepared:
        fresh_out, fresh_inputs, _ = make(device, gen)
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


def test_prepared_rebind_refuses_partial_overlap(backend, device, gen):
    src = make_tensor((10,), torch.float32, device, "contiguous", gen)
    out = make_out((10,), torch.float32, device)
    with oprt.prepare_softmax(out, src, backend=backend) as prepared:
        base = make_tensor((12,), torch.float32, device, "contiguous", gen)
        before = snapshot(base)
        with pytest.raises(ValueError, match="overlap"):
            prepared.run(base[2:], base[:10])
        assert_untouched(base, before)


def test_prepared_empty(backend, device, gen):
    src = make_tensor((0, 3), torch.float32, device, "contiguous", gen)
    with oprt.prepare_reduce_sum(make_out((0,), torch.float32, device), src, 1, backend=backend) as prepared:
        assert prepared.run().shape == (0,)


# -- descriptor cache and memory -----------------------------------------------------------

@pytest.fixture
def descriptor_counts(monkeypatch):
    """Counts descriptors created and destroyed while the test runs: the C
    backends' (CDescriptor) and TileLang's (TileLangDescriptor, Python)."""
    from operator_runtime._internal import tilelang_backend

    counts = {"created": 0, "destroyed": 0}
    for cls, is_live in ((backends_module.CDescriptor, lambda d: getattr(d, "_handle", None) is not None),
                         (tilelang_backend.TileLangDescriptor, lambda d: not getattr(d, "_destroyed", True))):
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
    op_, _, op_plain, make = OPS[op]
    out, inputs, params = make(device, gen)
    op_(out, *inputs, *params, backend=backend)
    op_plain(*inputs, *params, backend=backend)
    created, cached = descriptor_counts["created"], len(DESCRIPTOR_CACHE)
    for _ in range(50):
        op_(out, *inputs, *params, backend=backend)
        op_plain(*inputs, *params, backend=backend)
        # new storage with the same layout reuses the descriptor too
        new_out, new_inputs, _ = make(device, gen)
        op_(new_out, *new_inputs, *params, backend=backend)
    assert descriptor_counts["created"] == created
    assert len(DESCRIPTOR_CACHE) == cached


def test_descriptor_cache_is_bounded(backend, device, descriptor_counts):
    DESCRIPTOR_CACHE.clear()
    gc.collect()
    base = descriptor_counts["destroyed"]
    shapes = 3 * DESCRIPTOR_CACHE.capacity
    src = torch.ones(shapes, device=device)
    for n in range(1, shapes + 1):
        oprt.copy(src[:n], backend=backend)
        assert len(DESCRIPTOR_CACHE) <= DESCRIPTOR_CACHE.capacity
    gc.collect()
    assert descriptor_counts["created"] >= shapes
    live = descriptor_counts["created"] - (descriptor_counts["destroyed"] - base)
    assert live <= DESCRIPTOR_CACHE.capacity, "evicted descriptors must be destroyed"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _many_calls(backend, device, count):
    gen = torch.Generator().manual_seed(3)
    calls = [(OPS[op][0], *OPS[op][3](device, gen)) for op in OPS]
    for _ in range(count):
        for op_, out, inputs, params in calls:
            op_(out, *inputs, *params, backend=backend)
        oprt.softmax(calls[3][2][0], 1, backend=backend)  # out-of-place allocates each time


def test_python_memory_flat(backend, device):
    _many_calls(backend, device, 200)
    gc.collect()
    tracemalloc.start()
    try:
        _many_calls(backend, device, 100)
        start, _ = tracemalloc.get_traced_memory()
        _many_calls(backend, device, 1000)
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end - start < 64 * 1024, f"Python heap grew by {end - start} bytes over 5000 calls"


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_process_memory_flat(backend, device):
    _many_calls(backend, device, 500)
    gc.collect()
    cuda = torch.device(device).type == "cuda"
    device_before = torch.cuda.memory_allocated() if cuda else 0
    rss_before = _rss_bytes()
    _many_calls(backend, device, 5000)  # 25000 calls
    gc.collect()
    growth = _rss_bytes() - rss_before
    assert growth < 4 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 25000 calls"
    if cuda:
        assert torch.cuda.memory_allocated() == device_before

