"""The per-call fast path of op(...) and op_(out, ...), for every discovered
op: a repeated call with the same signature skips validation and planning.
It must give the slow path's results, notice every signature change, keep
refusing bad calls (partial overlap depends on data pointers, not on the
signature), survive a destroyed descriptor or a cleared cache, stay
bounded, and reuse the workspace buffer only where that is safe. Every test
runs twice: with the compiled fast path (fast_call.c) and with the same
steps in Python. Calls, params and references come from each op's
description; no op is named here."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from described_calls import OP_NAMES, Call, batched, forms, make_call, operator, planned_out_shape, small_call
from harness import skip_unless_available
from operator_runtime import BackendUnavailableError
from operator_runtime._internal import operator as engine
from operator_runtime._internal.operator import DESCRIPTOR_CACHE
from operator_runtime._internal.workspaces import WORKSPACES
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_bitwise_equal, assert_untouched, make_generator, snapshot


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


# Every test here runs on both fast paths (conftest.engine_path).
pytestmark = pytest.mark.usefixtures("engine_path")


@pytest.fixture
def named(request, backend, device):
    """The backend, once the op under test (if any) is known to run on it."""
    if "op" in request.fixturenames:
        skip_unless_available(request.getfixturevalue("op"), backend, device)
    return backend


def _call(op, device, seed, dtype=torch.float32) -> Call:
    """The op's small case, contiguous, with data from `seed`."""
    return small_call(op, device, make_generator(seed), dtype, contiguous=True)


def _reversed_layout(t: torch.Tensor) -> torch.Tensor:
    """The same values with the dims stored in reverse order (other strides)."""
    if t.dim() < 2:
        return t
    reverse = tuple(reversed(range(t.dim())))
    return t.permute(reverse).contiguous().permute(reverse)


op_names = pytest.mark.parametrize("op", OP_NAMES)
ops_with_params = pytest.mark.parametrize("op", [n for n, d in DESCRIPTIONS.items() if d.params])


@op_names
def test_fast_path_is_taken_and_matches_slow_path(op, named, device, resolves):
    call = _call(op, device, 1)
    DESCRIPTOR_CACHE.clear()
    slow = call.op(named)
    slow_out = torch.full(call.out.shape, float("nan"), device=device)
    call.op_(slow_out, named)
    assert resolves["n"] == 2
    for seed in range(2, 5):  # new data, same signature: no resolution, same bits as a fresh slow call
        new = _call(op, device, seed)
        count = resolves["n"]
        fast = new.op(named)
        fast_out = torch.full(new.out.shape, float("nan"), device=device)
        assert new.op_(fast_out, named) is fast_out
        assert resolves["n"] == count, "a repeated signature went through the slow path"
        DESCRIPTOR_CACHE.clear()
        reference = new.op(named)
        assert resolves["n"] == count + 1
        new.op_(torch.empty_like(fast_out), named)  # records the out-variant's signature again
        assert_bitwise_equal(fast, reference, f"{op}: fast out-of-place vs slow")
        assert_bitwise_equal(fast_out, reference, f"{op}: fast out-variant vs slow")
        assert fast.is_contiguous() and fast.shape == reference.shape and fast.dtype == reference.dtype
        assert fast.stride() == reference.stride()
        new.check(fast, msg=f"{op} on the fast path")
    assert slow.shape == slow_out.shape


