"""The ops as torch.library operators, for every discovered op: schemas,
opcheck (CPU, and CUDA where there is one), fake tensors, torch.compile
with fullgraph=True, and the autograd rules that hold until the ops have
backward formulas: no gradient dropped silently, out-variants refuse a leaf
that requires grad and bump the version counter of what they write."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from described_calls import OP_NAMES, cases_needing_workspace, forms, make_call, small_call
from operator_runtime._internal.workspaces import WORKSPACES
from operator_runtime.ops import DESCRIPTIONS

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]


def torch_ops(name):
    namespace = torch.ops.operator_runtime
    return getattr(namespace, name).default, getattr(namespace, f"{name}_out").default


def params_of(call) -> tuple:
    return DESCRIPTIONS[call.name].bound_params(call.params)


@pytest.mark.parametrize("name", OP_NAMES)
def test_schemas_follow_the_plain_functions(name):
    functional, out_variant = torch_ops(name)
    op, op_, _ = forms(name)
    plain = [p for p in inspect.signature(op).parameters if p != "backend"]
    assert [a.name for a in functional._schema.arguments] == plain
    assert [a.name for a in out_variant._schema.arguments] == ["out", *plain]
    out_arg = out_variant._schema.arguments[0]
    assert out_arg.alias_info is not None and out_arg.alias_info.is_write
    assert not any(a.alias_info for a in functional._schema.arguments)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", OP_NAMES)
def test_opcheck(name, device, gen):
    call = small_call(name, torch.device(device), gen)
    functional, out_variant = torch_ops(name)
    torch.library.opcheck(functional, (*call.inputs, *params_of(call)))
    torch.library.opcheck(out_variant, (call.out.clone(), *call.inputs, *params_of(call)))


@pytest.mark.parametrize("name", OP_NAMES)
def test_registered_op_matches_the_plain_function(name, gen):
    call = small_call(name, torch.device("cpu"), gen)
    functional, out_variant = torch_ops(name)
    expected = call.op(None)
    assert torch.equal(functional(*call.inputs, *params_of(call)), expected)
    out = call.out.clone()
    assert out_variant(out, *call.inputs, *params_of(call)) is None
    assert torch.equal(out, call.op_(call.out.clone(), None))


@pytest.mark.parametrize("name", OP_NAMES)
def test_fake_tensors_take_the_fake(name, gen):
    """Under FakeTensorMode the plain functions never reach C, and give what
    the real op gives: shape, dtype and (contiguous) strides."""
    call = small_call(name, torch.device("cpu"), gen)
    real = call.op(None)
    mode = FakeTensorMode()
    fakes = [mode.from_tensor(t) for t in call.inputs]
    fake_out = mode.from_tensor(call.out)
    with mode:
        fake = call.op(None, fakes)
        out = call.op_(fake_out, None, fakes)
    assert type(fake).__name__ == "FakeTensor"
    assert (fake.shape, fake.dtype, fake.stride()) == (real.shape, real.dtype, real.stride())
    assert out is fake_out


@pytest.mark.parametrize("name", OP_NAMES)
def test_compile_fullgraph_has_no_graph_break(name, gen):
    call = small_call(name, torch.device("cpu"), gen)
    op, op_, _ = forms(name)
    params = call.params

    def function(*inputs):
        return op(*[t * 2 for t in inputs], **params) + 1

    def out_function(out, *inputs):
        op_(out, *inputs, **params)
        return out * 2

    for fn, args in ((function, call.inputs), (out_function, [call.out.clone(), *call.inputs])):
        explained = torch._dynamo.explain(fn)(*args)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
        eager_args = [a.clone() for a in args]
        assert torch.equal(compiled(*[a.clone() for a in args]), fn(*eager_args))


def compiled_model_of_every_op(device, gen):
    """A model calling every op's plain function once on its small case, its
    flattened inputs, and the model compiled as a whole."""
    calls = [small_call(name, torch.device(device), gen) for name in OP_NAMES]

    def model(*flat):
        results, at = [], 0
        for call in calls:
            inputs = flat[at:at + len(call.inputs)]
            at += len(call.inputs)
            results.append(forms(call.name)[0](*[t + 0 for t in inputs], **call.params))
        return results

    return model, [t for call in calls for t in call.inputs]


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_model_with_inductor_matches_eager(device, gen):
    """Every op in one model, compiled by the default backend (inductor)."""
    model, flat = compiled_model_of_every_op(device, gen)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    for got, expected in zip(compiled(*flat), model(*flat), strict=True):
        assert torch.equal(got, expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_compiled_model_runs_under_cuda_graphs(gen):
    """mode="reduce-overhead": inductor captures the model, our kernels
    included, in a CUDA graph and replays it; each replay on fresh values
    must match eager."""
    model, _ = compiled_model_of_every_op("cuda", gen)
    torch._dynamo.reset()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):  # warm-up, recording, then replays
        _, flat = compiled_model_of_every_op("cuda", gen)  # the same shapes and layouts, new values
        got = [r.clone() for r in compiled(*flat)]
        for g, expected in zip(got, model(*flat), strict=True):
            assert torch.equal(g, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_registered_ops_keep_no_scratch_buffer(device, gen):
    """The registered ops allocate their workspace per call (a CUDA-graph
    pool must not see a buffer outlive the graph's tensors): the per-thread
    buffers the plain calls reuse stay as they were."""
    backend = "cpu" if device == "cpu" else None
    found = [(name, case) for name in OP_NAMES
             for case in cases_needing_workspace(name, backend, torch.device(device), gen, contiguous=True)[:1]]
    if not found:
        pytest.skip(f"no op case needs a workspace on {device}")
    WORKSPACES.buffers.clear()
    for name, case in found:
        call = make_call(name, case, torch.device(device), gen, contiguous=True)
        functional, out_variant = torch_ops(name)
        got = functional(*call.inputs, *params_of(call))
        assert torch.equal(got, call.op(None))
        WORKSPACES.buffers.clear()  # (the plain call just made may keep one)
        out_variant(call.out, *call.inputs, *params_of(call))
        assert WORKSPACES.buffers == {}, name


@pytest.mark.parametrize("name", OP_NAMES)
def test_inputs_requiring_grad_are_refused_not_detached(name, gen, engine_path):
    """Out-variants always; the functional forms where the op states no
    backward (tests/test_autograd.py covers those that do)."""
    call = small_call(name, torch.device("cpu"), gen)
    call.op(None)  # an entry on the fast path: the refusal must not depend on it
    functional = DESCRIPTIONS[name].backward is None
    for index in range(len(call.inputs)):
        inputs = [t.detach().requires_grad_(i == index) for i, t in enumerate(call.inputs)]
        attempts = [lambda: call.op_(call.out.clone(), None, inputs)]
        if functional:
            attempts += [lambda: call.op(None, inputs), lambda: torch_ops(name)[0](*inputs, *params_of(call))]
        for attempt in attempts:
            with pytest.raises(NotImplementedError, match=f"{name}.*autograd.*no_grad"):
                attempt()
        with torch.no_grad():
            assert torch.equal(call.op(None, inputs), call.op(None))


@pytest.mark.parametrize("name", OP_NAMES)
def test_out_leaf_requiring_grad_is_refused(name, gen, engine_path):
    call = small_call(name, torch.device("cpu"), gen)
    call.op_(call.out.clone(), None)  # a fast-path entry of this exact signature
    leaf = call.out.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        call.op_(leaf, None)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch_ops(name)[1](leaf, *call.inputs, *params_of(call))
    prepared = call.prepare(None, out=call.out.clone())
    prepared.run()
    prepared.out.requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        prepared.run()
    with torch.no_grad():  # as torch allows it
        call.op_(leaf, None)
        prepared.run()


@pytest.mark.parametrize("name", OP_NAMES)
def test_out_variants_bump_the_version_counter(name, gen, engine_path):
    call = small_call(name, torch.device("cpu"), gen)
    out = call.out.clone()
    for _ in range(3):  # slow path, then the fast path
        before = out._version
        call.op_(out, None)
        assert out._version > before
    prepared = call.prepare(None, out=out)
    for _ in range(3):
        before = out._version
        prepared.run()
        assert out._version > before
    before = out._version
    prepared.run(out, *call.inputs)
    assert out._version > before


@pytest.mark.parametrize("name", OP_NAMES)
def test_overwriting_a_saved_tensor_breaks_backward(name, gen, engine_path):
    """A tensor autograd saved, overwritten by an out-variant: backward
    raises, as it does after torch's own in-place op on it."""
    call = small_call(name, torch.device("cpu"), gen)
    weight = torch.randn(call.out.shape, generator=gen).requires_grad_()

    def overwrite_saved(write):
        saved = call.out.clone()
        loss = (weight * saved).sum()  # mul saves `saved` for weight's gradient
        write(saved)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()

    overwrite_saved(lambda t: t.copy_(call.op(None)))  # torch's own in-place op, for reference
    overwrite_saved(lambda t: call.op_(t, None))
    overwrite_saved(lambda t: call.op_(t, None))  # again: the fast path
    overwrite_saved(lambda t: call.prepare(None, out=t).run())
