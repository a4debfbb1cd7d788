"""GPU-only properties of every discovered op (operator_runtime.ops.
DESCRIPTIONS) on every backend that runs on CUDA tensors (nvidia, tilelang):
non-default streams, CUDA graph capture, determinism, tensors on a
non-current device, more than 2**31 elements, and a CUDA error surfacing as
OperatorRuntimeError. Each test runs an op on its description's "medium"
cases (more than a block's worth of work, in the layouts the description
names) and checks it against the description's float64 reference by its
accuracy kind; an op the backend has no kernel for is skipped with the
reason.

The tests of one NVIDIA layer's kernel variants sit next to it, and run for
every op of its family: ops/common/nvidia/test_elementwise_nvidia.py,
ops/common/nvidia/test_along_dim_nvidia.py, ops/<op>/nvidia/
test_<op>_nvidia.py (helpers shared with them: tests/cuda_helpers.py).

Each test takes the `backend` fixture, so `--backend nvidia` (or tilelang)
selects it; a backend that does not run on CUDA is skipped with the reason.
Everything is compared on the GPU (float64 references there too).

    python -m pytest tests/test_cuda_backends.py ops --backend nvidia -q
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest
import torch

from cuda_helpers import (NAN, NEEDS_CUDA, call, call_, case_inputs, case_params, check_deterministic,  # noqa: F401
                          check_graph_capture, check_result, cuda_backend, dtype_params, op_params, out_like,
                          prepare, reference64, root)
from operator_runtime.ops import DESCRIPTIONS

pytestmark = NEEDS_CUDA

CASES = case_params(DESCRIPTIONS.values())


# -- non-default streams -------------------------------------------------------------

@pytest.mark.parametrize("description,case", CASES)
def test_non_default_stream(cuda_backend, description, case):
    """Data produced on a side stream that is still busy when the op is
    enqueued: an op that ran on another stream would read stale zeros."""
    params = case.params
    inputs = case_inputs(case, torch.float32, 11)
    expected = reference64(description, inputs, params)
    roots = [root(t) for t in inputs]
    values = [r.clone() for r in roots]
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for r in roots:
            r.zero_()
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU time on `stream` only
        for r, v in zip(roots, values):
            r.copy_(v)
        result = call(description, inputs, params, cuda_backend)
        out = out_like(description, inputs, params)
        call_(description, out, inputs, params, cuda_backend)
        prepared_out = torch.full_like(out, NAN)
        prepared = prepare(description, prepared_out, inputs, params, cuda_backend)
        prepared.run()
        torch.cuda._sleep(20_000_000)
        for r in roots:
            r.zero_()  # prepared on stream-ordered data only: re-running sees zeros
        for r, v in zip(roots, values):
            r.copy_(v)
        prepared.run()
    stream.synchronize()
    for name, got in (("op", result), ("op_", out), ("prepared", prepared_out)):
        check_result(description, got, inputs, params, f"{description.name} {name} on a side stream",
                     expected64=expected)
    prepared.destroy()


# -- CUDA graphs ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description,case", CASES)
def test_cuda_graph_capture(cuda_backend, description, case, dt):
    """A prepared op and an op_ call captured in a CUDA graph; replays on new
    data copied into the captured inputs give the right results."""
    params = case.params
    check_graph_capture(
        f"{description.name} {case.name}",
        lambda o, x: prepare(description, o, x, params, cuda_backend),
        lambda o, x: call_(description, o, x, params, cuda_backend),
        lambda seed: case_inputs(case, dt, seed),
        lambda x: out_like(description, x, params),
        lambda o, x, msg: check_result(description, o, x, params, msg))


# -- determinism -----------------------------------------------------------------------

@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
@pytest.mark.parametrize("description,case", CASES)
def test_deterministic(cuda_backend, description, case, dt):
    """Bit-identical results run after run (no atomics in a different order)."""
    inputs = case_inputs(case, dt, 60)
    check_deterministic(f"{description.name} {case.name}",
                        lambda: call(description, inputs, case.params, cuda_backend))


# -- a non-current device -------------------------------------------------------------

@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs at least 2 CUDA devices")
@pytest.mark.parametrize("description,case", CASES)
def test_tensors_on_a_non_current_device(cuda_backend, description, case):
    torch.cuda.set_device(0)
    params = case.params
    inputs = case_inputs(case, torch.float32, 70, device="cuda:1")
    expected = reference64(description, inputs, params)
    results = []
    for stream in (None, torch.cuda.Stream(device=1)):  # the legacy default stream, then a side stream
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            results.append(call(description, inputs, params, cuda_backend))
            out = out_like(description, inputs, params)
            call_(description, out, inputs, params, cuda_backend)
            results.append(out)
            prepared_out = torch.full_like(out, NAN)
            with prepare(description, prepared_out, inputs, params, cuda_backend) as prepared:
                prepared.run()
            results.append(prepared_out)
        torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0, "an op changed the current device"
    for i, got in enumerate(results):
        assert got.device == torch.device("cuda:1"), f"{description.name} result {i} on {got.device}"
        check_result(description, got, inputs, params, f"{description.name} result {i} on cuda:1",
                     expected64=expected)


# -- more than 2**31 elements ------------------------------------------------------------

ROWS_PAST_2_31 = (1 << 16) + 1, 1 << 15  # 2**31 + 2**15 elements, rows of 2**15


@pytest.mark.parametrize("description", op_params(DESCRIPTIONS.values()))
def test_rows_past_2_to_the_31(cuda_backend, description):
    """float16 inputs of 2**31 + 2**15 elements (4 GiB each) as 65537 rows of
    32768, the op at its default params (row by row along the last dim for
    every family): 32-bit offsets would wrap. Checked against the reference
    in slices of rows (each op at its defaults acts on each row alone), the
    last rows (past 2**31) included."""
    if any(p.name == "dim" and p.default != -1 for p in description.params):
        pytest.skip(f"{description.name}: its default dim is not the last")
    need = (len(description.inputs) + 1) * 4 * 2**30 + 3 * 2**30
    free, _ = torch.cuda.mem_get_info()
    if free < need:
        pytest.skip(f"needs ~{need / 2**30:.0f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    rows, columns = ROWS_PAST_2_31
    inputs = []
    for k in range(len(description.inputs)):
        x = torch.empty(rows, columns, dtype=torch.float16, device="cuda")
        inputs.append(x.normal_(generator=torch.Generator(device="cuda").manual_seed(9 + k)))
    out = call(description, inputs, {}, cuda_backend)
    assert out.shape[0] == rows, f"{description.name}: out of shape {tuple(out.shape)}"
    step = 2048
    for start in (*range(0, rows - step, 7 * step), rows - step):  # every 7th slice and the last
        part = slice(start, start + step)
        check_result(description, out[part], [x[part] for x in inputs], {},
                     f"{description.name}: rows {start}..{start + step} of {rows}")
    del out
    torch.cuda.empty_cache()


# -- a CUDA error becomes OperatorRuntimeError ----------------------------------------

_FAULT_SCRIPT = r"""
import sys
import torch
import operator_runtime as oprt
from operator_runtime import BackendUnavailableError, OperatorRuntimeError
from operator_runtime.ops import DESCRIPTIONS

