"""Tensors of a given logical shape laid out in memory in the ways the ops
must handle: contiguous, transposed (permuted storage), sliced (step > 1),
offset (storage offset, odd so 16-byte alignment breaks), expanded
(stride-0 broadcast, inputs only) and mixed (all but expanded at once).

Values come from torch.randn on a caller-supplied generator (created on the
CPU, so the same seed gives the same data on every device); the whole
storage is random, gaps included, and nothing is ever zero-filled.
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import torch

LAYOUT_KINDS = ("contiguous", "transposed", "sliced", "offset", "expanded", "mixed")
INPUT_LAYOUTS = LAYOUT_KINDS
# An expanded out would overlap itself, which the runtime must refuse.
OUTPUT_LAYOUTS = ("contiguous", "transposed", "sliced", "offset", "mixed")


def seed_from_text(text: str) -> int:
    """A stable seed from a string (e.g. a pytest node id)."""
    return zlib.crc32(text.encode())


def make_generator(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(int(seed))


def random_values(count: int, dtype: torch.dtype, generator: torch.Generator, device="cpu") -> torch.Tensor:
    """`count` standard-normal values rounded to `dtype`, as a 1-D tensor."""
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    values = torch.randn(count, generator=generator, dtype=wide)
    return values.to(dtype).to(device)


def strided_tensor(shape: Sequence[int], dtype: torch.dtype, device, generator: torch.Generator, *,
                   perm: Sequence[int] | None = None, steps: Sequence[int] | None = None, offset: int = 0,
                   expand: Sequence[int] = ()) -> torch.Tensor:
    """A tensor with logical `shape` over a random buffer.

    perm: the storage order of the dims, outermost first (default: identity).
    steps: per-dim step; the buffer holds size*step elements along the dim
           and the tensor takes every step-th one.
    offset: elements of the buffer before the tensor's first element.
    expand: dims given stride 0 (the buffer holds a single element there).
    """
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    perm = tuple(range(ndim)) if perm is None else tuple(perm)
    steps = (1,) * ndim if steps is None else tuple(int(s) for s in steps)
    if sorted(perm) != list(range(ndim)) or len(steps) != ndim or min(steps, default=1) < 1 or offset < 0:
        raise ValueError(f"bad layout: shape {shape}, perm {perm}, steps {steps}, offset {offset}")
    expand = set(expand)
    base = [1 if d in expand else shape[d] for d in range(ndim)]
    alloc = [base[d] * steps[d] for d in range(ndim)]
    strides = [0] * ndim
    running = 1
    for d in reversed(perm):  # innermost storage dim last
        strides[d] = 0 if d in expand else running * steps[d]
        running *= max(alloc[d], 1)
    total = offset + math.prod(alloc) + 1  # +1: room for a trailing element, never read
    buffer = random_values(total, dtype, generator, device)
    return buffer.as_strided(shape, strides, offset)


def layout_arguments(kind: str, shape: Sequence[int]) -> dict:
    """strided_tensor keyword arguments of a named layout kind for `shape`."""
    ndim = len(shape)
    reverse = tuple(reversed(range(ndim)))
    if kind == "contiguous":
        return {}
    if kind == "transposed":  # dims stored in reverse order; a 1-D or 0-d tensor stays contiguous
        return {"perm": reverse}
    if kind == "sliced":  # steps 3 and 2 alternate, so no dim is dense
        return {"steps": tuple(3 if d % 2 == 0 else 2 for d in range(ndim))}
    if kind == "offset":  # one element in: breaks 16-byte (and for 16-bit dtypes 4-byte) alignment
        return {"offset": 1}
    if kind == "expanded":  # every other dim broadcast with stride 0, starting with dim 0
        return {"expand": tuple(d for d in range(0, ndim, 2))}
    if kind == "mixed":
        return {"perm": reverse, "steps": (2,) * ndim, "offset": 3}
    raise ValueError(f"unknown layout kind {kind!r} (known: {', '.join(LAYOUT_KINDS)})")


def make_tensor(shape: Sequence[int], dtype: torch.dtype, device, kind: str = "contiguous",
                generator: torch.Generator | None = None) -> torch.Tensor:
    """A random tensor of logical `shape` in layout `kind`."""
    generator = make_generator(0) if generator is None else generator
    return strided_tensor(shape, dtype, device, generator, **layout_arguments(kind, shape))


def make_out(shape: Sequence[int], dtype: torch.dtype, device, kind: str = "contiguous",
             generator: torch.Generator | None = None) -> torch.Tensor:
    """An output tensor in layout `kind`, its elements NaN and its gaps random."""
    if kind not in OUTPUT_LAYOUTS:
        raise ValueError(f"{kind!r} is not an output layout (expected one of {', '.join(OUTPUT_LAYOUTS)})")
    return make_tensor(shape, dtype, device, kind, generator).fill_(float("nan"))


def fresh_like(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """New random storage viewed with exactly `tensor`'s shape, strides and
    storage offset (so a prepared op accepts it in place of `tensor`)."""
    count = tensor.untyped_storage().nbytes() // tensor.element_size()
    buffer = random_values(max(count, 1), tensor.dtype, generator, tensor.device)
    return buffer.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
