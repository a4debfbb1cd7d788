"""Execution properties beyond single-call correctness, for every discovered
op: a reused descriptor meeting differently aligned data, concurrent calls
from several Python threads, and (CPU) results independent of the OpenMP
thread count. Shapes and params come from each op's description."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch

from described_calls import OP_NAMES, Call, planned_out_shape, shaped_params
from harness import skip_unless_available
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_bitwise_equal, make_generator

op_names = pytest.mark.parametrize("op", OP_NAMES)


def _uniform_call(op, shape, dtype, device, gen) -> Call:
    """A call of `op` on inputs all of `shape` (params from its description)."""
    params = shaped_params(op, shape)
    if params is None:
        pytest.skip(f"{op} has no case of inputs sharing one {len(shape)}-d shape")
    description = DESCRIPTIONS[op]
    inputs = [torch.randn(shape, generator=gen).to(dtype).to(device) for _ in description.inputs]
    out_shape = planned_out_shape(description, [shape] * len(inputs), params)
    return Call(op, inputs, params, torch.empty(out_shape, dtype=dtype, device=device))


def _at_offset(values: torch.Tensor, offset: int) -> torch.Tensor:
    """`values` copied into fresh storage `offset` elements past its start
    (same shape and strides, different alignment)."""
    buffer = torch.empty(values.numel() + offset, dtype=values.dtype, device=values.device)
    return buffer[offset:].view(values.shape).copy_(values)


@op_names
@pytest.mark.parametrize("dtype_name", ["float32", "float16"])
def test_alignment_changes_under_one_descriptor(op, dtype_name, backend, device):
    """The cache key has no data pointers, so one descriptor serves aligned
    and misaligned data alike; both cached calls and a prepared op must
    handle every element offset (vector kernels may assume alignment)."""
    skip_unless_available(op, backend, device)
    dtype = getattr(torch, dtype_name)
    call = _uniform_call(op, (3, 257), dtype, device, make_generator(11))
    with call.prepare(backend) as prepared:
        for offset in range(5):
            inputs = [_at_offset(t, (offset + k) % 5) for k, t in enumerate(call.inputs)]
            out = _at_offset(torch.full(call.out.shape, float("nan"), dtype=dtype, device=device), offset)
            call.op_(out, backend, inputs)
            call.check(out, inputs, f"{op}_ at offset {offset}")
            out.fill_(float("nan"))
            prepared.run(out, *inputs)
            call.check(out, inputs, f"prepared {op} at offset {offset}")


@op_names
def test_concurrent_calls(op, backend, device):
    """Several Python threads share the cached descriptor (ctypes releases the
    GIL, so the C calls really overlap); every result must be right."""
    skip_unless_available(op, backend, device)
    gen = make_generator(12)
    jobs = []
    for _ in range(4):
        call = _uniform_call(op, (64, 300), torch.float32, device, gen)
        expected = call.op_(torch.empty_like(call.out), backend)
        call.check(expected, msg=f"{op} before the threads")
        jobs.append((call, expected))
    errors = []

    def worker(call, expected):
        try:
            out = torch.empty_like(call.out)
            for _ in range(100):
                out.fill_(float("nan"))
                call.op_(out, backend)
                assert_bitwise_equal(out, expected, f"{op} in a thread")
        except Exception as error:  # reported below, with the thread's traceback lost but the message kept
            errors.append(error)

    threads = [threading.Thread(target=worker, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# Every op's cases large enough to split over threads (more than one grain of
# 32768 elements), in two dtypes; a digest of all the results.
_THREADS_SCRIPT = """
import hashlib, torch, operator_runtime as oprt
from operator_runtime import BackendUnavailableError
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import make_generator, make_tensor
digest = hashlib.sha256()
ran = []
for name, description in DESCRIPTIONS.items():
    op = getattr(oprt, name)
    for case in description.cases:
        if case.out_shape is not None or max(torch.Size(s).numel() for s in case.shapes) < 32768:
            continue
        for dtype in (torch.float32, torch.bfloat16):
            g = make_generator(5)
            inputs = [make_tensor(s, dtype, "cpu", k, g) for s, k in zip(case.shapes, case.layouts)]
            try:
                result = op(*inputs, **case.params, backend="cpu")
            except BackendUnavailableError:
                continue
            ran.append(f"{name}-{case.name}-{dtype}")
            digest.update(result.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
print(digest.hexdigest(), len(ran), " ".join(ran))
"""


def test_cpu_bits_do_not_depend_on_thread_count(backend):
    """parallel.h promises bitwise-identical results whatever the thread
    count; the descriptions' medium cases make the kernels split their work."""
    if backend != "cpu":
        pytest.skip("a CPU-backend property")
    digests = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, OMP_NUM_THREADS=threads, PYTHONPATH=os.pathsep.join(sys.path))
        run = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        digest, count, _ = (run.stdout.strip() + " ").split(" ", 2)
        assert int(count) > 0, "no op ran a case large enough to split"
        digests.add(run.stdout.strip())
    assert len(digests) == 1, "results differ between OMP_NUM_THREADS=1, 2 and 3"