backend, name = sys.argv[1], sys.argv[2]
description = DESCRIPTIONS[name]
op, op_, prepare = (getattr(oprt, f) for f in (name, f"{name}_", f"prepare_{name}"))
x = torch.randn(1024, 1024, device="cuda")
# a transposed source: no op may take it as one contiguous run (a
# cudaMemcpyAsync could take an unknown address for host memory and fault
# in the driver rather than in a kernel); every kernel reads it as it is
inputs = [x.t()] * len(description.inputs)
try:
    out = op(*inputs, backend=backend)
    prepared = prepare(out, *inputs, backend=backend)
except BackendUnavailableError as error:
    print(f"SKIP: {name} on {backend}: {error.reason}")
    sys.exit(0)
descriptor = prepared._descriptor
if not hasattr(descriptor, "c_execute"):
    print("SKIP: the backend's descriptors are not C descriptors")
    sys.exit(0)
torch.cuda.synchronize()


class Unmapped:
    # an address no allocation uses: the kernel's first load faults
    def data_ptr(self):
        return 1 << 12


try:
    descriptor.execute(out, (Unmapped(), *prepared._inputs[1:]), prepared._workspace,
                       torch.cuda.current_stream().cuda_stream)
    op_(out, *inputs, backend=backend)  # the (sticky) fault surfaces here at the latest
except OperatorRuntimeError as error:
    print("OPERATOR_RUNTIME_ERROR", error.status_name, error.message)
    sys.exit(0)
except Exception as error:
    print("OTHER", type(error).__name__, error)
    sys.exit(3)
print("NO_ERROR")
sys.exit(4)
"""


@pytest.mark.parametrize("description", op_params(DESCRIPTIONS.values()))
def test_cuda_error_raises_operator_runtime_error(cuda_backend, description):
    """An illegal address in a kernel (in a subprocess: the fault poisons its
    CUDA context) comes back as OperatorRuntimeError carrying CUDA's text."""
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1", PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, "-c", _FAULT_SCRIPT, cuda_backend, description.name], env=env,
                         capture_output=True, text=True, timeout=180)
    output = (run.stdout + run.stderr).strip()
    # TileLang logs its first compile on stdout, so the verdict is the last line.
    verdict = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    if verdict.startswith("SKIP"):
        pytest.skip(verdict)
    assert run.returncode == 0 and "OPERATOR_RUNTIME_ERROR" in run.stdout, output[-2000:]
    assert "cuda" in run.stdout.lower() or "illegal" in run.stdout.lower(), output[-2000:]
