"""torch.Tensor -> C view, the dtype table, and the tensor checks every op shares."""

from __future__ import annotations

import ctypes
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
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}: {what} must be an int, got {type(dim).__name__}")
    rank = max(ndim, 1)  # a 0-d tensor accepts dim -1 and 0, as in torch
    if not -rank <= dim < rank:
        raise ValueError(f"{op}: {what} {dim} is out of range for a tensor of {ndim} dims "
                         f"(expected {-rank}..{rank - 1})")
    return dim % rank


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


def require_no_partial_overlap(op: str, out: torch.Tensor, name: str, tensor: torch.Tensor) -> None:
    """`out` may be exactly `tensor` (in place) or disjoint from it; anything
    in between would read elements after they were overwritten."""
    a0, a1 = _byte_span(out)
    b0, b1 = _byte_span(tensor)
    if a0 < b1 and b0 < a1 and not same_view(out, tensor):
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
