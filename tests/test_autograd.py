"""Autograd of the ops whose descriptions state a backward: gradcheck in
float64 on CPU, gradients equal to torch's in float32/16/bf16 on every
available device, gradients computed by the runtime's own ops (softmax's
and log_softmax's by softmax_backward and log_softmax_backward, from the
saved output), and what has no backward (a gradient of those gradients)
refused, never detached."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import operator_runtime as oprt
from operator_runtime_testing.assertions import tolerance

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

# name, the runtime's call, torch's, input shapes (broadcasting where the op does)
CASES = [
    ("copy", oprt.copy, lambda s: s.clone(), [(3, 4)]),
    ("vector_add", oprt.vector_add, torch.add, [(3, 4), (4,)]),
    ("vector_add_both_broadcast", oprt.vector_add, torch.add, [(2, 1, 5), (3, 1)]),
    ("mul", oprt.mul, torch.mul, [(2, 3, 4), (3, 1)]),
    ("mul_scalar_0d", oprt.mul, torch.mul, [(), (3, 2)]),
    ("reduce_sum_last", oprt.reduce_sum, lambda s: torch.sum(s, -1), [(3, 5)]),
    ("reduce_sum_dims", lambda s: oprt.reduce_sum(s, (0, 2)), lambda s: torch.sum(s, (0, 2)), [(2, 3, 4)]),
    ("reduce_sum_dims_keepdim", lambda s: oprt.reduce_sum(s, (0, -1), keepdim=True),
     lambda s: torch.sum(s, (0, 3), keepdim=True), [(2, 3, 4, 5)]),
    ("reduce_sum_all", lambda s: oprt.reduce_sum(s, None), lambda s: torch.sum(s), [(3, 4)]),
    ("reduce_sum_all_keepdim", lambda s: oprt.reduce_sum(s, None, keepdim=True),
     lambda s: torch.sum(s, (0, 1), keepdim=True), [(3, 4)]),
    ("relu", oprt.relu, torch.relu, [(4, 6)]),
    ("softmax_last", oprt.softmax, lambda s: torch.softmax(s, -1), [(3, 5)]),
    ("softmax_dim0", lambda s: oprt.softmax(s, 0), lambda s: torch.softmax(s, 0), [(4, 3)]),
    ("softmax_middle_dim", lambda s: oprt.softmax(s, 1), lambda s: torch.softmax(s, 1), [(2, 5, 3)]),
    ("softmax_transposed", lambda s: oprt.softmax(s.transpose(0, 2), -1),
     lambda s: torch.softmax(s.transpose(0, 2), -1), [(6, 2, 3)]),
    ("softmax_long_row", lambda s: oprt.softmax(s, -1), lambda s: torch.softmax(s, -1), [(2, 3000)]),
    ("softmax_0d", lambda s: oprt.softmax(s, 0), lambda s: torch.softmax(s, 0), [()]),
    ("log_softmax_last", oprt.log_softmax, lambda s: torch.log_softmax(s, -1), [(3, 5)]),
    ("log_softmax_dim0", lambda s: oprt.log_softmax(s, 0), lambda s: torch.log_softmax(s, 0), [(70, 66)]),
    ("log_softmax_negative_dim", lambda s: oprt.log_softmax(s, -3), lambda s: torch.log_softmax(s, -3),
     [(2, 3, 4, 5)]),
    ("log_softmax_transposed", lambda s: oprt.log_softmax(s.transpose(1, 2), 1),
     lambda s: torch.log_softmax(s.transpose(1, 2), 1), [(3, 4, 70)]),
    ("log_softmax_long_row", lambda s: oprt.log_softmax(s, -1), lambda s: torch.log_softmax(s, -1), [(2, 3000)]),
]
IDS = [c[0] for c in CASES]


def _inputs(shapes, dtype, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tensors = []
    for shape in shapes:
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
        t = t + t.sign() * 0.1  # away from 0, where relu has no derivative
        tensors.append(t.to(dtype=dtype, device=device).requires_grad_())
    return tensors


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradcheck_float64_cpu(case):
    _, ours, _, shapes = case
    assert torch.autograd.gradcheck(ours, tuple(_inputs(shapes, torch.float64, "cpu")))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_torch(case, dtype, device):
    _, ours, theirs, shapes = case
    inputs = _inputs(shapes, dtype, device)
    expected_inputs = [t.detach().clone().requires_grad_() for t in inputs]
    out, expected = ours(*inputs), theirs(*expected_inputs)
    assert out.grad_fn is not None and out.dtype == expected.dtype and out.shape == expected.shape
    grad_out = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1)).to(dtype=dtype,
                                                                                          device=device)
    got = torch.autograd.grad(out, inputs, grad_out)
    want = torch.autograd.grad(expected, expected_inputs, grad_out)
    atol, rtol = tolerance(dtype)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, atol=atol * 4, rtol=rtol * 4)


def test_plain_functions_record_a_grad_fn():
    x, y = _inputs([(3, 4), (3, 4)], torch.float32, "cpu")
    for result in (oprt.relu(x), oprt.mul(x, y), oprt.vector_add(x, y), oprt.copy(x), oprt.reduce_sum(x, 0),
                   oprt.softmax(x, 1), oprt.log_softmax(x, 0)):
        assert result.requires_grad and result.grad_fn is not None
    with torch.no_grad():
        assert oprt.relu(x).grad_fn is None


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_double_backward_refuses_clearly(name):
    """The gradient's own gradient (create_graph) has no backward: refused, not detached."""
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out = getattr(oprt, name)(x, 1)
    with pytest.raises(NotImplementedError, match=f"{name}_backward: .*no backward.*double backward"):
        torch.autograd.grad(out, x, torch.randn(3, 4, dtype=torch.float64), create_graph=True)
    with torch.no_grad():
        getattr(oprt, f"{name}_backward")(torch.randn(3, 4), torch.randn(3, 4), 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_along_dim_gradients_with_neg_inf_and_expanded_grad(name, dtype):
    """-inf inputs (softmax 0 there, log_softmax -inf: its gradient is grad
    itself) and the expanded (stride-0) gradient of a sum, as torch."""
    x = torch.randn(5, 9, generator=torch.Generator().manual_seed(2)).to(dtype)
    x[:, ::3] = -float("inf")
    ours_x, torch_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours, theirs = getattr(oprt, name)(ours_x, 1), getattr(torch, name)(torch_x, 1)
    for weight in (None, torch.randn(9).to(dtype)):
        got = torch.autograd.grad(ours.sum() if weight is None else (ours * weight).sum(), ours_x, retain_graph=True)
        want = torch.autograd.grad(theirs.sum() if weight is None else (theirs * weight).sum(), torch_x,
                                   retain_graph=True)
        atol, rtol = tolerance(dtype)
        torch.testing.assert_close(got[0], want[0], atol=atol * 4, rtol=rtol * 4)


def test_along_dim_backward_ops_match_aten():
    """The backward ops themselves against aten's, every dim of a 3-d tensor, strided inputs."""
    gen = torch.Generator().manual_seed(3)
    for dim in (0, 1, 2, -1):
        x = torch.randn(7, 6, 40, dtype=torch.float64, generator=gen)
        grad = torch.randn(40, 6, 7, dtype=torch.float64, generator=gen).transpose(0, 2)
        y, ly = torch.softmax(x, dim), torch.log_softmax(x, dim)
        torch.testing.assert_close(oprt.softmax_backward(grad, y, dim),
                                   torch.ops.aten._softmax_backward_data(grad, y, dim, grad.dtype))
        torch.testing.assert_close(oprt.log_softmax_backward(grad, ly, dim),
                                   torch.ops.aten._log_softmax_backward_data(grad, ly, dim, grad.dtype))


def test_relu_backward_matches_threshold_backward_on_special_values():
    specials = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1.0, -1.0])
    x, grad = specials.repeat(7), specials.repeat_interleave(7)
    expected = torch.ops.aten.threshold_backward(grad, x, 0)
    got = oprt.relu_backward(grad, x)
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(got.nan_to_num().view(torch.int32), expected.nan_to_num().view(torch.int32))  # -0.0 too