@op_names
def test_torch_modes_see_the_fast_paths_allocation(op, named, device, resolves):
    """A repeated op() allocates its result outside Python only while no
    torch function or dispatch mode is active: with one, the mode sees the
    allocation, and the call still takes the fast path."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class SeesFunctions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    class SeesDispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    call = _call(op, device, 1)
    call.op(named)
    for mode, wanted in ((SeesFunctions, "empty"), (SeesDispatch, "aten.empty")):  # empty, empty_like, ...
        seen = []
        new = _call(op, device, 2)
        count = resolves["n"]
        with mode():
            result = new.op(named)
        assert resolves["n"] == count, f"{op}: a repeated signature under {mode.__name__} went through the slow path"
        assert any(name.startswith(wanted) for name in seen), f"{op}: {mode.__name__} saw {seen}, not the allocation"
        new.check(result, msg=f"{op} under {mode.__name__}")


@op_names
def test_strides_dtype_and_out_change_the_signature(op, named, device, resolves):
    call = _call(op, device, 7)
    DESCRIPTOR_CACHE.clear()
    call.op(named)
    call.op(named)
    before = resolves["n"]
    # the dims stored in reverse order: same values, other strides
    strided = [_reversed_layout(t) for t in call.inputs]
    assert any(s.stride() != t.stride() for s, t in zip(strided, call.inputs))
    result = call.op(named, strided)
    assert resolves["n"] == before + 1
    call.check(result, strided, f"{op} strided")
    halves = [t.half() for t in call.inputs]
    result = call.op(named, halves)
    assert resolves["n"] == before + 2 and result.dtype == torch.float16
    call.check(result, halves, f"{op} half")
    # an out of another layout: a new signature
    out = torch.empty(call.out.shape, device=device)
    call.op_(out, named)
    call.op_(out, named)
    assert resolves["n"] == before + 3
    if out.dim() >= 2:
        out_t = _reversed_layout(torch.empty(call.out.shape, device=device))
        call.op_(out_t, named)
        assert resolves["n"] == before + 4
        call.check(out_t, msg=f"{op} into an out of reversed dims")


def _spellings(op, inputs) -> list[dict]:
    """Every distinct params of the op's cases that plan on `inputs`."""
    description = DESCRIPTIONS[op]
    found = []
    for case in description.cases:
        try:
            description.plan(None, *inputs, *description.bound_params(case.params))
        except (TypeError, ValueError):
            continue
        if case.params not in found:
            found.append(dict(case.params))
    return found


@ops_with_params
def test_param_spellings_on_a_repeated_signature(op, named, device):
    """Params that name the same thing differently (dim 1 and -1, tuples,
    defaults), alternated: each call gives its own result."""
    call = _call(op, device, 0)
    spellings = _spellings(op, call.inputs)
    assert len(spellings) > 1
    for params in spellings + spellings[::-1] + spellings:
        spelled = Call(op, call.inputs, params, call.out)
        spelled.check(spelled.op(named), msg=f"{op} {params}")


@op_names
def test_partial_overlap_refused_on_a_repeated_signature(op, named, device):
    """A first call records the signature with disjoint tensors; a second
    call with the same signature whose out partially overlaps an input must
    still be refused, and leave everything untouched."""
    call = _call(op, device, 3)
    inputs, shape = call.inputs, tuple(call.out.shape)
    numel = torch.Size(shape).numel()
    call.op_(torch.empty(shape, device=device), named)
    call.op_(torch.empty(shape, device=device), named)
    # out and input 0 in one storage, out shifted by one element
    base = torch.zeros(inputs[0].numel() + numel + 1, device=device)
    aliased_input = base[:inputs[0].numel()].view(inputs[0].shape).copy_(inputs[0])
    aliased_out = base[1:1 + numel].view(shape)
    aliased = [aliased_input] + inputs[1:]
    assert aliased_input.stride() == inputs[0].stride() and aliased_out.stride() == torch.empty(shape).stride()
    before = snapshot(base)
    for _ in range(2):
        with pytest.raises(ValueError, match="partially overlaps"):
            call.op_(aliased_out, named, aliased)
        assert_untouched(base, before)


@pytest.mark.parametrize("op", [n for n, d in DESCRIPTIONS.items() if d.in_place])
def test_in_place_stays_allowed(op, named, device):
    for seed in range(3):
        call = _call(op, device, seed)
        if call.inputs[0].shape != call.out.shape:
            pytest.skip(f"{op}: input 0 of the small case is not shaped like out")
        before = [t.clone() for t in call.inputs]
        assert call.op_(call.inputs[0], named) is call.inputs[0]
        call.check(call.inputs[0], before, f"{op} in place, call {seed}")


@op_names
def test_self_overlapping_out_refused_on_a_repeated_signature(op, named, device):
    call = _call(op, device, 0)
    shape = tuple(call.out.shape)
    assert shape and shape[0] > 1
    call.op_(torch.empty(shape, device=device), named)
    expanded = torch.empty((1,) + shape[1:], device=device).expand(shape)
    for _ in range(2):
        with pytest.raises(ValueError, match="overlaps itself"):
            call.op_(expanded, named)


def _twins(value) -> list:
    """Values equal to `value` (so hashing alike) but of another type."""
    if isinstance(value, bool):
        return [int(value), float(value)]
    if isinstance(value, int):
        return [float(value)] + ([bool(value)] if value in (0, 1) else [])
    if isinstance(value, tuple):
        return [value[:k] + (twin,) + value[k + 1:] for k, item in enumerate(value) for twin in _twins(item)]
    return []


