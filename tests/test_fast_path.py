"""The per-call fast path of op(...) and op_(out, ...): a repeated call with
the same signature skips validation and planning. It must give the slow
path's results, notice every signature change, keep refusing bad calls
(partial overlap depends on data pointers, not on the signature), survive
a destroyed descriptor or a cleared cache, stay bounded, and reuse the
workspace buffer only where that is safe. Every test runs twice: with the
compiled fast path (fast_call.c) and with the same steps in Python."""

from __future__ import annotations

import os
import threading

import pytest
import torch

import operator_runtime as oprt
from operator_runtime._internal import operator as engine
from operator_runtime._internal.operator import DESCRIPTOR_CACHE, WORKSPACES
from operator_runtime_testing import assert_bitwise_equal, assert_close, assert_untouched, snapshot


@pytest.fixture
def resolves(monkeypatch):
    """Counts slow-path resolutions (validation + planning)."""
    count = {"n": 0}
    original = engine.Operator._resolve

    def counting(self, *args, **kwargs):
        count["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(engine.Operator, "_resolve", counting)
    return count


def _randn(shape, device, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(dtype).to(device)


# op name -> (out-of-place call, out-variant call, out shape from inputs, inputs builder)
CALLS = {
    "copy": (lambda x: oprt.copy(x[0], backend=BACKEND[0]),
             lambda out, x: oprt.copy_(out, x[0], backend=BACKEND[0]),
             lambda x: x[0].shape, lambda d, s: [_randn((6, 7), d, seed=s)]),
    "vector_add": (lambda x: oprt.vector_add(x[0], x[1], backend=BACKEND[0]),
                   lambda out, x: oprt.vector_add_(out, x[0], x[1], backend=BACKEND[0]),
                   lambda x: x[0].shape, lambda d, s: [_randn((6, 7), d, seed=s), _randn((7,), d, seed=s + 1)]),
    "reduce_sum": (lambda x: oprt.reduce_sum(x[0], 1, backend=BACKEND[0]),
                   lambda out, x: oprt.reduce_sum_(out, x[0], 1, backend=BACKEND[0]),
                   lambda x: x[0].shape[:1], lambda d, s: [_randn((6, 7), d, seed=s)]),
    "softmax": (lambda x: oprt.softmax(x[0], -1, backend=BACKEND[0]),
                lambda out, x: oprt.softmax_(out, x[0], -1, backend=BACKEND[0]),
                lambda x: x[0].shape, lambda d, s: [_randn((6, 7), d, seed=s)]),
}
REFERENCES = {
    "copy": lambda x: x[0],
    "vector_add": lambda x: x[0] + x[1],
    "reduce_sum": lambda x: x[0].sum(1),
    "softmax": lambda x: torch.softmax(x[0], -1),
}
BACKEND = [None]  # set per test by the `named` fixture


@pytest.fixture(autouse=True, params=["native", "python"])
def engine_path(request, monkeypatch):
    """The fast path in C (fast_call.c) or in Python (OPRT_FAST_CALL=0's)."""
    if request.param == "python":
        monkeypatch.setattr(engine, "_NATIVE_CALL", None)
        monkeypatch.setattr(engine, "_NATIVE_RUN", None)
    elif engine._NATIVE_CALL is None:
        pytest.skip("the fast_call extension is not built or OPRT_FAST_CALL=0")
    DESCRIPTOR_CACHE.clear()
    yield request.param
    DESCRIPTOR_CACHE.clear()


@pytest.fixture
def named(backend):
    BACKEND[0] = backend
    yield backend
    BACKEND[0] = None


op_names = pytest.mark.parametrize("op", list(CALLS))


@op_names
def test_fast_path_is_taken_and_matches_slow_path(op, named, device, resolves):
    call, call_, out_shape, make = CALLS[op]
    inputs = make(device, 1)
    DESCRIPTOR_CACHE.clear()
    slow = call(inputs)
    slow_out = torch.full(tuple(out_shape(inputs)), float("nan"), device=device)
    call_(slow_out, inputs)
    assert resolves["n"] == 2
    for seed in range(2, 5):  # new data, same signature: no resolution, same bits as a fresh slow call
        new_inputs = make(device, seed)
        count = resolves["n"]
        fast = call(new_inputs)
        fast_out = torch.full(tuple(out_shape(new_inputs)), float("nan"), device=device)
        assert call_(fast_out, new_inputs) is fast_out
        assert resolves["n"] == count, "a repeated signature went through the slow path"
        DESCRIPTOR_CACHE.clear()
        reference = call(new_inputs)
        assert resolves["n"] == count + 1
        call_(torch.empty_like(fast_out), new_inputs)  # records the out-variant's signature again
        assert_bitwise_equal(fast, reference, f"{op}: fast out-of-place vs slow")
        assert_bitwise_equal(fast_out, reference, f"{op}: fast out-variant vs slow")
        assert fast.is_contiguous() and fast.shape == reference.shape and fast.dtype == reference.dtype
        assert fast.stride() == reference.stride()
        assert_close(fast, REFERENCES[op]([t.double().cpu() for t in new_inputs]), torch.float32, msg=op)
    assert slow.shape == slow_out.shape


@op_names
def test_strides_dtype_and_params_change_the_signature(op, named, device, resolves):
    call, call_, out_shape, make = CALLS[op]
    inputs = make(device, 7)
    DESCRIPTOR_CACHE.clear()
    call(inputs)
    call(inputs)
    before = resolves["n"]
    # a transposed-then-transposed-back copy: same values, other strides
    strided = [t.t().contiguous().t() if t.dim() == 2 else t for t in inputs]
    assert any(s.stride() != t.stride() for s, t in zip(strided, inputs))
    result = call(strided)
    assert resolves["n"] == before + 1
    assert_close(result, REFERENCES[op]([t.double().cpu() for t in inputs]), torch.float32, msg=f"{op} strided")
    halves = [t.half() for t in inputs]
    result = call(halves)
    assert resolves["n"] == before + 2 and result.dtype == torch.float16
    assert_close(result, REFERENCES[op]([t.double().cpu() for t in halves]), torch.float16, msg=f"{op} half")
    # out of another dtype (copy converts) or another layout: a new signature
    out = torch.empty(tuple(out_shape(inputs)), device=device)
    call_(out, inputs)
    call_(out, inputs)
    assert resolves["n"] == before + 3
    if out.dim() == 2:
        out_t = torch.empty(tuple(out_shape(inputs))[::-1], device=device).t()
        call_(out_t, inputs)
        assert resolves["n"] == before + 4
        assert_close(out_t, REFERENCES[op]([t.double().cpu() for t in inputs]), torch.float32, msg=f"{op} out.t()")


def test_softmax_dim_spellings(named, device):
    x = _randn((5, 6), device)
    for dim in (1, -1, 1, -1, 0, -2, 0):
        assert_close(oprt.softmax(x, dim, backend=named), torch.softmax(x.double().cpu(), dim), torch.float32,
                     msg=f"dim={dim}")


@op_names
def test_partial_overlap_refused_on_a_repeated_signature(op, named, device):
    """A first call records the signature with disjoint tensors; a second
    call with the same signature whose out partially overlaps an input must
    still be refused, and leave everything untouched."""
    call, call_, out_shape, make = CALLS[op]
    inputs = make(device, 3)
    shape = tuple(out_shape(inputs))
    numel = torch.Size(shape).numel()
    call_(torch.empty(shape, device=device), inputs)
    call_(torch.empty(shape, device=device), inputs)
    # out and input 0 in one storage, out shifted by one element
    base = torch.zeros(inputs[0].numel() + numel + 1, device=device)
    aliased_input = base[:inputs[0].numel()].view(inputs[0].shape).copy_(inputs[0])
    aliased_out = base[1:1 + numel].view(shape)
    aliased = [aliased_input] + inputs[1:]
    assert aliased_input.stride() == inputs[0].stride() and aliased_out.stride() == torch.empty(shape).stride()
    before = snapshot(base)
    for _ in range(2):
        with pytest.raises(ValueError, match="partially overlaps"):
            call_(aliased_out, aliased)
        assert_untouched(base, before)


@pytest.mark.parametrize("op", ["copy", "vector_add", "softmax"])
def test_in_place_stays_allowed(op, named, device):
    call, call_, _, make = CALLS[op]
    for seed in range(3):
        inputs = make(device, seed)
        expected = REFERENCES[op]([t.double().cpu() for t in inputs])
        assert call_(inputs[0], inputs) is inputs[0]
        assert_close(inputs[0], expected, torch.float32, msg=f"{op} in place, call {seed}")


def test_self_overlapping_out_refused_on_a_repeated_signature(named, device):
    x = _randn((4, 5), device)
    out = torch.empty(4, 5, device=device)
    oprt.copy_(out, x, backend=named)
    expanded = torch.empty(1, 5, device=device).expand(4, 5)
    for _ in range(2):
        with pytest.raises(ValueError, match="overlaps itself"):
            oprt.copy_(expanded, x, backend=named)


@pytest.mark.parametrize("bad", [True, 1.0, (1.0,), (True,)])
def test_params_equal_in_value_but_not_in_type_are_refused(bad, named, device):
    """1 == True == 1.0 hash alike: the signature carries the params' types."""
    x = _randn((4, 5), device)
    for good in (1, (1,), 1, (1,)):
        oprt.reduce_sum(x, good, backend=named)
    with pytest.raises(TypeError):
        oprt.reduce_sum(x, bad, backend=named)
    with pytest.raises(TypeError):
        oprt.reduce_sum(x, bad, backend=named)
    if not isinstance(bad, tuple):
        oprt.softmax(x, 1, backend=named)
        oprt.softmax(x, 1, backend=named)
        with pytest.raises(TypeError):
            oprt.softmax(x, bad, backend=named)


def test_keepdim_must_stay_a_bool(named, device):
    x = _randn((4, 5), device)
    oprt.reduce_sum(x, 1, True, backend=named)
    oprt.reduce_sum(x, 1, True, backend=named)
    with pytest.raises(TypeError, match="keepdim"):
        oprt.reduce_sum(x, 1, 1, backend=named)


def test_non_tensor_refused_after_a_tensor(named, device):
    x = _randn((4, 5), device)
    oprt.softmax(x, backend=named)
    oprt.softmax(x, backend=named)
    with pytest.raises(TypeError, match="torch.Tensor"):
        oprt.softmax([[1.0, 2.0]], backend=named)
    out = torch.empty(4, 5, device=device)
    oprt.softmax_(out, x, backend=named)
    with pytest.raises(TypeError, match="torch.Tensor"):
        oprt.softmax_(3, x, backend=named)


def test_list_params_take_the_slow_path(named, device):
    x = _randn((3, 4, 5), device)
    for _ in range(3):
        assert_close(oprt.reduce_sum(x, [0, 2], backend=named), x.double().cpu().sum((0, 2)), torch.float32)


def test_destroyed_descriptor_is_replaced(named, device):
    x = _randn((4, 5), device)
    first = oprt.softmax(x, backend=named)
    oprt.softmax(x, backend=named)
    for entry in list(DESCRIPTOR_CACHE.calls.values()):
        entry.descriptor.destroy()  # behind the cache's back
    again = oprt.softmax(x, backend=named)
    assert_bitwise_equal(again, first, "after the cached descriptor was destroyed")
    assert_bitwise_equal(oprt.softmax(x, backend=named), first, "and once more")


def test_cleared_cache(named, device):
    x = _randn((4, 5), device)
    first = oprt.copy(x, backend=named)
    oprt.copy(x, backend=named)
    DESCRIPTOR_CACHE.clear()
    assert len(DESCRIPTOR_CACHE) == 0 and not DESCRIPTOR_CACHE.calls
    assert_bitwise_equal(oprt.copy(x, backend=named), first)
    assert len(DESCRIPTOR_CACHE.calls) == 1


def test_call_map_is_bounded_and_tracks_the_descriptors(named, device):
    DESCRIPTOR_CACHE.clear()
    src = torch.ones(DESCRIPTOR_CACHE.capacity + 50, device=device)
    for n in range(1, DESCRIPTOR_CACHE.capacity + 51):
        oprt.copy(src[:n], backend=named)
        oprt.copy_(torch.empty(n, device=device), src[:n], backend=named)
        assert len(DESCRIPTOR_CACHE) <= DESCRIPTOR_CACHE.capacity
        assert len(DESCRIPTOR_CACHE.calls) <= DESCRIPTOR_CACHE.call_capacity
    # every recorded call holds a descriptor that the cache still holds
    live = {id(slot.descriptor) for slot in DESCRIPTOR_CACHE._entries.values()}
    assert all(id(entry.descriptor) in live for entry in DESCRIPTOR_CACHE.calls.values())
    # the most recently used signatures are still fast
    assert_bitwise_equal(oprt.copy(src[:7], backend=named), src[:7])


def test_eviction_keeps_a_hot_signature(named, device, resolves):
    """A signature used on the fast path between insertions survives them
    (the second-chance eviction sees its use), so it stays one lookup."""
    DESCRIPTOR_CACHE.clear()
    hot = _randn((3, 3), device)
    oprt.copy(hot, backend=named)
    src = torch.ones(2 * DESCRIPTOR_CACHE.capacity, device=device)
    for n in range(1, 2 * DESCRIPTOR_CACHE.capacity):
        oprt.copy(src[:n], backend=named)
        oprt.copy(hot, backend=named)
    count = resolves["n"]
    oprt.copy(hot, backend=named)
    assert resolves["n"] == count


def _workspace_case(device, backend):
    """(src, dim) for a reduction whose descriptor on `backend` asks for a workspace."""
    for shape, dim in (((1 << 20,), None), ((2, 1 << 20), -1), ((300, 2001), None)):
        src = _randn(shape, device)
        out = oprt.reduce_sum(src, dim, backend=backend)
        with oprt.prepare_reduce_sum(torch.empty_like(out), src, dim, backend=backend) as prepared:
            if prepared.workspace_size:
                return src, dim
    return None, None


def test_workspace_is_reused_per_thread(named, device):
    src, dim = _workspace_case(device, named)
    if src is None:
        pytest.skip(f"no reduction asks for a workspace on {named}")
    expected = oprt.reduce_sum(src, dim, backend=named)
    buffers = dict(WORKSPACES.buffers)
    assert buffers, "the workspace was not cached"
    for _ in range(3):
        assert_bitwise_equal(oprt.reduce_sum(src, dim, backend=named), expected)
    assert {k: v.data_ptr() for k, v in WORKSPACES.buffers.items()} == {k: v.data_ptr() for k, v in buffers.items()}
    # a smaller request reuses the buffer, a larger one replaces it
    small = src.reshape(-1)[: src.numel() // 2]
    assert_close(oprt.reduce_sum(small, None, backend=named), small.double().cpu().sum(), torch.float32,
                 rtol=1e-5, atol=1e-3)
    # another thread gets its own buffer, and the same bits
    seen = {}

    def worker():
        seen["result"] = oprt.reduce_sum(src, dim, backend=named)
        seen["buffers"] = {k: v.data_ptr() for k, v in WORKSPACES.buffers.items()}

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert_bitwise_equal(seen["result"], expected, "in another thread")
    mine = {v.data_ptr() for v in WORKSPACES.buffers.values()}
    assert not mine & set(seen["buffers"].values()), "threads share a workspace buffer"


def test_prepared_run_unchanged(named, device):
    x = _randn((4, 5), device)
    out = torch.empty(4, 5, device=device)
    with oprt.prepare_softmax(out, x, backend=named) as prepared:
        for _ in range(3):
            assert prepared.run() is out
        assert_bitwise_equal(out, oprt.softmax(x, backend=named))
    with pytest.raises(RuntimeError, match="destroyed"):
        prepared.run()


def test_python_descriptor_gets_the_broadcast_views(named, device, monkeypatch):
    """A descriptor without a C entry point (TileLang's) is called with the
    plan's inputs, broadcast to out's shape, on the fast path as well."""
    from operator_runtime._internal import backends as backends_module
    from operator_runtime._internal import tilelang_backend

    seen = []
    # TileLang's descriptors are Python ones; a C backend's pretend to be
    # one by hiding their C entry point.
    cls = tilelang_backend.TileLangDescriptor if named == "tilelang" else backends_module.CDescriptor
    original = cls.execute

    def recording(self, out, inputs, workspace, stream):
        seen.append([tuple(t.shape) for t in inputs])
        return original(self, out, inputs, workspace, stream)

    if cls is backends_module.CDescriptor:
        monkeypatch.setattr(cls, "c_execute", property(lambda self: None))
        monkeypatch.setattr(cls, "execute_address", property(lambda self: None))
    monkeypatch.setattr(cls, "execute", recording)
    DESCRIPTOR_CACHE.clear()
    a, b = _randn((4, 5), device), _randn((5,), device, seed=1)
    out = torch.empty(4, 5, device=device)
    for _ in range(3):
        assert_close(oprt.vector_add(a, b, backend=named), a.double().cpu() + b.double().cpu(), torch.float32)
        oprt.copy_(out, b, backend=named)
        assert_bitwise_equal(out, b.expand(4, 5).contiguous())
    assert len(seen) == 6 and all(shapes in ([(4, 5), (4, 5)], [(4, 5)]) for shapes in seen), seen


def test_destroyed_python_descriptor_is_noticed():
    from types import SimpleNamespace

    assert engine._alive(SimpleNamespace(_destroyed=True)) is False
    assert engine._alive(SimpleNamespace(_destroyed=False)) is True
    assert engine._alive(SimpleNamespace(alive=False)) is False
    assert engine._alive(object()) is True


def test_fast_call_extension_is_built(engine_path):
    """A build with Python's headers compiles fast_call.c; the API loads it."""
    import sysconfig
    from pathlib import Path

    from operator_runtime._internal import library

    if engine_path == "python":
        pytest.skip("checked once")
    if os.environ.get("OPRT_FAST_CALL") == "0":
        pytest.skip("OPRT_FAST_CALL=0")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("this Python has no headers, so the build could not compile fast_call.c")
    assert library.fast_call_module() is not None


# (inputs, params, out) -> a call of each op's Operator, for key comparisons
def _key_cases(device):
    from operator_runtime.ops.copy import _COPY
    from operator_runtime.ops.reduce_sum import _REDUCE_SUM
    from operator_runtime.ops.softmax import _SOFTMAX
    from operator_runtime.ops.vector_add import _VECTOR_ADD

    x, y = _randn((3, 4), device), _randn((4,), device, seed=1)
    return [
        (_COPY, (x,), (), None, None),
        (_COPY, (x.t(),), (), torch.empty(4, 3, device=device, dtype=torch.float16), "cpu"),
        (_VECTOR_ADD, (x, y), (), None, None),
        (_VECTOR_ADD, (x, y), (), torch.empty(3, 4, device=device), None),
        (_SOFTMAX, (x,), (-1,), None, None),
        (_SOFTMAX, (x,), (True,), None, None),
        (_REDUCE_SUM, (x,), ((0, 1), False), None, None),
        (_REDUCE_SUM, (x,), ((0, True), 1), None, None),
        (_REDUCE_SUM, (x,), (None, True), torch.empty(1, 1, device=device), None),
    ]


def test_native_key_is_the_python_key(engine_path, named, device):
    """fast_call.c must build exactly operator.py's signature key, or the
    entries one side records would never serve the other."""
    if engine_path == "python":
        pytest.skip("compares the C key with the Python one")
    DESCRIPTOR_CACHE.clear()
    for op, inputs, params, out, backend in _key_cases(device):
        key = engine._NATIVE_CALL(op, out, inputs, params, backend)  # nothing cached: the key comes back
        assert type(key) is tuple and key == op._call_key(out, inputs, params, backend), (op.name, params)
    # arguments without a key: None (the slow path explains them)
    from operator_runtime.ops.softmax import _SOFTMAX

    assert engine._NATIVE_CALL(_SOFTMAX, None, ([1.0],), (-1,), None) is None
    assert engine._NATIVE_CALL(_SOFTMAX, None, (_randn((2, 2), device),), ([0],), None) is None


def test_native_path_runs_without_the_python_launch(engine_path, named, device, monkeypatch):
    """A repeated call and a prepared run launch from C: CDescriptor.run is
    never reached."""
    from operator_runtime._internal import backends as backends_module

    if engine_path == "python":
        pytest.skip("checks the C launch")
    if named not in ("cpu", "nvidia"):
        pytest.skip("C descriptors only")
    x = _randn((4, 5), device)
    out = torch.empty(4, 5, device=device)
    expected = oprt.softmax(x, backend=named)
    oprt.softmax_(out, x, backend=named)
    prepared = oprt.prepare_softmax(torch.empty(4, 5, device=device), x, backend=named)
    calls = []

    def recording(function):
        def wrapper(*args):
            calls.append(1)
            return function(*args)
        return wrapper

    # every way the Python paths reach the C execute entry point
    monkeypatch.setattr(backends_module.CDescriptor, "run", recording(backends_module.CDescriptor.run))
    for entry in DESCRIPTOR_CACHE.calls.values():
        if entry.c_execute is not None:
            monkeypatch.setattr(entry, "c_execute", recording(entry.c_execute))
    if prepared._c_execute is not None:
        monkeypatch.setattr(prepared, "_c_execute", recording(prepared._c_execute))
    assert_bitwise_equal(oprt.softmax(x, backend=named), expected)
    assert oprt.softmax_(out, x, backend=named) is out
    assert prepared.run() is prepared.out
    assert_bitwise_equal(out, expected)
    assert_bitwise_equal(prepared.out, expected)
    assert not calls, "a call went through the Python launch"


def test_native_launch_failure_raises_the_library_error(engine_path, named, device):
    """A failed execute status becomes the library's error (here: a softmax
    descriptor handed to copy's execute entry point, which checks the tag)."""
    from operator_runtime.errors import OperatorRuntimeError

    if engine_path == "python":
        pytest.skip("drives fast_call.c directly")
    x = _randn((4, 5), device)
    out = torch.empty(4, 5, device=device)
    prepared = oprt.prepare_softmax(out, x, backend=named)
    if prepared._native is None:
        pytest.skip("not a C descriptor")
    copy = oprt.prepare_copy(torch.empty(4, 5, device=device), x, backend=named)
    record = list(prepared._native)
    record[1] = copy._native[1]  # copy's execute entry point
    out.fill_(float("nan"))
    with pytest.raises(OperatorRuntimeError, match="not a live copy"):
        engine._NATIVE_RUN(tuple(record), out, (x,))
    assert torch.isnan(out).all(), "the failed launch wrote out"
