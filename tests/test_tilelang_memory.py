"""TileLang backend on a GPU: device memory returns to its baseline after
1,000 calls over varied shapes (the seed's TileLang path compiled a kernel
per size and leaked outside PyTorch's allocator). Skipped where the
tilelang backend is unavailable. Run alone with
    pytest tests/test_tilelang_memory.py --backend tilelang -s
"""

from __future__ import annotations

import gc
import random
from importlib.util import find_spec

import pytest
import torch

import operator_runtime as oprt
from operator_runtime._internal.operator import DESCRIPTOR_CACHE, WORKSPACES
from operator_runtime.ops import DESCRIPTIONS

if find_spec("tilelang"):
    from operator_runtime._internal.tilelang_kernels import discovered_ops

pytestmark = pytest.mark.skipif(oprt.backend_unavailable_reason("tilelang") is not None,
                                reason=f"tilelang unavailable: {oprt.backend_unavailable_reason('tilelang')}")

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Every op with a TileLang kernel file that the runtime describes.
OPS = sorted(set(discovered_ops()) & set(DESCRIPTIONS)) if find_spec("tilelang") else []


def _one_call(rng: random.Random):
    name = rng.choice(OPS)
    description = DESCRIPTIONS[name]
    rows, cols = rng.randint(1, 3000), rng.choice([1, 7, 128, 257, 1000, 4096, 5000, 40000])
    rows = max(1, min(rows, 4_000_000 // cols))
    dtype = rng.choice(DTYPES)
    x = torch.randn(rows, cols, device="cuda").to(dtype)
    if rng.random() < 0.3:
        x = x.t()
    inputs = [x] + [x[0] if rng.random() < 0.5 else x for _ in description.inputs[1:]]  # broadcast rows too
    params = {}
    if "dim" in description.param_names:
        params["dim"] = rng.choice([0, 1, None] if description.family == "reduction" else [0, 1])
    getattr(oprt, name)(*inputs, **params, backend="tilelang")


def _settle() -> None:
    """Drops what the engine keeps on purpose, both bounded: its scratch
    buffer per (device, stream), which grows to the largest workspace seen,
    and the descriptor cache (test_descriptor_cache_is_bounded checks it)."""
    WORKSPACES.buffers.clear()
    DESCRIPTOR_CACHE.clear()
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def _used_outside_torch() -> int:
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return total - free - torch.cuda.memory_reserved()


def test_memory_returns_to_baseline():
    rng = random.Random(7)
    for _ in range(75 * len(OPS)):  # warm-up: every kernel variant gets loaded once
        _one_call(rng)
    _settle()
    baseline_outside = _used_outside_torch()
    baseline_allocated = torch.cuda.memory_allocated()
    rng = random.Random(8)
    for _ in range(1000):
        _one_call(rng)
    _settle()
    grown_outside = _used_outside_torch() - baseline_outside
    grown_allocated = torch.cuda.memory_allocated() - baseline_allocated
    print(f"\nafter 1000 calls: outside torch {grown_outside / 2**20:+.1f} MiB, "
          f"torch allocated {grown_allocated / 2**20:+.1f} MiB")
    assert grown_allocated == 0
    assert grown_outside < 64 * 2**20, f"{grown_outside / 2**20:.1f} MiB more device memory outside torch"