class _RecordOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


# metadata only: views and allocations (what computes is the runtime's)
_NO_COMPUTE = {"view", "_unsafe_view", "reshape", "unsqueeze", "expand", "alias", "detach", "as_strided",
               "empty", "empty_like", "new_empty", "empty_strided", "squeeze", "t", "transpose"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_runs_the_runtimes_kernels(case, monkeypatch):
    """No aten op computes during backward, and the runtime's ops are
    called (the formulas look them up in operator_runtime.ops at call time)."""
    name, ours, _, shapes = case
    inputs = _inputs(shapes, torch.float32, "cpu")
    out = ours(*inputs)
    grad_out = torch.randn(out.shape)
    called = []
    for op in ("copy", "copy_", "mul", "reduce_sum", "relu_backward", "softmax_backward", "log_softmax_backward"):
        original = getattr(oprt.ops, op)
        monkeypatch.setattr(oprt.ops, op, lambda *a, _f=original, _n=op, **k: called.append(_n) or _f(*a, **k))
    with _RecordOps() as mode:
        grads = torch.autograd.grad(out, inputs, grad_out)
    assert all(g is not None for g in grads)
    foreign = [str(op) for op in mode.ops
               if op.namespace != "operator_runtime" and op._opname not in _NO_COMPUTE]
    assert not foreign, f"{name}: backward ran {foreign}"
    if name not in ("copy", "vector_add"):  # same-shape gradients pass through, nothing to compute
        assert called, f"{name}: backward called none of the runtime's ops"
