"""softmax / softmax_ / prepare_softmax against torch.softmax in float64,
-inf/+inf/NaN rows included (NaN positions must match exactly)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, strategies as st

import operator_runtime as oprt
from harness import (OpSpec, check_all_forms, check_normalized, check_out_variant, outs, shapes,
                     tensors)
from operator_runtime_testing import assert_untouched, make_out, make_tensor, snapshot

INF, NAN = float("inf"), float("nan")


def reference(inputs, params):
    return torch.softmax(inputs[0], params.get("dim", -1))


def check(actual, expected, inputs, params, msg):
    src = inputs[0]
    row_length = src.shape[params.get("dim", -1)] if src.dim() else 1
    check_normalized(actual, expected, inputs, params, msg, row_length=row_length)


SPEC = OpSpec("softmax", oprt.softmax, oprt.softmax_, oprt.prepare_softmax, reference, check)


def test_all_neg_inf_row_is_nan(backend, dtype, device):
    src = torch.full((3, 8), -INF, dtype=dtype, device=device)
    assert torch.isnan(oprt.softmax(src, backend=backend).cpu()).all()


def test_rows_sum_to_one(backend, dtype, device, gen):
    src = make_tensor((16, 300), dtype, device, "mixed", gen) * 5
    sums = oprt.softmax(src, 1, backend=backend).double().cpu().sum(1)
    tolerance = {torch.float64: 1e-12, torch.float32: 1e-5}.get(dtype, 0.05)
    assert torch.allclose(sums, torch.ones_like(sums), rtol=0, atol=tolerance)


def test_tall_column_softmax_sum_does_not_drift(backend, device):
    """softmax over dim 0 of 2^24 - 5 rows: row 0 is 1, the rest 0, so every
    column sums exp(-1) 2^24 times. A thread's running sum over its rows
    drifted with their count (float32 outputs 1e-5 off); compensated, the
    outputs stay within a few float32 roundings and ex2.approx's error."""
    if device.type == "cpu":
        pytest.skip("sized for a GPU")
    rows = 2 ** 24 - 5
    src = torch.zeros(rows, 16, device=device)
    src[0] = 1.0
    out = oprt.softmax(src, 0, backend=backend).double()
    e = torch.tensor(-1.0, dtype=torch.float64).exp().item()
    total = 1.0 + (rows - 1) * e
    error = max(abs(out[0] - 1.0 / total).max().item() * total, abs(out[1:] - e / total).max().item() * total / e)
    assert error <= 64 * 2 ** -24, error / 2 ** -24


@pytest.mark.parametrize("shape", [(6, 50257), (3, 3 * 2 ** 16 + 5)], ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "offset"])
def test_long_rows_not_whole_vectors(backend, dtype, device, gen, shape, kind):
    """Rows longer than a block holds, their length no multiple of a 16-byte
    vector, so each row starts at another place within a vector (TileLang
    cuts them into segments of vectors counted from the tensor's start and
    takes each row's few leftover elements one by one)."""
    check_all_forms(SPEC, [make_tensor(shape, dtype, device, kind, gen) * 4], {"dim": -1}, backend, gen)


@pytest.mark.parametrize("kind", ["contiguous", "transposed", "sliced", "offset", "mixed"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_in_place(backend, dtype, device, gen, kind, dim):
    """softmax_(x, x): out is exactly the input."""
    x = make_tensor((6, 5, 4), dtype, device, kind, gen)
    expected = torch.softmax(x.double().cpu(), dim)
    assert oprt.softmax_(x, x, dim, backend=backend) is x
    check(x, expected, [x], {"dim": dim}, f"softmax_(x, x, {dim})")


def test_in_place_prepared(backend, dtype, device, gen):
    x = make_tensor((9, 40), dtype, device, "sliced", gen)
    expected = torch.softmax(x.double().cpu(), 1)
    with oprt.prepare_softmax(x, x, 1, backend=backend) as prepared:
        prepared.run()
    check(x, expected, [x], {"dim": 1}, "prepared softmax_(x, x)")
    y = make_tensor((9, 40), dtype, device, "sliced", gen)
    before = snapshot(y)
    assert y.stride() == x.stride()
    expected = torch.softmax(y.double().cpu(), 1)
    with oprt.prepare_softmax(x, x, 1, backend=backend) as prepared:
        out = make_out(y.shape, dtype, device, "sliced", gen)
        prepared.run(out, y)
    check(out, expected, [y], {"dim": 1}, "prepared softmax rebound from in-place to out-of-place")
    assert_untouched(y, before)


@pytest.mark.parametrize("shape,dim", [((300, 1030), 0), ((7, 2049), 0), ((5, 64), 0), ((3, 50, 136), 1),
                                       ((4, 9, 1000), 0), ((2, 3000, 72), 1)],
                         ids=["1030-wide", "2049-wide", "64-wide", "3-runs", "9000-wide", "2-runs-72-wide"])
def test_columns_with_specials(backend, dtype, device, gen, shape, dim):
    """Softmax down a non-last dim over widths that cut column blocks
    unevenly (tails under a vector, several runs), with -inf and NaN down
    some columns: NaN columns where torch has them, the rest close."""
    src = make_tensor(shape, dtype, device, "contiguous", gen)
    flat = src.view(-1)
    flat[::97] = -INF
    src.select(dim, 1)[..., 5::11] = NAN
    expected = torch.softmax(src.double().cpu(), dim)
    result = oprt.softmax(src, dim, backend=backend)
    assert torch.equal(torch.isnan(result.cpu()), torch.isnan(expected)), "NaN positions differ from torch's"
    check(result, expected, [src], {"dim": dim}, f"softmax {shape} over dim {dim}")


# -- properties -----------------------------------------------------------------------

SPECIALS = st.sampled_from([-INF, -INF, INF, NAN, 1e4, -1e4, 0.0])


def sprinkle(tensor, data):
    """Writes a few special values into random elements of the tensor's
    storage (aliased elements of an expanded tensor all change together)."""
    flat = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(tensor.untyped_storage())
    if tensor.numel() == 0 or flat.numel() == 0:
        return tensor
    count = data.draw(st.integers(0, 4), label="specials")
    for _ in range(count):
        position = data.draw(st.integers(0, flat.numel() - 1), label="position")
        flat[position] = data.draw(SPECIALS, label="value")
    return tensor


@given(data=st.data())
def test_property_dims_layouts_specials(backend, dtypes, device, data):
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1) if shape else st.sampled_from([0, -1]), label="dim")
    src = sprinkle(data.draw(tensors(shape, dtype, device), label="src"), data)
    params = {"dim": dim}
    expected = reference([src.double().cpu()], params)
    check(oprt.softmax(src, dim, backend=backend), expected, [src], params, "softmax")
    out = data.draw(outs(shape, dtype, device), label="out")
    check_out_variant(SPEC, out, [src], params, backend, expected=expected)


@given(data=st.data())
def test_property_in_place(backend, dtypes, device, data):
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    x = sprinkle(data.draw(tensors(shape, dtype, device, allow_expand=False), label="x"), data)
    expected = reference([x.double().cpu()], {"dim": dim})
    oprt.softmax_(x, x, dim, backend=backend)
    check(x, expected, [x], {"dim": dim}, "softmax_(x, x)")
