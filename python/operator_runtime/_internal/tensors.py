"""torch.Tensor -> C view, the dtype table, and the tensor checks every op shares."""

from __future__ import annotations

import ctypes
import math
import operator
from typing import Sequence

import torch

from .library import MAX_DIMS, TensorView

# The one dtype table: torch dtype -> oprt_dtype_t code.
DTYPE_CODES: dict[torch.dtype, int] = {
    torch.float16: 0,
    torch.float32: 1,
    torch.bfloat16: 2,
    torch.float64: 3,
}

# What the GPU backends take (the CPU adds float64).
STANDARD_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def tensor_view(tensor: torch.Tensor, with_data: bool = True) -> TensorView:
    view = TensorView()
    view.data = tensor.data_ptr() if with_data else None
    view.dtype = DTYPE_CODES[tensor.dtype]
    view.ndim = tensor.dim()
    for d, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        view.shape[d] = size
        view.strides[d] = stride
    return view


def require_tensor(op: str, name: str, value) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_nested:  # before dim(): a nested tensor's strides are not one tuple
        raise ValueError(f"{op}: {name} is a nested tensor; only strided (dense) tensors are supported")
    if value.dim() > MAX_DIMS:
        raise ValueError(f"{op}: {name} has {value.dim()} dims; at most {MAX_DIMS} are supported")
    if value.layout != torch.strided:
        raise ValueError(f"{op}: {name} must be a strided (dense) tensor, got layout {value.layout}")
    return value


def require_dtype(op: str, name: str, tensor: torch.Tensor, supported: Sequence[torch.dtype], backend: str) -> None:
    if tensor.dtype not in supported:
        names = ", ".join(str(d).replace("torch.", "") for d in supported)
        raise TypeError(f"{op}: {name} has dtype {tensor.dtype}, which the {backend} backend does not support "
                        f"(supported: {names})")


def normalize_dim(op: str, dim, ndim: int, what: str = "dim") -> int:
    """dim in 0..ndim-1. Anything operator.index takes is an int (numpy
    integers, 0-d integer tensors), as in torch; a bool is refused."""
    if isinstance(dim, bool):
        raise TypeError(f"{op}: {what} must be an int, got bool")
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int, got {type(dim).__name__}") from None
    rank = max(ndim, 1)  # a 0-d tensor accepts dim -1 and 0, as in torch
    if not -rank <= dim < rank:
        raise ValueError(f"{op}: {what} {dim} is out of range for a tensor of {ndim} dims "
                         f"(expected {-rank}..{rank - 1})")
    return int(dim % rank)


def has_lazy_sign(tensor: torch.Tensor) -> bool:
    """torch's negative or conjugate bit: the memory holds -x (or conj(x))
    and torch applies the sign when it reads; a kernel reading the memory
    would not."""
    return tensor.is_neg() or tensor.is_conj()


def resolve_lazy_sign(op: str, name: str, tensor: torch.Tensor, copy: bool) -> torch.Tensor:
    """`tensor`, or its values materialized (a copy) where it has the
    negative or conjugate bit; copy=False refuses it instead (a prepared op
    would keep reading a stale copy). An out with the bit is always refused:
    writing its memory would store the values with the wrong sign."""
    if not has_lazy_sign(tensor):
        return tensor
    bit = "negative" if tensor.is_neg() else "conjugate"
    if name == "out":
        raise ValueError(f"{op}: out has torch's {bit} bit set (a lazily negated or conjugated view such as "
                         "z.conj().imag) and cannot be written directly; pass an out without it and copy the "
                         "result with torch")
    if not copy:
        raise ValueError(f"{op}: {name} has torch's {bit} bit set (a lazily negated or conjugated view such as "
                         f"z.conj().imag); pass {name}.resolve_neg().resolve_conj() (a copy) instead")
    return tensor.resolve_conj().resolve_neg()