def _outcome(function):
    """('ok', result) or (exception type, message) of function()."""
    try:
        return "ok", function()
    except (TypeError, ValueError) as error:
        return type(error), str(error)


def _same_outcome(a, b, what):
    assert a[0] == b[0], f"{what}: {a[0]} on the slow path, {b[0]} after a cached call"
    if a[0] == "ok":
        assert_bitwise_equal(b[1], a[1], what)
    else:
        assert a[1] == b[1], what


@ops_with_params
def test_params_equal_in_value_but_not_in_type(op, named, device):
    """1 == True == 1.0 hash alike: the signature carries the params' types,
    so a cached call never serves a twin of another type: each twin gets what
    the slow path gives it (for a refused one, the same error)."""
    call = _call(op, device, 0)
    description = DESCRIPTIONS[op]
    base = description.bound_params(call.params)
    goods, twins = [], []
    for params in _spellings(op, call.inputs) + [{p.name: v for p, v in zip(description.params, base)}]:
        values = description.bound_params(params)
        for k, value in enumerate(values):
            for v in ([value] + ([0, 1] if isinstance(value, int) and not isinstance(value, bool) else [])):
                good = values[:k] + (v,) + values[k + 1:]
                try:
                    hash(good)
                    description.plan(None, *call.inputs, *good)
                except (TypeError, ValueError):
                    continue
                if good not in goods:
                    goods.append(good)
                    twins += [good[:k] + (twin,) + good[k + 1:] for twin in _twins(v)]
    assert twins, f"{op}: no param has a twin of another type"
    op_plain = forms(op)[0]

    def run(params):
        return lambda: op_plain(*call.inputs, *params, backend=named)

    slow = []
    for twin in twins:
        DESCRIPTOR_CACHE.clear()
        slow.append(_outcome(run(twin)))
    DESCRIPTOR_CACHE.clear()
    for good in goods + goods:
        op_plain(*call.inputs, *good, backend=named)
    for twin, expected in zip(twins + twins, slow + slow):
        _same_outcome(expected, _outcome(run(twin)), f"{op} params {twin!r}")


@op_names
def test_non_tensor_refused_after_a_tensor(op, named, device):
    call = _call(op, device, 0)
    call.op(named)
    call.op(named)
    as_list = [call.inputs[0].tolist()] + call.inputs[1:]
    with pytest.raises(TypeError, match="torch.Tensor"):
        call.op(named, as_list)
    call.op_(call.out, named)
    with pytest.raises(TypeError, match="torch.Tensor"):
        call.op_(3, named)


LIST_PARAM_CASES = [(name, case) for name, d in DESCRIPTIONS.items() for case in d.cases
                    if any(isinstance(v, list) for v in case.params.values())]


@pytest.mark.parametrize(("op", "case"), [pytest.param(n, c, id=f"{n}-{c.name}") for n, c in LIST_PARAM_CASES])
def test_list_params_take_the_slow_path(op, case, named, device):
    call = make_call(op, case, device, make_generator(0))
    for _ in range(3):
        call.check(call.op(named), msg=f"{op} {case.params}")


@op_names
def test_destroyed_descriptor_is_replaced(op, named, device):
    call = _call(op, device, 0)
    first = call.op(named)
    call.op(named)
    for entry in list(DESCRIPTOR_CACHE.calls.values()):
        entry.descriptor.destroy()  # behind the cache's back
    again = call.op(named)
    assert_bitwise_equal(again, first, "after the cached descriptor was destroyed")
    assert_bitwise_equal(call.op(named), first, "and once more")


@op_names
def test_cleared_cache(op, named, device):
    call = _call(op, device, 0)
    DESCRIPTOR_CACHE.clear()
    first = call.op(named)
    call.op(named)
    DESCRIPTOR_CACHE.clear()
    assert len(DESCRIPTOR_CACHE) == 0 and not DESCRIPTOR_CACHE.calls
    assert_bitwise_equal(call.op(named), first)
    assert len(DESCRIPTOR_CACHE.calls) == 1


