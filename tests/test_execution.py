"""Execution properties beyond single-call correctness: a reused descriptor
meeting differently aligned data, concurrent calls from several Python
threads, and (CPU) results independent of the OpenMP thread count."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch

import operator_runtime as oprt
from harness import check_normalized, check_sum
from operator_runtime_testing import assert_bitwise_equal, assert_close, make_generator

# op name -> (op_(out, *inputs, *params), out shape from input shape, params, n inputs)
OPS = {
    "copy": (oprt.copy_, lambda s: s, (), 1),
    "vector_add": (oprt.vector_add_, lambda s: s, (), 2),
    "reduce_sum": (oprt.reduce_sum_, lambda s: s[:-1], (-1,), 1),
    "softmax": (oprt.softmax_, lambda s: s, (-1,), 1),
}
REFERENCES = {
    "copy": lambda xs: xs[0],
    "vector_add": lambda xs: xs[0] + xs[1],
    "reduce_sum": lambda xs: xs[0].sum(-1),
    "softmax": lambda xs: torch.softmax(xs[0], -1),
}


def _at_offset(values: torch.Tensor, offset: int) -> torch.Tensor:
    """`values` copied into fresh storage `offset` elements past its start
    (same shape and strides, different alignment)."""
    buffer = torch.empty(values.numel() + offset, dtype=values.dtype, device=values.device)
    return buffer[offset:].view(values.shape).copy_(values)


def _check(name, out, inputs):
    expected = REFERENCES[name]([t.double().cpu() for t in inputs])
    if name == "reduce_sum":
        check_sum(out, expected, inputs, {}, name, reduced_count=inputs[0].shape[-1])
    elif name == "softmax":
        check_normalized(out, expected, inputs, {}, name, row_length=inputs[0].shape[-1])
    else:
        assert_close(out, expected, out.dtype, msg=name)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype_name", ["float32", "float16"])
def test_alignment_changes_under_one_descriptor(op, dtype_name, backend, device):
    """The cache key has no data pointers, so one descriptor serves aligned
    and misaligned data alike; both cached calls and a prepared op must
    handle every element offset (vector kernels may assume alignment)."""
    op_, out_shape, params, count = OPS[op]
    dtype = getattr(torch, dtype_name)
    shape = (3, 257)
    gen = make_generator(11)
    base = [torch.randn(shape, generator=gen).to(dtype).to(device) for _ in range(count)]
    out0 = torch.empty(out_shape(shape), dtype=dtype, device=device)
    prepared = getattr(oprt, f"prepare_{op}")(out0, *base, *params, backend=backend)
    with prepared:
        for offset in range(5):
            inputs = [_at_offset(t, (offset + k) % 5) for k, t in enumerate(base)]
            out = _at_offset(torch.full(out_shape(shape), float("nan"), dtype=dtype, device=device), offset)
            op_(out, *inputs, *params, backend=backend)
            _check(op, out, inputs)
            out.fill_(float("nan"))
            prepared.run(out, *inputs)
            _check(op, out, inputs)


@pytest.mark.parametrize("op", list(OPS))
def test_concurrent_calls(op, backend, device):
    """Several Python threads share the cached descriptor (ctypes releases the
    GIL, so the C calls really overlap); every result must be right."""
    op_, out_shape, params, count = OPS[op]
    shape = (64, 300)
    gen = make_generator(12)
    jobs = []
    for _ in range(4):
        inputs = [torch.randn(shape, generator=gen).to(device) for _ in range(count)]
        expected = op_(torch.empty(out_shape(shape), device=device), *inputs, *params, backend=backend)
        jobs.append((inputs, expected))
    errors = []

    def worker(inputs, expected):
        try:
            out = torch.empty(out_shape(shape), device=device)
            for _ in range(100):
                out.fill_(float("nan"))
                op_(out, *inputs, *params, backend=backend)
                assert_bitwise_equal(out, expected, f"{op} in a thread")
        except Exception as error:  # reported below, with the thread's traceback lost but the message kept
            errors.append(error)

    threads = [threading.Thread(target=worker, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


_THREADS_SCRIPT = """
import hashlib, torch, operator_runtime as oprt
g = torch.Generator().manual_seed(5)
digest = hashlib.sha256()
for dtype in (torch.float32, torch.bfloat16):
    x = torch.randn(300, 2001, generator=g).to(dtype)
    for result in (oprt.reduce_sum(x, -1), oprt.reduce_sum(x, 0), oprt.reduce_sum(x, None),
                   oprt.softmax(x, -1), oprt.softmax(x, 0), oprt.vector_add(x, x[0]), oprt.copy(x.t())):
        digest.update(result.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
print(digest.hexdigest())
"""


def test_cpu_bits_do_not_depend_on_thread_count(backend):
    """parallel.h promises bitwise-identical results whatever the thread
    count; medium tensors make the kernels split their work."""
    if backend != "cpu":
        pytest.skip("a CPU-backend property")
    digests = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, OMP_NUM_THREADS=threads, PYTHONPATH=os.pathsep.join(sys.path))
        run = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr
        digests.add(run.stdout.strip())
    assert len(digests) == 1, "results differ between OMP_NUM_THREADS=1, 2 and 3"
