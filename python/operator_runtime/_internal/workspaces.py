"""Scratch memory for the calls that need a workspace and bring none (the
out-of-place and op_ forms; a prepared op owns its own)."""

from __future__ import annotations

import contextlib
import threading

import torch

from .cuda import cuda_is_capturing


class Workspaces(threading.local):
    """Per thread, one scratch buffer per (device, stream), reused by every
    out-of-place or op_ call that needs a workspace. On CUDA a buffer is only
    ever used on the stream it was allocated on, so stream order keeps reuse
    safe (the caching allocator gives a freed buffer to later work on that
    stream only). While a CUDA graph is being captured every call allocates
    its own (from the graph's pool), as a captured kernel must keep its
    scratch memory for replays. Inside ``per_call()`` (the registered torch
    ops) every call allocates its own too: a compiled graph may run them
    with its allocations in a CUDA-graph pool, where a kept buffer would
    outlive the graph's own tensors."""

    MAX_BUFFERS = 8

    def __init__(self):
        self.buffers: dict = {}
        self.fresh = 0  # depth of per_call() blocks on this thread

    @contextlib.contextmanager
    def per_call(self):
        self.fresh += 1
        try:
            yield
        finally:
            self.fresh -= 1

    def get(self, device: torch.device, stream, nbytes: int, cuda: bool) -> torch.Tensor:
        if self.fresh or (cuda and cuda_is_capturing()):
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        key = (device, stream)
        buffer = self.buffers.get(key)
        if buffer is None or buffer.numel() < nbytes:
            if buffer is None and len(self.buffers) >= self.MAX_BUFFERS:
                self.buffers.clear()
            buffer = self.buffers[key] = torch.empty(nbytes, dtype=torch.uint8, device=device)
        return buffer


WORKSPACES = Workspaces()