@op_names
def test_call_map_is_bounded_and_tracks_the_descriptors(op, named, device):
    DESCRIPTOR_CACHE.clear()
    op_plain, op_, _ = forms(op)
    storage = {}
    inputs, params = batched(op, 7, device, storage=storage)
    expected = op_plain(*inputs, **params, backend=named)
    for n in range(1, DESCRIPTOR_CACHE.capacity + 51):
        inputs, params = batched(op, n, device, storage=storage)
        result = op_plain(*inputs, **params, backend=named)
        op_(torch.empty_like(result), *inputs, **params, backend=named)
        assert len(DESCRIPTOR_CACHE) <= DESCRIPTOR_CACHE.capacity
        assert len(DESCRIPTOR_CACHE.calls) <= DESCRIPTOR_CACHE.call_capacity
    # every recorded call holds a descriptor that the cache still holds
    live = {id(slot.descriptor) for slot in DESCRIPTOR_CACHE._entries.values()}
    assert all(id(entry.descriptor) in live for entry in DESCRIPTOR_CACHE.calls.values())
    # the most recently used signatures are still fast, and right
    inputs, params = batched(op, 7, device, storage=storage)
    assert_bitwise_equal(op_plain(*inputs, **params, backend=named), expected)


@op_names
def test_eviction_keeps_a_hot_signature(op, named, device, resolves):
    """A signature used on the fast path between insertions survives them
    (the second-chance eviction sees its use), so it stays one lookup."""
    DESCRIPTOR_CACHE.clear()
    op_plain = forms(op)[0]
    hot, hot_params = batched(op, 3, device, dtype=torch.float16)  # a dtype the loop never uses
    op_plain(*hot, **hot_params, backend=named)
    storage = {}
    for n in range(1, 2 * DESCRIPTOR_CACHE.capacity):
        inputs, params = batched(op, n, device, storage=storage)
        op_plain(*inputs, **params, backend=named)
        op_plain(*hot, **hot_params, backend=named)
    count = resolves["n"]
    op_plain(*hot, **hot_params, backend=named)
    assert resolves["n"] == count


def _workspace_call(device, backend) -> Call | None:
    """A call (from the descriptions' benchmark shapes, smallest first) whose
    descriptor on `backend` asks for a workspace."""
    candidates = []
    for name, description in DESCRIPTIONS.items():
        for bench in description.benchmarks:
            if bench.gpu_only and torch.device(device).type == "cpu":
                continue
            candidates.append((sum(torch.Size(s).numel() for s in bench.shapes), name, bench))
    for _, name, bench in sorted(candidates, key=lambda c: c[0]):
        try:
            out_shape = planned_out_shape(DESCRIPTIONS[name], bench.shapes, bench.params)
        except (TypeError, ValueError):
            continue
        inputs = [torch.randn(s, generator=make_generator(0)).to(device) for s in bench.shapes]
        call = Call(name, inputs, dict(bench.params), torch.empty(out_shape, device=device))
        try:
            with call.prepare(backend) as prepared:
                if prepared.workspace_size:
                    return call
        except BackendUnavailableError:
            continue
    return None


