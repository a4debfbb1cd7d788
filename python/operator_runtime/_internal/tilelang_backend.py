"""The TileLang backend: the same descriptor lifecycle as the C backends,
in Python, with kernels written in TileLang (ops/<op>/tilelang/*.py).

create   validates nothing the engine has not already checked; the op's
         kernel file, found by the folder convention (tilelang_kernels),
         plans the call (tilelang_planning): reduces it to a canonical form,
         picks the kernel(s) and compiles them once per shape class (every
         kernel takes its sizes as T.dynamic, so a new row count or length
         reuses the compiled code). Compiled kernels live in TileLang's
         on-disk cache ($TILELANG_CACHE_DIR, default ~/.tilelang/cache) and
         in this process's table, so a second process loads instead of
         compiling. Problems past int32 indexing are planned in pieces
         (tilelang_pieces).
workspace_size
         bytes of scratch the plan needs: staging buffers for layouts the
         kernels do not take directly (the variant then ends in "+staged"),
         float32 partials of split reductions, softmax (max, sum) pairs.
execute  only views and launches: no allocation, no copy besides the plan's
         staging, straight into the caller's out.
destroy  drops the plan (compiled kernels stay cached for other descriptors).

Module layering, each importing only those below it:
  tilelang_backend      this backend (backends.py imports it once tilelang is present)
  tilelang_pieces       problems past int32 indexing, in pieces
  tilelang_planning     Planner, descriptors, workspace, layout helpers
  tilelang_kernels      kernel files by convention, compiled-kernel table
  tilelang_elementwise, tilelang_softmax, tilelang_row_sum
                        the shared layers (kernels and their planning)
  tilelang_device       device helpers, compile settings (a leaf)
Kernel files import operator_runtime.tilelang_authoring alone, which
re-exports the device helpers and the shared layers.
"""

from __future__ import annotations

import threading

import torch

try:
    import tilelang  # noqa: F401  (the optional package every module below imports)
except ImportError:
    raise
except Exception as error:  # an install that is present but broken: the engine reports ImportErrors
    raise ImportError(f"the tilelang package failed to import ({error}); reinstall with "
                      "pip install -e .[tilelang] (TileLang 0.1.15)") from error

from ..errors import BackendUnavailableError, OperatorRuntimeError
from .cuda import cuda_raw_stream
from .tensors import STANDARD_DTYPES
from .tilelang_kernels import KernelTable, load_kernels
from .tilelang_pieces import plan_sized
from .tilelang_planning import Planner, TileLangDescriptor


def _check_shapes(op, out, inputs, params):
    """The engine checked the shapes already; a direct call to create gets
    the same check, failing as the C backends' create does, so no kernel
    ever runs on shapes that do not match."""
    try:
        expected = tuple(op.description.plan(out, *inputs, *params).out_shape)
    except (ValueError, TypeError) as error:
        raise OperatorRuntimeError(f"tilelang create {op.name}", 4, "OPRT_STATUS_BAD_SHAPE",
                                   f"shapes do not fit: {error}") from None
    if tuple(out.shape) != expected:
        raise OperatorRuntimeError(f"tilelang create {op.name}", 4, "OPRT_STATUS_BAD_SHAPE",
                                   f"out has shape {tuple(out.shape)}, expected {expected}")


def plan_descriptor(table, name, out, inputs, params) -> TileLangDescriptor:
    """The descriptor of one call of op `name`: its kernel file's plan, in
    pieces when a tensor passes int32 indexing (tilelang_pieces). `table`
    compiles the kernels (a KernelTable)."""
    kernels = load_kernels(name)

    def plan(o, ins, ps):
        return kernels.plan(Planner(table), o, list(ins), tuple(ps))

    return plan_sized(plan, kernels, name, out, list(inputs), tuple(params))


def cuda_target(device=None) -> dict:
    major, minor = torch.cuda.get_device_capability(device)
    return {"kind": "cuda", "arch": f"sm_{major}{minor}"}


class TileLangBackend:
    name = "tilelang"
    device_type = "cuda"
    dtypes = STANDARD_DTYPES

    def __init__(self):
        if not torch.cuda.is_available():
            raise BackendUnavailableError("tilelang", "no CUDA device is available for TileLang kernels")
        self._tables: dict = {}
        self._lock = threading.Lock()

    def table(self, device: torch.device) -> KernelTable:
        index = device.index if device.index is not None else torch.cuda.current_device()
        table = self._tables.get(index)
        if table is None:
            with self._lock:
                table = self._tables.setdefault(index, KernelTable(cuda_target(index)))
        return table

    def create(self, op, out, inputs, params) -> TileLangDescriptor:
        load_kernels(op.name)  # BackendUnavailableError for an op without a tilelang/ folder
        _check_shapes(op, out, inputs, params)
        table = self.table(out.device)
        with torch.cuda.device(out.device):
            return plan_descriptor(table, op.name, out, inputs, params)

    def stream(self, device: torch.device):
        return cuda_raw_stream(device.index)