def _byte_span(tensor: torch.Tensor) -> tuple[int, int]:
    """[first, last) bytes the tensor's elements can touch; empty for numel 0."""
    if tensor.numel() == 0:
        return (0, 0)
    start = tensor.data_ptr()
    low = high = 0
    for size, stride in zip(tensor.shape, tensor.stride()):
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    item = tensor.element_size()
    return (start + low * item, start + (high + 1) * item)


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.data_ptr() == b.data_ptr() and a.dtype == b.dtype and a.shape == b.shape
            and a.stride() == b.stride())


# The overlap rule: two tensors share memory when some byte of one element
# of each is the same byte. Decided exactly when their byte ranges are
# disjoint, when the element addresses of both lie in lattices that miss each
# other (gcd of the byte strides), or when each is at most _EXACT_RUNS
# contiguous runs (enumerated); beyond that, interleaving byte ranges count
# as shared.
_EXACT_RUNS = 1 << 16


def _runs(tensor: torch.Tensor) -> tuple[int, int, list]:
    """The tensor's bytes as runs: (lowest run's address, run length in bytes,
    [(byte stride, size)] of the dims that place the runs). Size-1 and
    stride-0 dims add no bytes; negative strides are mirrored; the innermost
    dims that continue one another form the run."""
    item = tensor.element_size()
    base = tensor.data_ptr()
    dims = []
    for size, stride in zip(tensor.shape, tensor.stride()):
        if size == 1 or stride == 0:
            continue
        if stride < 0:
            base += (size - 1) * stride * item
            stride = -stride
        dims.append((stride * item, size))
    dims.sort()
    length = item
    while dims and dims[0][0] == length:
        stride, size = dims.pop(0)
        length = stride * size
    return base, length, dims


def _run_starts(base: int, dims: list) -> torch.Tensor:
    starts = torch.zeros(1, dtype=torch.int64)
    for stride, size in dims:
        starts = (starts[:, None] + torch.arange(size, dtype=torch.int64) * stride).reshape(-1)
    return starts + base


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a and b share a byte (see the overlap rule above)."""
    a0, a1 = _byte_span(a)
    b0, b1 = _byte_span(b)
    if not (a0 < b1 and b0 < a1):
        return False
    base_a, length_a, dims_a = _runs(a)
    base_b, length_b, dims_b = _runs(b)
    step = math.gcd(*(stride for stride, _ in dims_a + dims_b))
    if step:  # a's run starts minus b's all lie in (base_a - base_b) + step * Z
        residue = (base_a - base_b) % step
        if residue >= length_b and step - residue >= length_a:
            return False
    count_a = math.prod(size for _, size in dims_a)
    count_b = math.prod(size for _, size in dims_b)
    if count_a > _EXACT_RUNS or count_b > _EXACT_RUNS:
        return True
    starts_a = _run_starts(base_a, dims_a)
    starts_b = torch.sort(_run_starts(base_b, dims_b)).values
    # a run [s, s + length_a) meets b's run [t, t + length_b) iff s - length_b < t < s + length_a
    first = torch.searchsorted(starts_b, starts_a - length_b, right=True)
    inside = first < starts_b.numel()
    return bool((starts_b[first[inside]] < starts_a[inside] + length_a).any())


def require_no_partial_overlap(op: str, out: torch.Tensor, name: str, tensor: torch.Tensor) -> None:
    """`out` may be exactly `tensor` (in place) or share no byte with it;
    anything in between would read elements after they were overwritten."""
    if not same_view(out, tensor) and shares_memory(out, tensor):
        raise ValueError(f"{op}: out partially overlaps {name}; pass a separate out tensor or exactly "
                         f"{name} itself (same storage, shape and strides) for an in-place call")


def require_no_self_overlap(op: str, tensor: torch.Tensor, name: str = "out") -> None:
    """Refuses a tensor in which two indices may address one element
    (an expanded tensor, or strides that interleave)."""
    dims = sorted((abs(st), sz) for sz, st in zip(tensor.shape, tensor.stride()) if sz > 1)
    span = 1
    for stride, size in dims:
        if stride < span:
            raise ValueError(f"{op}: {name} overlaps itself (shape {tuple(tensor.shape)}, strides "
                             f"{tensor.stride()}): several of its elements share memory")
        span += stride * (size - 1)


def view_pointer(view: TensorView):
    return ctypes.byref(view)