def _narrowed(t: torch.Tensor) -> torch.Tensor:
    """`t` with its last dim halved (a dim of size 1 stays: it may broadcast)."""
    if t.dim() == 0 or t.shape[-1] < 2:
        return t
    return t[..., : t.shape[-1] // 2]


def test_workspace_is_reused_per_thread(named, device):
    call = _workspace_call(device, named)
    if call is None:
        pytest.skip(f"no benchmark shape of any op asks for a workspace on {named}")
    expected = call.op(named)
    buffers = dict(WORKSPACES.buffers)
    assert buffers, "the workspace was not cached"
    for _ in range(3):
        assert_bitwise_equal(call.op(named), expected)
    assert {k: v.data_ptr() for k, v in WORKSPACES.buffers.items()} == {k: v.data_ptr() for k, v in buffers.items()}
    # a smaller request reuses the buffer, a larger one replaces it
    small = [_narrowed(t) for t in call.inputs]
    call.check(call.op(named, small), small, f"{call.name} on narrowed inputs")
    # another thread gets its own buffer, and the same bits
    seen = {}

    def worker():
        seen["result"] = call.op(named)
        seen["buffers"] = {k: v.data_ptr() for k, v in WORKSPACES.buffers.items()}

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert_bitwise_equal(seen["result"], expected, "in another thread")
    mine = {v.data_ptr() for v in WORKSPACES.buffers.values()}
    assert not mine & set(seen["buffers"].values()), "threads share a workspace buffer"


@op_names
def test_prepared_run_unchanged(op, named, device):
    call = _call(op, device, 0)
    with call.prepare(named) as prepared:
        for _ in range(3):
            assert prepared.run() is call.out
        assert_bitwise_equal(call.out, call.op(named))
    with pytest.raises(RuntimeError, match="destroyed"):
        prepared.run()


def _broadcast_case(op):
    """A small case of op whose plan broadcasts an input to another shape."""
    description = DESCRIPTIONS[op]
    for case in description.cases:
        if not all(1 <= len(s) <= 3 and 0 < torch.Size(s).numel() <= 4096 for s in case.shapes):
            continue
        inputs = [torch.empty(s, device="meta") for s in case.shapes]
        out = torch.empty(planned_out_shape(description, case.shapes, case.params, case.out_shape), device="meta")
        try:
            plan = description.plan(out, *inputs, *description.bound_params(case.params))
        except (TypeError, ValueError):
            continue
        if any(p.shape != t.shape for p, t in zip(plan.inputs, inputs)):
            return case, [tuple(p.shape) for p in plan.inputs]
    return None, None


@op_names
def test_python_descriptor_gets_the_broadcast_views(op, named, device, monkeypatch):
    """A descriptor without a C entry point (TileLang's) is called with the
    plan's inputs, broadcast to out's shape, on the fast path as well."""
    from operator_runtime._internal import backends as backends_module

    case, planned = _broadcast_case(op)
    if case is None:
        pytest.skip(f"{op} has no case whose inputs broadcast")
    seen = []
    # TileLang's descriptors are Python ones; a C backend's pretend to be
    # one by hiding their C entry point.
    if named == "tilelang":
        from operator_runtime._internal.tilelang_backend import TileLangDescriptor as cls
    else:
        cls = backends_module.CDescriptor
    original = cls.execute

    def recording(self, out, inputs, workspace, stream):
        seen.append([tuple(t.shape) for t in inputs])
        return original(self, out, inputs, workspace, stream)

    if cls is backends_module.CDescriptor:
        monkeypatch.setattr(cls, "c_execute", property(lambda self: None))
        monkeypatch.setattr(cls, "execute_address", property(lambda self: None))
    monkeypatch.setattr(cls, "execute", recording)
    DESCRIPTOR_CACHE.clear()
    call = make_call(op, case, device, make_generator(0), contiguous=True)
    for _ in range(3):
        assert call.op_(call.out, named) is call.out
        call.check(call.out, msg=f"{op}_ {case.name}")
    assert seen == [planned] * 3, seen


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


def test_tensor_access_serves_only_the_torch_it_was_built_for(engine_path, monkeypatch):
    """The _tensor_access extension is C++ built against one torch: under
    any other (another version or build), or with OPRT_TENSOR_ACCESS=0, it
    is not used, and fast_call.c reads tensors through Python."""
    from operator_runtime._internal import library
    if engine_path != "native":
        pytest.skip("checked once")
    if library._extension_module("_tensor_access") is None:
        pytest.skip("the _tensor_access extension is not built (no torch at configure time, or CAMP_SANITIZE)")
    monkeypatch.delenv("OPRT_TENSOR_ACCESS", raising=False)
    assert library.tensor_access_api() is not None
    monkeypatch.setattr(library, "torch_build", lambda: "0.0.0/another-build")
    assert library.tensor_access_api() is None
    monkeypatch.undo()
    monkeypatch.setenv("OPRT_TENSOR_ACCESS", "0")
    assert library.tensor_access_api() is None


def _bool_spelled(params: tuple) -> tuple:
    """params with every 0/1 int (also inside tuples) spelled as a bool."""
    def spell(v):
        if isinstance(v, tuple):
            return tuple(spell(x) for x in v)
        return bool(v) if type(v) is int and v in (0, 1) else v
    return tuple(spell(v) for v in params)


def _key_cases(op, device):
    """(inputs, params, out, backend) calls of op for key comparisons: every
    small case of its description, without and with an out, params as given
    and with 0/1 spelled as bools, and with the inputs in float16 (the same
    shapes and strides in another dtype)."""
    description = DESCRIPTIONS[op]
    gen = make_generator(0)
    for case in description.cases:
        if max((torch.Size(s).numel() for s in case.shapes), default=0) > 4096:
            continue
        params = description.bound_params(case.params)
        try:
            hash(params)
        except TypeError:  # list params have no key (test_list_params_take_the_slow_path)
            continue
        call = make_call(op, case, device, gen)
        for p in dict.fromkeys([params, _bool_spelled(params)]):
            yield tuple(call.inputs), p, None, None
            yield tuple(call.inputs), p, call.out, "cpu"
        half = tuple(torch.full((t.untyped_storage().nbytes() // t.element_size(),), 0.5, dtype=torch.float16,
                                device=t.device).as_strided(t.shape, t.stride(), t.storage_offset())
                     for t in call.inputs)
        yield half, params, None, None


@op_names
def test_native_key_is_the_python_key(op, engine_path, backend, device):
    """fast_call.c's signature key must tell calls apart exactly as
    operator.py's does: reading tensors through Python it is the same tuple;
    through _tensor_access it packs the tensors' part into bytes, and two
    calls get equal keys exactly when their Python keys are equal."""
    if engine_path == "python":
        pytest.skip("compares the C key with the Python one")
    DESCRIPTOR_CACHE.clear()
    engine_op = operator(op)
    pairs = []
    for inputs, params, out, name in _key_cases(op, device):
        key = engine._NATIVE_CALL(engine_op, out, inputs, params, name)  # nothing cached: the key comes back
        python_key = engine_op._call_key(out, inputs, params, name)
        assert type(key) is tuple, (op, params)
        if engine_path == "native-python-reads":
            assert key == python_key, (op, params)
        else:
            assert key[:4] == python_key[:4] and type(key[4]) is bytes and len(key) == 5, (op, params)
        pairs.append((key, python_key))
    for key, python_key in pairs:
        for other, other_python in pairs:
            assert (key == other) == (python_key == other_python), (op, python_key, other_python)
    # arguments without a key: None (the slow path explains them)
    call = _call(op, device, 0)
    params = DESCRIPTIONS[op].bound_params(call.params)
    as_list = tuple([call.inputs[0].tolist()] + call.inputs[1:])
    assert engine._NATIVE_CALL(engine_op, None, as_list, params, None) is None
    if params:
        unhashable = ([0],) + params[1:]
        assert engine._NATIVE_CALL(engine_op, None, tuple(call.inputs), unhashable, None) is None


@op_names
def test_native_path_runs_without_the_python_launch(op, engine_path, named, device, monkeypatch):
    """A repeated call and a prepared run launch from C: CDescriptor.run is
    never reached."""
    from operator_runtime._internal import backends as backends_module

    if engine_path == "python":
        pytest.skip("checks the C launch")
    if named not in ("cpu", "nvidia"):
        pytest.skip("C descriptors only")
    call = _call(op, device, 0)
    out = torch.empty_like(call.out)
    expected = call.op(named)
    call.op_(out, named)
    prepared = call.prepare(named, torch.empty_like(call.out))
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
    assert_bitwise_equal(call.op(named), expected)
    assert call.op_(out, named) is out
    assert prepared.run() is prepared.out
    assert_bitwise_equal(out, expected)
    assert_bitwise_equal(prepared.out, expected)
    assert not calls, "a call went through the Python launch"
    prepared.destroy()


def _partner(op, backend, device):
    """Another op of as many inputs, prepared on `backend` (None if none runs)."""
    for other, description in DESCRIPTIONS.items():
        if other == op or len(description.inputs) != len(DESCRIPTIONS[op].inputs):
            continue
        call = _call(other, device, 0)
        try:
            return other, call.prepare(backend)
        except BackendUnavailableError:
            continue
    return None, None


@op_names
def test_native_launch_failure_raises_the_library_error(op, engine_path, named, device):
    """A failed execute status becomes the library's error (here: the op's
    descriptor handed to another op's execute entry point, which checks the tag)."""
    from operator_runtime.errors import OperatorRuntimeError

    if engine_path == "python":
        pytest.skip("drives fast_call.c directly")
    call = _call(op, device, 0)
    prepared = call.prepare(named)
    if prepared._native is None:
        pytest.skip("not a C descriptor")
    other, other_prepared = _partner(op, named, device)
    if other is None:
        pytest.skip(f"no other op of {len(call.inputs)} input(s) runs on {named}")
    record = list(prepared._native)
    record[1] = other_prepared._native[1]  # the other op's execute entry point
    call.out.fill_(float("nan"))
    with pytest.raises(OperatorRuntimeError, match=f"not a live {other}"):
        engine._NATIVE_RUN(tuple(record), call.out, tuple(call.inputs), None)
    assert torch.isnan(call.out).all(), "the failed launch wrote out"
    other_prepared.destroy()
    prepared.destroy()
