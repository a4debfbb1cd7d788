"""copy / copy_ / prepare_copy against torch (a conversion must be exact)."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, strategies as st

import operator_runtime as oprt
from operator_runtime.description import Case
from harness import (OpSpec, check_all_forms, check_exact, check_out_variant,
                     make_inputs, outs, shapes, tensors)
from operator_runtime_testing import assert_close, assert_untouched, make_out, make_tensor, snapshot

SPEC = OpSpec("copy", oprt.copy, oprt.copy_, oprt.prepare_copy,
              reference=lambda inputs, params: inputs[0].clone(), check=check_exact)

ALL_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def test_copy_returns_contiguous(backend, device, gen):
    src = make_tensor((5, 6, 7), torch.float32, device, "mixed", gen)
    result = oprt.copy(src, backend=backend)
    assert result.is_contiguous() and result.shape == src.shape and result.dtype == src.dtype
    assert result.data_ptr() != src.data_ptr()
    expanded = make_tensor((4, 5), torch.float32, device, "expanded", gen)
    result = oprt.copy(expanded, backend=backend)
    assert result.is_contiguous() and result.stride() == (5, 1)
    assert torch.equal(result.cpu(), expanded.cpu())


@pytest.mark.parametrize("layouts", [("contiguous", "contiguous"), ("mixed", "sliced"), ("transposed", "offset")],
                         ids=lambda p: f"{p[0]}-to-{p[1]}")
def test_dtype_conversions(backend, dtypes, device, gen, layouts):
    """copy_ between every pair of supported dtypes rounds exactly as Tensor.copy_."""
    src_layout, out_layout = layouts
    for src_dtype, out_dtype in itertools.product(dtypes, dtypes):
        src = make_tensor((7, 9), src_dtype, device, src_layout, gen) * 100  # some values overflow fp16
        out = make_out((7, 9), out_dtype, device, out_layout, gen)
        oprt.copy_(out, src, backend=backend)
        expected = torch.empty_like(out).copy_(src)
        assert_close(out, expected.double(), out_dtype, rtol=0, atol=0, msg=f"{src_dtype} -> {out_dtype}")


def test_special_value_conversions(backend, dtypes, device):
    values = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), 65504.0, 65520.0, 1e5, -1e5,
              3.0e38, 1e-8, 6e-8, 1e-40, 2.0 ** -24, 1.0 + 2.0 ** -9, 1.0 + 2.0 ** -12]
    for src_dtype, out_dtype in itertools.product(dtypes, dtypes):
        src = torch.tensor(values, dtype=torch.float64).to(src_dtype).to(device)
        out = make_out((len(values),), out_dtype, device)
        oprt.copy_(out, src, backend=backend)
        expected = torch.empty_like(out).copy_(src)
        assert_close(out, expected.double(), out_dtype, rtol=0, atol=0, msg=f"{src_dtype} -> {out_dtype}")
        # the sign of zero survives too (a NaN's sign bit carries no meaning)
        numbers = ~torch.isnan(expected.cpu())
        signs_match = torch.equal(torch.signbit(out.cpu())[numbers], torch.signbit(expected.cpu())[numbers])
        assert signs_match, f"{src_dtype} -> {out_dtype}: signs differ"


@pytest.mark.parametrize("kind", ["contiguous", "transposed", "sliced", "offset", "mixed"])
def test_in_place(backend, dtype, device, gen, kind):
    x = make_tensor((6, 5, 4), dtype, device, kind, gen)
    before = snapshot(x)
    assert oprt.copy_(x, x, backend=backend) is x
    assert_untouched(x, before, "copy_(x, x)")
    with oprt.prepare_copy(x, x, backend=backend) as prepared:
        prepared.run()
    assert_untouched(x, before, "prepared copy_(x, x)")


# -- properties -----------------------------------------------------------------------

@given(data=st.data())
def test_property_layouts(backend, dtypes, device, data):
    """Any shape (ndim 0..5, sizes 0 and 1 included), any layout on both sides."""
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(), label="shape")
    src = data.draw(tensors(shape, dtype, device), label="src")
    out = data.draw(outs(shape, dtype, device), label="out")
    check_out_variant(SPEC, out, [src], {}, backend)


@given(data=st.data())
def test_property_conversions(backend, dtypes, device, data):
    """All dtype pairs, any layouts, src broadcast to out's shape."""
    src_dtype = data.draw(st.sampled_from(dtypes), label="src dtype")
    out_dtype = data.draw(st.sampled_from(dtypes), label="out dtype")
    out_shape = data.draw(shapes(), label="out shape")
    # src: a suffix of out's shape with some dims set to 1 (torch broadcasting)
    keep = data.draw(st.integers(0, len(out_shape)), label="src ndim")
    src_shape = tuple(1 if data.draw(st.booleans()) else s for s in out_shape[len(out_shape) - keep:])
    src = data.draw(tensors(src_shape, src_dtype, device), label="src")
    out = data.draw(outs(out_shape, out_dtype, device), label="out")
    expected = torch.empty_like(out).copy_(src).double()
    check_out_variant(SPEC, out, [src], {}, backend, expected=expected)


def test_prepared_broadcast_rebind(backend, dtype, device, gen):
    """A prepared broadcasting copy accepts new sources of the original (unexpanded) shape."""
    src = make_tensor((1, 5), dtype, device, "contiguous", gen)
    out = make_out((4, 5), dtype, device, "contiguous", gen)
    with oprt.prepare_copy(out, src, backend=backend) as prepared:
        new_src = make_tensor((1, 5), dtype, device, "contiguous", gen)
        prepared.run(out, new_src)
        assert torch.equal(out.cpu(), new_src.expand(4, 5).cpu())


def test_all_forms_float64_to_float16(backend, dtypes, device, gen):
    """Converting copy in all three forms (prepared and rebound too)."""
    if torch.float64 not in dtypes:
        pytest.skip(f"{backend} has no float64")
    src = make_inputs(Case("c", [(6, 7)], ["mixed"]), torch.float64, device, gen)
    check_all_forms(SPEC, src, {}, backend, gen, out_layout="sliced", out_dtype=torch.float16)
