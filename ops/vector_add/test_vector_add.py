"""vector_add / vector_add_ / prepare_vector_add against a float64 reference."""

from __future__ import annotations

import torch
from hypothesis import given, strategies as st

import operator_runtime as oprt
from harness import (OpSpec, check_elementwise, check_out_variant, outs, shapes,
                     tensors, upcast)
from operator_runtime_testing import assert_close, make_out, make_tensor

SPEC = OpSpec("vector_add", oprt.vector_add, oprt.vector_add_, oprt.prepare_vector_add,
              reference=lambda inputs, params: inputs[0] + inputs[1], check=check_elementwise)


def test_broadcast_result_shape(backend, device, gen):
    a = make_tensor((3, 1, 5), torch.float32, device, "contiguous", gen)
    b = make_tensor((4, 1), torch.float32, device, "contiguous", gen)
    result = oprt.vector_add(a, b, backend=backend)
    assert result.shape == torch.broadcast_shapes(a.shape, b.shape) == (3, 4, 5)
    assert result.dtype == torch.float32 and result.is_contiguous()


def test_in_place_with_broadcast_input(backend, dtype, device, gen):
    """out is a; b broadcasts along dim 0 and is read for every row."""
    a = make_tensor((5, 7), dtype, device, "transposed", gen)
    b = make_tensor((7,), dtype, device, "contiguous", gen)
    expected = a.double().cpu() + b.double().cpu()
    with oprt.prepare_vector_add(a, a, b, backend=backend) as prepared:
        prepared.run()
    assert_close(a, expected, dtype, msg="prepared vector_add_(a, a, b)")


def test_same_tensor_twice(backend, dtype, device, gen):
    """a and b may be one tensor; x + x == 2x."""
    x = make_tensor((9, 8), dtype, device, "sliced", gen)
    assert_close(oprt.vector_add(x, x, backend=backend), 2 * x.double().cpu(), dtype)
    expected = 2 * x.double().cpu()
    oprt.vector_add_(x, x, x, backend=backend)
    assert_close(x, expected, dtype, msg="vector_add_(x, x, x)")


def test_special_values(backend, dtype, device):
    inf, nan = float("inf"), float("nan")
    a = torch.tensor([inf, -inf, inf, nan, 1.0, -0.0, 3.0, inf], dtype=torch.float64)
    b = torch.tensor([1.0, 2.0, -inf, 1.0, nan, -0.0, -3.0, inf], dtype=torch.float64)
    a, b = a.to(dtype).to(device), b.to(dtype).to(device)
    out = make_out(a.shape, dtype, device)
    oprt.vector_add_(out, a, b, backend=backend)
    assert_close(out, a.double().cpu() + b.double().cpu(), dtype)
    assert torch.signbit(out[5].cpu()), "-0 + -0 must be -0"


def test_overflow_to_inf(backend, device):
    """fp16 sums beyond 65504 overflow to inf (the reference rounded to fp16 does too)."""
    a = torch.full((17,), 60000.0, dtype=torch.float16, device=device)
    out = oprt.vector_add(a, a, backend=backend)
    assert torch.isinf(out.cpu()).all()


# -- properties -----------------------------------------------------------------------

@st.composite
def broadcast_shapes(draw):
    """(out_shape, a_shape, b_shape): each input a suffix of out's shape with
    some dims set to 1, at least one of them keeping each dim's full size."""
    out_shape = draw(shapes())
    picked = []
    for _ in range(2):
        keep = draw(st.integers(0, len(out_shape)))
        tail = out_shape[len(out_shape) - keep:]
        picked.append(tuple(1 if draw(st.booleans()) else s for s in tail))
    a_shape, b_shape = picked
    return tuple(torch.broadcast_shapes(a_shape, b_shape)), a_shape, b_shape


@given(data=st.data())
def test_property_broadcasting(backend, dtypes, device, data):
    """Random broadcasting pairs, random strides/offsets on all three tensors."""
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    out_shape, a_shape, b_shape = data.draw(broadcast_shapes(), label="shapes")
    a = data.draw(tensors(a_shape, dtype, device), label="a")
    b = data.draw(tensors(b_shape, dtype, device), label="b")
    result = oprt.vector_add(a, b, backend=backend)
    expected = SPEC.reference(upcast([a, b]), {})
    assert_close(result, expected, dtype, msg="vector_add")
    out = data.draw(outs(out_shape, dtype, device), label="out")
    check_out_variant(SPEC, out, [a, b], {}, backend)
