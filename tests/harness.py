"""The checks every op test shares: all three call forms against a float64
reference with NaN-poisoned outputs, determinism, and hypothesis strategies
for shapes and layouts."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
from hypothesis import strategies as st

import operator_runtime
from operator_runtime import BackendUnavailableError
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import (ACCUMULATION_EPS, TOLERANCES, assert_bitwise_equal, assert_close,
                                      assert_outside_untouched, assert_untouched, fresh_like, make_generator,
                                      make_out, make_tensor, poison, reduction_tolerance, snapshot,
                                      strided_tensor)


@dataclass
class OpSpec:
    """How to call one op and judge its result.

    reference(inputs64, params) -> the float64 result (inputs upcast on the CPU);
    check(actual, expected64, inputs, params, msg) raises AssertionError."""

    name: str
    op: Callable
    op_: Callable
    prepare: Callable
    reference: Callable
    check: Callable


def upcast(tensors) -> list:
    return [t.detach().to("cpu", torch.float64) for t in tensors]


def mean_abs(tensor: torch.Tensor) -> float:
    finite = tensor.detach().to("cpu", torch.float64)
    finite = finite[torch.isfinite(finite)]
    return float(finite.abs().mean()) if finite.numel() else 0.0


# -- per-op result checks ------------------------------------------------------

def check_exact(actual, expected, inputs, params, msg):
    """copy: a conversion is exact (the reference rounded to out's dtype by torch)."""
    assert_close(actual, expected.to(actual.dtype).double(), actual.dtype, rtol=0.0, atol=0.0, msg=msg)


def check_elementwise(actual, expected, inputs, params, msg):
    assert_close(actual, expected, actual.dtype, msg=msg)


def check_sum(actual, expected, inputs, params, msg, *, reduced_count):
    rtol, atol = reduction_tolerance(actual.dtype, reduced_count, mean_abs(inputs[0]))
    assert_close(actual, expected, actual.dtype, rtol=rtol, atol=atol, msg=msg)


def check_normalized(actual, expected, inputs, params, msg, *, row_length):
    """softmax: every output is exp(x - max) / sum, so its relative error grows
    with the float32 (or float64) error of the row sum, ~sqrt(n) eps."""
    rtol, atol = TOLERANCES[actual.dtype]
    rtol += 4 * ACCUMULATION_EPS[actual.dtype] * math.sqrt(max(row_length, 1))
    assert_close(actual, expected, actual.dtype, rtol=rtol, atol=atol, msg=msg)


def check_log_normalized(actual, expected, inputs, params, msg, *, row_length):
    """log_softmax: out = x - max - log(sum), each term computed in float32
    (float64) from values up to max|x|, the log of a sum of ~row_length terms:
    an absolute error of a few eps of the largest term, growing with sqrt(n)."""
    rtol, atol = TOLERANCES[actual.dtype]
    finite = inputs[0].detach().to("cpu", torch.float64)
    finite = finite[torch.isfinite(finite)]
    scale = 1.0 + (float(finite.abs().max()) if finite.numel() else 0.0)
    atol += 8 * ACCUMULATION_EPS[actual.dtype] * math.sqrt(max(row_length, 1)) * scale
    assert_close(actual, expected, actual.dtype, rtol=rtol, atol=atol, msg=msg)


def check_scaled(actual, expected, inputs, params, msg, *, error_scale):
    """softmax's gradients: each output a difference of terms much larger
    than itself where they cancel; float32 (float64) errors count against
    the terms' size, error_scale(inputs, ref64, **params), per element."""
    rtol, atol = TOLERANCES[actual.dtype]
    scale = error_scale(upcast(inputs), expected, **params).to("cpu", torch.float64)
    atol = atol + 16 * ACCUMULATION_EPS[actual.dtype] * scale
    assert_close(actual, expected, actual.dtype, rtol=rtol, atol=atol, msg=msg)


def _row_length(inputs, params) -> int:
    src = inputs[0]
    return src.shape[params.get("dim", -1)] if src.dim() else 1


# How each accuracy kind of a description is judged.
CHECKS = {
    "exact": check_exact,
    "elementwise": check_elementwise,
    "reduction": lambda actual, expected, inputs, params, msg: check_sum(
        actual, expected, inputs, params, msg, reduced_count=inputs[0].numel() // max(actual.numel(), 1)),
    "normalized": lambda actual, expected, inputs, params, msg: check_normalized(
        actual, expected, inputs, params, msg, row_length=_row_length(inputs, params)),
    "log": lambda actual, expected, inputs, params, msg: check_log_normalized(
        actual, expected, inputs, params, msg, row_length=_row_length(inputs, params)),
}


def spec_for(name: str) -> OpSpec:
    """The OpSpec of a discovered op, from its description."""
    description = DESCRIPTIONS[name]
    forms = [getattr(operator_runtime, f) for f in (name, f"{name}_", f"prepare_{name}")]
    check = CHECKS.get(description.accuracy)
    if description.accuracy == "scaled":
        check = functools.partial(check_scaled, error_scale=description.error_scale)
    return OpSpec(name, *forms, lambda inputs, params: description.reference(*inputs, **params), check)


def skip_unless_available(name: str, backend: str, device) -> None:
    """Skips the test when `backend` has no kernel for op `name`."""
    description = DESCRIPTIONS[name]
    case = next((c for c in description.cases if all(len(s) for s in c.shapes)), description.cases[0])
    inputs = [torch.ones(s, dtype=torch.float32, device=device) for s in case.shapes]
    try:
        getattr(operator_runtime, name)(*inputs, **case.params, backend=backend)
    except BackendUnavailableError as error:
        pytest.skip(f"{name} on {backend}: {error.reason}")


# -- the three forms -------------------------------------------------------------

def make_inputs(case, dtype, device, gen) -> list:
    return [make_tensor(shape, dtype, device, kind, gen) for shape, kind in zip(case.shapes, case.layouts)]


def check_all_forms(spec: OpSpec, inputs, params: dict, backend: str, gen, *, out_layout="contiguous",
                    out_shape=None, out_dtype=None) -> None:
    """op(...), op_(out, ...) and prepare_op(out, ...) with run() and
    run(new tensors), each against the float64 reference; inputs and the
    gaps around out must stay untouched."""
    device = inputs[0].device
    dtype = inputs[0].dtype if out_dtype is None else out_dtype
    input_snapshots = [snapshot(t) for t in inputs]
    expected = spec.reference(upcast(inputs), params)
    out_expected = expected if out_shape is None else expected.expand(out_shape)

    result = spec.op(*inputs, **params, backend=backend)
    assert result.device.type == device.type
    spec.check(result, expected, inputs, params, f"{spec.name}(...)")

    out = make_out(out_expected.shape, dtype, device, out_layout, gen)
    before = snapshot(out)
    assert spec.op_(out, *inputs, **params, backend=backend) is out, f"{spec.name}_ must return out"
    spec.check(out, out_expected, inputs, params, f"{spec.name}_(out, ...)")
    assert_outside_untouched(out, before, f"{spec.name}_ out")

    out = make_out(out_expected.shape, dtype, device, out_layout, gen)
    before = snapshot(out)
    with spec.prepare(out, *inputs, **params, backend=backend) as prepared:
        assert prepared.backend == backend
        assert isinstance(prepared.workspace_size, int) and prepared.workspace_size >= 0
        assert prepared.run() is out
        spec.check(out, out_expected, inputs, params, f"prepare_{spec.name}(...).run()")
        assert_outside_untouched(out, before, f"prepare_{spec.name} out")

        # run(out, *inputs) on new storage with the same layout
        new_inputs = [fresh_like(t, gen) for t in inputs]
        new_out = poison(fresh_like(out, gen))
        new_before = snapshot(new_out)
        new_expected = spec.reference(upcast(new_inputs), params)
        if out_shape is not None:
            new_expected = new_expected.expand(out_shape)
        assert prepared.run(new_out, *new_inputs) is new_out
        spec.check(new_out, new_expected, new_inputs, params, f"prepare_{spec.name}(...).run(new tensors)")
        assert_outside_untouched(new_out, new_before, f"prepare_{spec.name} rebound out")

        # a rebinding run does not stick: run() is on the prepared tensors again
        poison(out)
        assert prepared.run() is out
        spec.check(out, out_expected, inputs, params, f"prepare_{spec.name}(...).run() after a rebind")

    for i, (t, s) in enumerate(zip(inputs, input_snapshots)):
        assert_untouched(t, s, f"input {i}")


def check_case(spec: OpSpec, case, backend, dtype, device, gen) -> None:
    inputs = make_inputs(case, dtype, device, gen)
    check_all_forms(spec, inputs, case.params, backend, gen, out_layout=case.out_layout,
                    out_shape=case.out_shape)


def check_deterministic(spec: OpSpec, case, backend, dtype, device, gen) -> None:
    """Two runs on the same inputs (into different outs) agree bit for bit."""
    inputs = make_inputs(case, dtype, device, gen)
    first = spec.op(*inputs, **case.params, backend=backend)
    second = spec.op(*inputs, **case.params, backend=backend)
    assert_bitwise_equal(first, second, f"{spec.name} run twice")
    out = make_out(first.shape, dtype, device, case.out_layout, gen)
    spec.op_(out, *inputs, **case.params, backend=backend)
    assert_bitwise_equal(out, first, f"{spec.name}_ vs {spec.name}")


# -- hypothesis strategies ----------------------------------------------------------

# Sizes 0 and 1 are the interesting edge cases; 0 is kept rare so that most
# examples still compute something.
SIZES = st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 9, 13])


