"""CUDA stream and device queries for the per-call path: torch's cheap private
entry points where this torch build has them, the public API otherwise."""

from __future__ import annotations

import torch

CUDA_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)
CUDA_GET_DEVICE = getattr(torch._C, "_cuda_getDevice", None)
_IS_CAPTURING = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)


def cuda_current_device() -> int:
    return CUDA_GET_DEVICE() if CUDA_GET_DEVICE is not None else torch.cuda.current_device()


def cuda_raw_stream(index) -> int:
    """The cudaStream_t (as an int; 0 for the legacy default stream) that is
    current on device `index` (None: the current device)."""
    if index is None:
        index = cuda_current_device()
    if CUDA_RAW_STREAM is not None:
        return CUDA_RAW_STREAM(index)
    return torch.cuda.current_stream(index).cuda_stream


def cuda_is_capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph."""
    return _IS_CAPTURING() if _IS_CAPTURING is not None else torch.cuda.is_current_stream_capturing()
