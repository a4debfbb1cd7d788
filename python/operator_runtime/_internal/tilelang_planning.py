"""What every TileLang planner shares: the Planner handed to an op's
plan(planner, out, inputs, params), the descriptor it builds, workspace
regions, and the layout helpers (coalescing, staging copies).

A planner reduces a request to a canonical form (dims of size 1 dropped,
dims merged where every operand allows it), names the kernels it launches
(each compiled here, at create time, once per shape class: every kernel
takes its sizes as T.dynamic) and appends steps: functions
(out, inputs, workspace) that only make views and launch.
"""

from __future__ import annotations

import math
import time

import torch

from ..errors import OperatorRuntimeError
from .cuda import cuda_is_capturing
from .tensors import STANDARD_DTYPES
from .tilelang_elementwise import COPY, strided_step

DTYPE_NAMES = {dtype: str(dtype).removeprefix("torch.") for dtype in STANDARD_DTYPES}  # TileLang's dtype names
WORKSPACE_ALIGN = 256  # bytes; every workspace region starts on this boundary


def dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES[dtype]


def aligned(*tensors) -> bool:
    """Whether every tensor's base is 16-byte aligned (the vectorized kernels' precondition)."""
    return all(t.data_ptr() % 16 == 0 for t in tensors)


def coalesce(shape, strides_list):
    """Canonical layout of several operands over one shape: size-1 dims
    dropped, dims ordered by operand 0's |stride| (largest first, stable),
    adjacent dims merged where every operand is contiguous across them."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    dims.sort(key=lambda d: -abs(strides_list[0][d]))
    out_shape: list = []
    out_strides: list = [[] for _ in strides_list]
    for d in dims:
        if out_shape and all(o[-1] == s[d] * shape[d] for o, s in zip(out_strides, strides_list)):
            out_shape[-1] *= shape[d]
            for o, s in zip(out_strides, strides_list):
                o[-1] = s[d]
        else:
            out_shape.append(shape[d])
            for o, s in zip(out_strides, strides_list):
                o.append(s[d])
    return out_shape, out_strides


def dense_along_dim(o_shape, N: int, operands):
    """The dense form every operand shares along a dim of length N, each
    operand given as (its strides over the other dims, coalesced to
    o_shape; its stride along the dim): ("rows", (M, N)) where the dim is
    innermost and the rows back to back, ("columns", (B, N, C)) where the dim
    sits right above a contiguous run of C columns (B such blocks back to
    back), else None (the kernels' callers stage it)."""
    def rows(strides, along):
        return along == 1 and (not o_shape or (len(o_shape) == 1 and strides[0] == N))

    def columns(strides, along):
        if not o_shape or strides[-1] != 1 or along != o_shape[-1]:
            return False
        return len(o_shape) == 1 or (len(o_shape) == 2 and strides[0] == N * o_shape[-1])

    if all(rows(*o) for o in operands):
        return "rows", (math.prod(o_shape), N)
    if N > 1 and all(columns(*o) for o in operands):
        return "columns", (o_shape[0] if len(o_shape) == 2 else 1, N, o_shape[-1])
    return None


def contiguous_strides(shape) -> list:
    strides, step = [], 1
    for size in reversed(list(shape)):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


class Workspace:
    """Named, WORKSPACE_ALIGN-aligned regions of one byte buffer."""

    def __init__(self, size: int = 0):
        self.size = size
        self.regions: dict = {}

    def add(self, name: str, numel: int, dtype: torch.dtype) -> None:
        offset = -(-self.size // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        self.regions[name] = (offset, numel, dtype)
        self.size = offset + nbytes

    def view(self, workspace: torch.Tensor, name: str, shape, strides=None) -> torch.Tensor:
        offset, numel, dtype = self.regions[name]
        flat = workspace[offset:offset + numel * torch.empty((), dtype=dtype).element_size()].view(dtype)
        return flat.as_strided(tuple(shape), tuple(strides if strides is not None else contiguous_strides(shape)))


class ZeroedCounters:
    """int32 counters that a kernel finds at 0 and leaves at 0 (a split
    reduction finished by its last block), owned by one descriptor: a buffer
    per workspace it runs with, so two runs share counters only where they
    share the workspace's partials too (and are stream ordered already).
    Under CUDA graph capture each run gets a fresh torch.zeros, whose memset
    the graph replays before the kernel."""

    MAX_BUFFERS = 8

    def __init__(self, count: int):
        self.count = count
        self.buffers: dict = {}

    def get(self, workspace: torch.Tensor) -> torch.Tensor:
        if workspace.is_cuda and cuda_is_capturing():
            return torch.zeros(self.count, dtype=torch.int32, device=workspace.device)
        key = (workspace.device, workspace.data_ptr())
        counters = self.buffers.get(key)
        if counters is None:
            if len(self.buffers) >= self.MAX_BUFFERS:
                self.buffers.clear()
            # zeroed on the current stream, the one the kernel is launched on next
            counters = self.buffers[key] = torch.zeros(self.count, dtype=torch.int32, device=workspace.device)
        return counters


class TileLangDescriptor:
    """A planned op: `steps` run in order on (out, inputs, workspace)."""

    def __init__(self, variant: str, workspace_size: int, steps, compile_seconds: float):
        self.variant = variant
        self.workspace_size = workspace_size
        self._steps = steps
        self.compile_seconds = compile_seconds
        self._destroyed = False

    def execute(self, out, inputs, workspace, stream) -> None:
        # TileLang launches on torch's current stream (DLPack stream exchange);
        # the engine passes that same stream.
        if self._destroyed:
            raise RuntimeError("descriptor was destroyed")
        if self.workspace_size and (workspace is None or workspace.numel() < self.workspace_size):
            raise OperatorRuntimeError("tilelang execute", 7, "OPRT_STATUS_INSUFFICIENT_WORKSPACE",
                                       f"a workspace of {self.workspace_size} bytes is needed")
        for step in self._steps:
            step(out, inputs, workspace)

    def destroy(self) -> None:
        self._destroyed = True
        self._steps = ()

    def __del__(self):  # an evicted descriptor is destroyed when dropped, as CDescriptor is
        self.destroy()


class Planner:
    """Builds the steps of one descriptor. `table` compiles kernels
    (tilelang_kernels.KernelTable, or a stand-in in tests); every kernel a
    plan names is compiled at create time, the alignment-dependent scalar
    twin on first use. Kernels are named by their factory (a function of a
    kernel file or a shared layer) and its arguments."""

    coalesce = staticmethod(coalesce)
    dense_along_dim = staticmethod(dense_along_dim)
    contiguous_strides = staticmethod(contiguous_strides)
    aligned = staticmethod(aligned)
    dtype_name = staticmethod(dtype_name)
    ZeroedCounters = ZeroedCounters

    def __init__(self, table):
        self.table = table
        self.ws = Workspace()
        self.steps: list = []
        self.compile_seconds = 0.0

    def kernel(self, factory, args: tuple):
        start = time.perf_counter()
        kernel = self.table.get(factory, args)
        self.compile_seconds += time.perf_counter() - start
        return kernel

    def launcher(self, factory, vec_args: tuple, scalar_args: tuple | None = None, scalar_factory=None):
        """A function(aligned) -> kernel: the vectorized kernel when the
        pointers are 16-byte aligned, else its scalar twin (scalar_args, of
        scalar_factory when another factory serves it), compiled only when
        an unaligned call needs it."""
        table = self.table
        self.kernel(factory, vec_args)
        scalar = (scalar_factory or factory, vec_args if scalar_args is None else scalar_args)
        if scalar == (factory, vec_args):
            return lambda aligned: table.get(factory, vec_args)
        return lambda aligned: table.get(factory, vec_args) if aligned else table.get(*scalar)

    def strided_copy(self, src_dtype, dst_dtype, shape, src_strides, dst_strides):
        """A step body (src_tensor, dst_tensor) copying `shape` from src to dst
        with the given element strides from each tensor's first element: the
        staging copy (gather into, scatter out of the workspace)."""
        return strided_step(self, COPY, src_dtype, dst_dtype, shape, src_strides, dst_strides)

    def done(self, variant: str, *steps) -> TileLangDescriptor:
        """The descriptor: the steps added so far, then `steps`."""
        self.steps.extend(steps)
        return TileLangDescriptor(variant, self.ws.size, self.steps, self.compile_seconds)