def shapes(min_dims=0, max_dims=5):
    return st.lists(SIZES, min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def layouts(draw, ndim: int, allow_expand: bool = True) -> dict:
    """strided_tensor keyword arguments: a random storage order, steps,
    offset (often odd) and, for inputs, stride-0 dims."""
    perm = draw(st.permutations(list(range(ndim))))
    steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    offset = draw(st.integers(0, 3))
    expand = draw(st.sets(st.sampled_from(range(ndim)), max_size=ndim)) if allow_expand and ndim else set()
    return {"perm": perm, "steps": steps, "offset": offset, "expand": sorted(expand)}


@st.composite
def tensors(draw, shape, dtype, device, allow_expand=True):
    layout = draw(layouts(len(shape), allow_expand))
    seed = draw(st.integers(0, 2**31 - 1))
    return strided_tensor(shape, dtype, device, make_generator(seed), **layout)


@st.composite
def outs(draw, shape, dtype, device):
    return poison(draw(tensors(shape, dtype, device, allow_expand=False)))


def check_out_variant(spec: OpSpec, out, inputs, params, backend, *, expected=None) -> None:
    """One op_ call (for the property tests): value check, untouched gaps and inputs."""
    snapshots = [snapshot(t) for t in inputs]
    before = snapshot(out)
    if expected is None:
        expected = spec.reference(upcast(inputs), params)
    assert spec.op_(out, *inputs, **params, backend=backend) is out
    spec.check(out, expected, inputs, params, f"{spec.name}_")
    assert_outside_untouched(out, before)
    for t, s in zip(inputs, snapshots):
        assert_untouched(t, s)
