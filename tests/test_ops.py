"""Every discovered op, every backend and dtype: the three call forms against
a float64 torch reference (NaN-poisoned outputs, untouched inputs and gaps),
determinism, in-place calls and special values (inf, NaN, signed zeros)."""

from __future__ import annotations

import pytest
import torch

from harness import check_case, check_deterministic, skip_unless_available, spec_for, upcast
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_untouched, make_out, make_tensor, snapshot

INF, NAN = float("inf"), float("nan")

CASES = [(name, case) for name, d in DESCRIPTIONS.items() for case in d.cases]
MEDIUM = [(name, case) for name, case in CASES if case.name.startswith("medium")]
IN_PLACE = [(name, k) for name, d in DESCRIPTIONS.items() if d.in_place for k in range(len(d.inputs))]


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n}-{c.name}" for n, c in CASES])
def test_correctness(name, case, backend, dtype, device, gen):
    skip_unless_available(name, backend, device)
    check_case(spec_for(name), case, backend, dtype, device, gen)


@pytest.mark.parametrize("name,case", MEDIUM, ids=[f"{n}-{c.name}" for n, c in MEDIUM])
def test_deterministic(name, case, backend, dtype, device, gen):
    skip_unless_available(name, backend, device)
    check_deterministic(spec_for(name), case, backend, dtype, device, gen)


@pytest.mark.parametrize("kind", ["contiguous", "transposed", "sliced", "offset", "mixed"])
@pytest.mark.parametrize("name,which", IN_PLACE, ids=[f"{n}-input{k}" for n, k in IN_PLACE])
def test_in_place(name, which, backend, dtype, device, gen, kind):
    """out is one of the inputs itself (same storage, shape and strides)."""
    skip_unless_available(name, backend, device)
    spec, description = spec_for(name), DESCRIPTIONS[name]
    shape = (7, 33)
    inputs = [make_tensor(shape, dtype, device, kind, gen) for _ in description.inputs]
    others = [snapshot(t) for k, t in enumerate(inputs) if k != which]
    expected = spec.reference(upcast(inputs), {})
    assert spec.op_(inputs[which], *inputs, backend=backend) is inputs[which]
    spec.check(inputs[which], expected, inputs, {}, f"{name}_ in place on input {which}")
    for t, s in zip([t for k, t in enumerate(inputs) if k != which], others):
        assert_untouched(t, s)


ELEMENTWISE_SPECIALS = [0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 1e-30, -1e-30, 3e38, -3e38, 65504.0, 1e-7, 0.5]

SPECIAL_ROWS = {
    "some_neg_inf": [1.0, -INF, 2.0, -INF, 0.5],
    "all_neg_inf": [-INF] * 5,
    "one_neg_inf_rest_finite": [-INF, 3.0, 3.0, 3.0, 3.0],
    "one_pos_inf": [1.0, INF, 2.0, 0.0, -1.0],
    "two_pos_inf": [INF, 1.0, INF, 0.0, 0.0],
    "pos_and_neg_inf": [INF, -INF, 0.0, 1.0, 2.0],
    "one_nan": [1.0, 2.0, NAN, 0.0, 1.0],
    "nan_and_neg_inf": [NAN, -INF, -INF, -INF, -INF],
    "large_values": [1e4, 1e4 - 1.0, -1e4, 1e4 - 3.0, 0.0],  # exp overflows unless the max is subtracted
    "equal_values": [7.0] * 5,
    "plain": [0.1, -0.2, 0.3, 2.0, -1.0],
}

SPECIAL = [(name, d.special_values) for name, d in DESCRIPTIONS.items() if d.special_values]


@pytest.mark.parametrize("name,kind", SPECIAL, ids=[n for n, _ in SPECIAL])
def test_special_values(name, kind, backend, dtype, device):
    """inf, NaN, signed zeros and extremes give torch's results (NaN where
    torch has NaN, the same infinities); compared in float64 after torch's
    own rounding of the inputs to `dtype`."""
    skip_unless_available(name, backend, device)
    spec, description = spec_for(name), DESCRIPTIONS[name]
    if kind == "elementwise":
        values = torch.tensor(ELEMENTWISE_SPECIALS, dtype=torch.float64).to(dtype)
        # every input sees every special value against every other one
        grids = torch.meshgrid(*[values] * len(description.inputs), indexing="ij")
        calls = [(tuple(g.reshape(-1).to(device) for g in grids), {})]
    else:
        rows = torch.tensor(list(SPECIAL_ROWS.values()), dtype=torch.float64).to(dtype)
        calls = [((rows.to(device),), {"dim": -1}), ((rows.t().contiguous().to(device),), {"dim": 0})]
    for inputs, params in calls:
        expected = spec.reference(upcast(inputs), params)
        result = spec.op(*inputs, **params, backend=backend)
        spec.check(result, expected, list(inputs), params, f"{name} special values {params}")
        out = make_out(expected.shape, dtype, device, "sliced", torch.Generator().manual_seed(0))
        spec.op_(out, *inputs, **params, backend=backend)
        spec.check(out, expected, list(inputs), params, f"{name}_ special values {params}")
