"""The CPU elementwise layer's streaming stores (non-temporal, for outputs
larger than the last-level cache), forced on small tensors with
OPRT_TUNE_CPU_STREAM_BYTES=0 so every layout takes them: results must not
change, for every elementwise op, in place or not."""

from __future__ import annotations

import pytest

from harness import skip_unless_available, spec_for, upcast
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import make_out, make_tensor

ELEMENTWISE = [name for name, d in DESCRIPTIONS.items() if d.family == "elementwise"]


@pytest.mark.parametrize("layout", ["contiguous", "sliced", "offset"])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_streaming_stores(name, layout, backend, dtype, device, gen, monkeypatch):
    if backend != "cpu":
        pytest.skip("a CPU layer")
    skip_unless_available(name, backend, device)
    monkeypatch.setenv("OPRT_TUNE_CPU_STREAM_BYTES", "0")  # read when the descriptor is created
    spec = spec_for(name)
    shape = (5, 4099)  # rows of more than 1024 elements: long enough to stream, odd for the tails
    inputs = [make_tensor(shape, dtype, device, layout, gen) for _ in DESCRIPTIONS[name].inputs]
    expected = spec.reference(upcast(inputs), {})
    out = make_out(shape, dtype, device, layout, gen)
    with spec.prepare(out, *inputs, backend=backend) as prepared:  # a new descriptor: the knob applies
        prepared.run()
    spec.check(out, expected, inputs, {}, f"{name} with streaming stores")
