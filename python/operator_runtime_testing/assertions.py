"""Comparing an op's output with a float64 reference, and checking that
memory a call must not write was left alone."""

from __future__ import annotations

import math

import torch

# (rtol, atol) of one correctly rounded result in each dtype: a little more
# than half an ulp relative, plus a small absolute floor for values near 0.
TOLERANCES = {
    torch.float64: (1e-10, 1e-13),
    torch.float32: (1e-5, 1e-6),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (8e-3, 1e-5),
}

# Unit roundoff of the accumulation type: the issue asks for float32 (or
# wider) accumulation; float64 inputs accumulate in float64.
ACCUMULATION_EPS = {
    torch.float64: 2.0 ** -52,
    torch.float32: 2.0 ** -23,
    torch.float16: 2.0 ** -23,
    torch.bfloat16: 2.0 ** -23,
}

_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def require_cuda() -> None:
    """Skips the calling pytest test when no CUDA device is available (the
    seed project's helper)."""
    if not torch.cuda.is_available():
        import pytest  # only tests call this; the package does not depend on pytest

        pytest.skip("CUDA is required")


def poison(tensor: torch.Tensor) -> torch.Tensor:
    """Fills `tensor` with NaN so that any element the op fails to write shows
    up as a NaN mismatch. Returns `tensor`."""
    return tensor.fill_(float("nan"))


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return TOLERANCES[dtype]


def reduction_tolerance(dtype: torch.dtype, count: int, mean_abs: float) -> tuple[float, float]:
    """(rtol, atol) for a sum of `count` terms of mean magnitude `mean_abs`.

    A sum of n random terms has magnitude ~sqrt(n)*mean_abs, so one rounding
    to `dtype` at that scale is allowed even where cancellation makes the
    exact result small; float32 accumulation adds an error that grows at most
    ~n*eps*mean_abs for a plain running sum (pairwise sums do better)."""
    rtol, atol = TOLERANCES[dtype]
    n = max(int(count), 1)
    if n > 1:
        atol += (rtol * math.sqrt(n) + 4 * ACCUMULATION_EPS[dtype] * n) * float(mean_abs)
    return rtol, atol


def _describe(index, actual, expected) -> str:
    where = tuple(int(i) for i in index)
    return f"at {where}: actual {actual[where].item()!r}, expected {expected[where].item()!r}"


def _text(atol) -> str:
    return f"{atol:.3g}" if isinstance(atol, float) else "per element"


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None, *,
                 rtol: float | None = None, atol: float | torch.Tensor | None = None, msg: str = "") -> None:
    """Checks `actual` (in `dtype`) against a float64 reference.

    NaN positions must match exactly, infinities must match exactly (after
    rounding the reference to `dtype`, so overflow to inf is expected), and
    finite elements must satisfy |actual - expected| <= atol + rtol*|expected|
    (atol a float, or a float64 CPU tensor of actual's shape: per element).
    """
    prefix = f"{msg}: " if msg else ""
    dtype = actual.dtype if dtype is None else dtype
    if actual.dtype != dtype:
        raise AssertionError(f"{prefix}dtype {actual.dtype}, expected {dtype}")
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(f"{prefix}shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    default_rtol, default_atol = TOLERANCES[dtype]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)

    nan_a, nan_e = torch.isnan(a), torch.isnan(e)
    if not torch.equal(nan_a, nan_e):
        bad = (nan_a != nan_e).nonzero()
        raise AssertionError(f"{prefix}NaN positions differ in {len(bad)} of {a.numel()} elements; first "
                             + _describe(bad[0], a, e))

    e_rounded = e.to(dtype).to(torch.float64)
    inf_mask = (torch.isinf(a) | torch.isinf(e_rounded)) & ~nan_e
    inf_bad = inf_mask & (a != e_rounded)
    if inf_bad.any():
        bad = inf_bad.nonzero()
        raise AssertionError(f"{prefix}infinities differ in {len(bad)} of {a.numel()} elements; first "
                             + _describe(bad[0], a, e))

    finite = ~(nan_e | inf_mask)
    error = torch.where(finite, (a - e).abs(), torch.zeros_like(a))
    bound = atol + rtol * e.abs()
    too_far = finite & (error > bound)
    if too_far.any():
        bad = too_far.nonzero()
        worst = torch.where(too_far, error - bound, torch.full_like(a, -1.0)).argmax()
        worst_index = tuple(int(i) for i in torch.unravel_index(worst, a.shape)) if a.dim() else ()
        raise AssertionError(
            f"{prefix}{len(bad)} of {a.numel()} elements differ beyond rtol={rtol:.3g}, atol={_text(atol)} "
            f"({dtype}); worst {_describe(worst_index, a, e)}, |error| {error[worst_index].item():.4g}; "
            f"first {_describe(bad[0], a, e)}")


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().view(_INT_OF_SIZE[tensor.element_size()])


def assert_bitwise_equal(a: torch.Tensor, b: torch.Tensor, msg: str = "") -> None:
    """Same dtype, shape and bit patterns (NaN payloads and the sign of zero included)."""
    prefix = f"{msg}: " if msg else ""
    if a.dtype != b.dtype or a.shape != b.shape:
        raise AssertionError(f"{prefix}{a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
    bits_a, bits_b = _bits(a), _bits(b)
    if not torch.equal(bits_a, bits_b):
        bad = (bits_a != bits_b).nonzero()
        raise AssertionError(f"{prefix}{len(bad)} of {a.numel()} elements differ bitwise; first "
                             + _describe(bad[0], a.double(), b.double()))


def _storage_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's whole storage as a flat uint8 tensor (sharing memory)."""
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())


def snapshot(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of every byte of `tensor`'s storage, gaps and all."""
    return _storage_bytes(tensor).clone()


def assert_untouched(tensor: torch.Tensor, before: torch.Tensor, msg: str = "") -> None:
    """No byte of `tensor`'s storage changed since `before = snapshot(tensor)`."""
    now = _storage_bytes(tensor)
    if not torch.equal(now, before):
        changed = (now != before).nonzero().flatten()
        raise AssertionError(f"{msg or 'tensor'} was modified: {changed.numel()} byte(s) changed, first at "
                             f"storage byte {int(changed[0])}")


def assert_outside_untouched(out: torch.Tensor, before: torch.Tensor, msg: str = "") -> None:
    """Bytes of `out`'s storage that are not elements of `out` (the gaps of a
    sliced view, the prefix before an offset) did not change."""
    item = out.element_size()
    now = _storage_bytes(out)
    covered = torch.zeros(now.numel() // item, dtype=torch.bool, device=out.device)
    if out.numel():
        covered.as_strided(out.shape, out.stride(), out.storage_offset()).fill_(True)
    covered = covered.repeat_interleave(item)
    now, before = now[:covered.numel()], before[:covered.numel()]
    outside = ~covered
    if not torch.equal(now[outside], before[outside]):
        changed = ((now != before) & outside).nonzero().flatten()
        raise AssertionError(f"{msg or 'out'}: the op wrote {changed.numel()} byte(s) outside the view, first "
                             f"at storage byte {int(changed[0])} (element {int(changed[0]) // item})")
