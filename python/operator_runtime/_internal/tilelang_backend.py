"""The TileLang backend: the same descriptor lifecycle as the C backends,
in Python, with kernels written in TileLang (ops/<op>/tilelang/*.py).

create   validates nothing the engine has not already checked, reduces the
         request to a canonical form (dims of size 1 dropped, dims merged
         where every operand allows it), picks the kernel(s) and compiles
         them once per shape class: every kernel takes its sizes as
         T.dynamic, so a new row count or length reuses the compiled code.
         Compiled kernels live in TileLang's on-disk cache
         ($TILELANG_CACHE_DIR, default ~/.tilelang/cache) and in this
         process's table, so a second process loads instead of compiling.
workspace_size
         bytes of scratch the plan needs: staging buffers for layouts the
         kernels do not take directly (the variant then ends in "+staged"),
         float32 partials of split reductions, softmax (max, sum) pairs.
execute  only views and launches: no allocation, no copy besides the plan's
         staging, straight into the caller's out.
destroy  drops the plan (compiled kernels stay cached for other descriptors).

Kernel files are found by the folder convention alone: ops/<op>/tilelang/
<op>_tilelang.py, next to the package in a source checkout (editable
install), or under operator_runtime/_tilelang_ops/ in a wheel.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import threading
import time
from pathlib import Path

import torch

from ..errors import BackendUnavailableError, OperatorRuntimeError
from .backends import STANDARD_DTYPES, cuda_is_capturing, cuda_raw_stream
from .tilelang_pieces import WORKSPACE_ALIGN, plan_sized

DTYPE_NAMES = {dtype: str(dtype).removeprefix("torch.") for dtype in STANDARD_DTYPES}  # TileLang's dtype names
TARGET_BLOCKS = 528          # 4 blocks per SM on a 132-SM H200: enough to fill the GPU
MAX_GRID_Y = 65535


def tuned_off(knob: str) -> bool:
    """Whether OPRT_TUNE_<knob>=0 turns a planned choice off (for A/B runs)."""
    return os.environ.get(f"OPRT_TUNE_{knob}") == "0"


# -- kernel files ----------------------------------------------------------------------------

def kernel_roots() -> list[Path]:
    """Where ops/<op>/tilelang/ folders are looked for, in order."""
    roots = []
    if os.environ.get("OPRT_TILELANG_OPS_DIR"):
        roots.append(Path(os.environ["OPRT_TILELANG_OPS_DIR"]))
    here = Path(__file__).resolve()
    roots.append(here.parents[1] / "_tilelang_ops")      # wheel: operator_runtime/_tilelang_ops/<op>/tilelang
    repo = here.parents[3]                               # source checkout: <repo>/python/operator_runtime/_internal
    if (repo / "ops" / "common").is_dir():
        roots.append(repo / "ops")
    return roots


_MODULES: dict = {}
_MODULES_LOCK = threading.Lock()


def kernel_file(op: str) -> Path:
    for root in kernel_roots():
        path = root / op / "tilelang" / f"{op}_tilelang.py"
        if path.is_file():
            return path
    raise BackendUnavailableError("tilelang", f"no TileLang kernels for {op} (looked for {op}/tilelang/"
                                  f"{op}_tilelang.py under {', '.join(str(r) for r in kernel_roots())})")


def load_kernels(op: str):
    """The module ops/<op>/tilelang/<op>_tilelang.py, imported by file path."""
    with _MODULES_LOCK:
        module = _MODULES.get(op)
        if module is None:
            path = kernel_file(op)
            name = f"operator_runtime._tilelang_ops.{op}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            _MODULES[op] = module
        return module


# -- compiled kernels ----------------------------------------------------------------------------

class KernelTable:
    """(op, factory, args, target) -> compiled kernel, compiled at most once per process."""

    def __init__(self, target: dict):
        self.target = target
        self._kernels: dict = {}
        self._lock = threading.Lock()
        self.compile_log: list = []   # (name, seconds) of every kernel this process compiled or loaded

    def get(self, op: str, factory: str, args: tuple):
        key = (op, factory, args)
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                import tilelang

                from .tilelang_common import pass_configs

                start = time.perf_counter()
                make = getattr(load_kernels(op), factory)
                kernel = tilelang.compile(make(*args), target=self.target, execution_backend="tvm_ffi",
                                          pass_configs=pass_configs(make))
                self.compile_log.append((f"{op}.{factory}{args}", time.perf_counter() - start))
                self._kernels[key] = kernel
        return kernel

    def __len__(self) -> int:
        return len(self._kernels)


def _aligned(*tensors) -> bool:
    return all(t.data_ptr() % 16 == 0 for t in tensors)


def _vec(dtype: torch.dtype) -> int:
    return 16 // dtype.itemsize if dtype in DTYPE_NAMES else 1


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


def contiguous_strides(shape) -> list:
    strides, step = [], 1
    for size in reversed(list(shape)):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


class Workspace:
    """Named, 256-byte aligned regions of one byte buffer."""

    def __init__(self):
        self.size = 0
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
    """int32 counters that a kernel finds at 0 and leaves at 0
    (finish_by_last_block), owned by one descriptor: a buffer per workspace
    it runs with, so two runs share counters only where they share the
    workspace's partials too (and are stream ordered already). Under CUDA
    graph capture each run gets a fresh torch.zeros, whose memset the graph
    replays before the kernel."""

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


# -- descriptors ----------------------------------------------------------------------------------

class TileLangDescriptor:
    """A planned op: `steps` run in order on (out, inputs, workspace)."""

    def __init__(self, variant: str, workspace: Workspace, steps, compile_seconds: float):
        self.variant = variant
        self.workspace_size = workspace.size
        self._workspace = workspace
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
    """Builds the steps of one descriptor; every kernel it names is compiled
    here (create time), the alignment-dependent scalar twin on first use."""

    def __init__(self, table: KernelTable):
        self.table = table
        self.ws = Workspace()
        self.steps: list = []
        self.compile_seconds = 0.0

    def kernel(self, op, factory, args):
        start = time.perf_counter()
        kernel = self.table.get(op, factory, args)
        self.compile_seconds += time.perf_counter() - start
        return kernel

    def launcher(self, op, factory, vec_args, scalar_args=None, scalar_factory=None):
        """A function(aligned) -> kernel: the vectorized kernel when the
        pointers are 16-byte aligned, else its scalar twin (scalar_args, of
        scalar_factory when another factory serves it), compiled only when
        an unaligned call needs it."""
        table = self.table
        self.kernel(op, factory, vec_args)
        scalar = (op, scalar_factory or factory, vec_args if scalar_args is None else scalar_args)
        if scalar == (op, factory, vec_args):
            return lambda aligned: table.get(op, factory, vec_args)
        return lambda aligned: table.get(op, factory, vec_args) if aligned else table.get(*scalar)

    # -- copy building blocks used by every op ----------------------------------------------
    def strided_copy(self, src_dtype, dst_dtype, shape, src_strides, dst_strides):
        """A step body (src_tensor, dst_tensor) copying shape from src to dst
        with the given element strides from each tensor's first element."""
        shape, (dst_strides, src_strides) = coalesce(list(shape), [list(dst_strides), list(src_strides)])
        ndim = 4 if len(shape) <= 4 else 8
        pad = ndim - len(shape)
        shape = (1,) * pad + tuple(shape)
        src_strides = (0,) * pad + tuple(src_strides)
        dst_strides = (0,) * pad + tuple(dst_strides)
        kernel = self.kernel("copy", "strided", (DTYPE_NAMES[src_dtype], DTYPE_NAMES[dst_dtype], ndim))

        def run(src, dst):
            kernel(src.as_strided(shape, src_strides), dst.as_strided(shape, dst_strides))

        return run

    def done(self, variant: str) -> TileLangDescriptor:
        return TileLangDescriptor(variant, self.ws, self.steps, self.compile_seconds)


def _check_shapes(op, out, inputs, params):
    """The engine (Operator._resolve) checked the shapes already; a direct
    call to create gets the same check, failing as the C backends' create
    does, so no kernel ever runs on shapes that do not match."""
    try:
        expected = tuple(op._plan(out, *inputs, *params).out_shape)
    except (ValueError, TypeError) as error:
        raise OperatorRuntimeError(f"tilelang create {op.name}", 4, "OPRT_STATUS_BAD_SHAPE",
                                   f"shapes do not fit: {error}") from None
    if tuple(out.shape) != expected:
        raise OperatorRuntimeError(f"tilelang create {op.name}", 4, "OPRT_STATUS_BAD_SHAPE",
                                   f"out has shape {tuple(out.shape)}, expected {expected}")


def plan_descriptor(table, name, out, inputs, params) -> TileLangDescriptor:
    """The descriptor of one op call: the op's planner, in pieces when a
    tensor passes int32 indexing (tilelang_pieces)."""
    def plan(o, ins, ps):
        return PLANNERS[name](Planner(table), o, *ins, *ps)

    def combine(variant, workspace_size, steps, parts):
        workspace = Workspace()
        workspace.size = workspace_size
        return TileLangDescriptor(variant, workspace, steps, sum(p.compile_seconds for p in parts))

    return plan_sized(plan, combine, name, out, list(inputs), params)


# -- copy ---------------------------------------------------------------------------------------------

def plan_copy(p: Planner, out: torch.Tensor, src: torch.Tensor) -> TileLangDescriptor:
    if out.numel() == 0:
        return p.done("empty")
    sd, dd = src.dtype, out.dtype
    same_layout = sd == dd and src.stride() == out.stride()
    shape, (os_, ss) = coalesce(list(out.shape), [list(out.stride()), list(src.stride())])
    names = (DTYPE_NAMES[sd], DTYPE_NAMES[dd])

    def skip_in_place(src_t, out_t):
        return same_layout and src_t.data_ptr() == out_t.data_ptr()

    if len(shape) == 0 or (len(shape) == 1 and os_[0] == 1 and ss[0] == 1):
        n = out.numel()
        vec = 16 // min(src.element_size(), out.element_size())
        pick = p.launcher("copy", "contiguous", names + (vec,), names + (1,))

        def run(o, ins, ws):
            s = ins[0]
            if skip_in_place(s, o):
                return
            pick(_aligned(s, o))(s.as_strided((n,), (1,)), o.as_strided((n,), (1,)))

        p.steps.append(run)
        return p.done("contiguous")

    if len(shape) in (2, 3):
        B = shape[0] if len(shape) == 3 else 1
        R, C = shape[-2], shape[-1]
        dense_out = os_[-2:] == [C, 1] and (len(shape) == 2 or os_[0] == R * C)
        dense_src_t = ss[-2:] == [1, R] and (len(shape) == 2 or ss[0] == R * C)
        if dense_out and dense_src_t and -(-R // 32) <= MAX_GRID_Y and B <= MAX_GRID_Y:
            pairs = R % 2 == 0 and C % 2 == 0
            pick = p.launcher("copy", "transpose", names + (2 if pairs else 1,), names + (1,))

            def run(o, ins, ws):
                s = ins[0]
                aligned = s.data_ptr() % (2 * s.element_size()) == 0 and o.data_ptr() % (2 * o.element_size()) == 0
                pick(aligned)(s.as_strided((B, C, R), (R * C, R, 1)), o.as_strided((B, R, C), (R * C, C, 1)))

            p.steps.append(run)
            return p.done("transpose")

    body = p.strided_copy(sd, dd, out.shape, src.stride(), out.stride())

    def run(o, ins, ws):
        if not skip_in_place(ins[0], o):
            body(ins[0], o)

    p.steps.append(run)
    return p.done("strided")


# -- vector_add ----------------------------------------------------------------------------------------

def plan_vector_add(p: Planner, out, a, b) -> TileLangDescriptor:
    if out.numel() == 0:
        return p.done("empty")
    dt = DTYPE_NAMES[out.dtype]
    vec = _vec(out.dtype)
    shape, (os_, as_, bs) = coalesce(list(out.shape), [list(out.stride()), list(a.stride()), list(b.stride())])
    n = out.numel()

    if len(shape) == 0 or (len(shape) == 1 and os_[0] == as_[0] == bs[0] == 1):
        pick = p.launcher("vector_add", "contiguous", (dt, vec), (dt, 1))

        def run(o, ins, ws):
            x, y = ins
            pick(_aligned(x, y, o))(x.as_strided((n,), (1,)), y.as_strided((n,), (1,)), o.as_strided((n,), (1,)))

        p.steps.append(run)
        return p.done("contiguous")

    if len(shape) == 2 and os_ == [shape[1], 1]:
        M, N = shape
        full, bias = [N, 1], [0, 1]
        swap = None
        if as_ == full and bs == bias:
            swap = False
        elif bs == full and as_ == bias:
            swap = True
        if swap is not None and -(-N // (256 * 8)) <= MAX_GRID_Y:
            scalar = (dt, 1)
            pick = p.launcher("vector_add", "row_bias", (dt, vec) if N % vec == 0 else scalar, scalar)

            def run(o, ins, ws):
                x, y = ins
                if swap:
                    x, y = y, x
                pick(_aligned(x, y, o))(x.as_strided((M, N), (N, 1)), y.as_strided((N,), (1,)),
                                        o.as_strided((M, N), (N, 1)))

            p.steps.append(run)
            return p.done("row_bias")

    # staged: gather each operand not dense in out's order into the workspace,
    # add flat, scatter into out when out itself is not dense.
    dense = contiguous_strides(shape)
    gathers = []
    for index, strides in ((0, as_), (1, bs)):
        if strides != dense:
            name = f"in{index}"
            p.ws.add(name, n, out.dtype)
            gathers.append((index, name, p.strided_copy(out.dtype, out.dtype, shape, strides, dense)))
    out_dense = os_ == dense
    if not out_dense:
        p.ws.add("out", n, out.dtype)
        scatter = p.strided_copy(out.dtype, out.dtype, shape, dense, os_)
    pick = p.launcher("vector_add", "contiguous", (dt, vec), (dt, 1))
    regions = p.ws

    def run(o, ins, ws):
        operands = list(ins)
        for index, name, gather in gathers:
            staged = regions.view(ws, name, (n,))
            gather(ins[index], staged)
            operands[index] = staged
        target = o if out_dense else regions.view(ws, "out", (n,))
        x, y = operands
        x, y, t = x.as_strided((n,), (1,)), y.as_strided((n,), (1,)), target.as_strided((n,), (1,))
        pick(_aligned(x, y, t))(x, y, t)
        if not out_dense:
            scatter(target, o)

    p.steps.append(run)
    return p.done("contiguous+staged")


# -- reduce_sum ------------------------------------------------------------------------------------------

def _segments(blocks: int, length: int, min_segment: int, target: int = TARGET_BLOCKS) -> int:
    """How many segments to cut a reduced length into so that blocks * S reaches `target` blocks."""
    if blocks >= target // 2 or length <= min_segment:
        return 1
    return max(1, min(-(-target // blocks), -(-length // min_segment), MAX_GRID_Y))


def _plan_rows_sum(p: Planner, src_dtype, out_dtype, M: int, N: int):
    """Steps body (src [M, N] dense view, out [M] strided view, ws)."""
    sd, od = DTYPE_NAMES[src_dtype], DTYPE_NAMES[out_dtype]
    vec = _vec(src_dtype)
    if N <= 512:
        mod = load_kernels("reduce_sum")
        if vec > 1 and N % vec == 0:
            lanes = next((n for n in mod.GROUP_ROW_LANES if n * 2 * vec >= N), mod.GROUP_ROW_LANES[-1])
            pick = p.launcher("reduce_sum", "group_rows", (sd, od, lanes), (sd, od), scalar_factory="warp_rows")
            return (lambda src, out, ws: pick(_aligned(src))(src, out)), f"group_rows{lanes}"
        kernel = p.kernel("reduce_sum", "warp_rows", (sd, od))

        def run(src, out, ws):
            kernel(src, out)

        return run, "warp_rows"
    S = _segments(M, N, 8192)
    if S == 1:
        pick = p.launcher("reduce_sum", "rows", (sd, od, vec) if N % vec == 0 else (sd, od, 1), (sd, od, 1))

        def run(src, out, ws):
            pick(_aligned(src))(src, out.as_strided((M, 1), (out.stride(0), 1)))

        return run, "rows"
    # S segments per row, a block each, into float32 partials; each row's
    # last block adds them up (one launch; see finish_by_last_block)
    mod = load_kernels("reduce_sum")
    scalar = (sd, od, 1, 2, True)
    pick = p.launcher("reduce_sum", "rows", (sd, od, vec, mod.SPLIT_UNROLL, True) if N % vec == 0 else scalar, scalar)
    name = f"partials{len(p.ws.regions)}"
    p.ws.add(name, M * S, torch.float32)
    counters = ZeroedCounters(M)
    regions = p.ws

    def run(src, out, ws):
        pick(_aligned(src))(src, regions.view(ws, name, (M, S)), counters.get(ws), out)

    return run, f"rows_split{S}"


def _plan_columns_sum(p: Planner, src_dtype, out_dtype, B: int, R: int, C: int):
    """Steps body (src [B, R, C] dense view, out [B, 1, C] strided view, ws)."""
    sd, od = DTYPE_NAMES[src_dtype], DTYPE_NAMES[out_dtype]
    vec = _vec(src_dtype)
    use_vec = C % vec == 0
    tiles = B * -(-C // (32 * (vec if use_vec else 1)))  # a block per 32 lanes x vec columns
    # 8 blocks per SM: on the H200 (scripts/tilelang_warp_rows_ab.py columns)
    # 8192^2 over dim 0 ran in 72.3 / 46.9 us (float32 / bf16) at 17 / 33
    # segments, 80.9 / 50.9 at the 4 per SM of 9 / 17.
    S = _segments(tiles, R, 64, 2 * TARGET_BLOCKS)
    scalar = (sd, od if S == 1 else "float32", 1)
    vec_args = scalar[:2] + (vec,) if use_vec else scalar
    if S > 1 and use_vec and src_dtype.itemsize == 2 and not tuned_off("TILELANG_COLUMN_SLOTS"):
        # 16-bit: 2 accumulator vectors, not 4: 62 registers, 4 blocks per SM (91, 2 blocks). On the
        # H200 8192^2 bf16 over dim 0 ran 41.0-41.1 us, 46.0-46.6 before; float32 so held ran slower
        # (74.9-76.5 vs 70.1-70.2; docs/data/tilelang-h200-2026-12-03f-column-slots-ab.txt)
        vec_args += (4, 2)
    pick = p.launcher("reduce_sum", "columns", vec_args, scalar)
    if S == 1:
        def run(src, out, ws):
            pick(_aligned(src))(src, out)

        return run, "columns"
    name = f"partials{len(p.ws.regions)}"
    p.ws.add(name, B * S * C, torch.float32)
    second = p.kernel("reduce_sum", "columns", ("float32", od, 1))
    regions = p.ws

    def run(src, out, ws):
        partials = regions.view(ws, name, (B, S, C))
        pick(_aligned(src))(src, partials)
        second(partials, out)

    return run, f"columns_split{S}"


def plan_reduce_sum(p: Planner, out, src, dims, keepdim) -> TileLangDescriptor:
    if out.numel() == 0:
        return p.done("empty")
    nd = src.dim()
    # out's stride for every src dim (0 for reduced dims)
    out_strides_by_dim, k = [], 0
    for d in range(nd):
        if d in dims:
            out_strides_by_dim.append(0)
            if keepdim:
                k += 1
        else:
            out_strides_by_dim.append(out.stride(k))
            k += 1
    kept = [d for d in range(nd) if d not in dims]
    reduced = [d for d in range(nd) if d in dims]
    kept_shape = [src.shape[d] for d in kept]

    if src.numel() == 0:  # a sum over nothing: zeros (a broadcast copy of a zero scalar)
        zero = torch.zeros((), dtype=out.dtype, device=out.device)
        body = p.strided_copy(out.dtype, out.dtype, kept_shape, [0] * len(kept), [out_strides_by_dim[d] for d in kept])

        def run(o, ins, ws):
            body(zero, o)

        p.steps.append(run)
        return p.done("zeros")

    r_shape, (r_src,) = coalesce([src.shape[d] for d in reduced], [[src.stride(d) for d in reduced]])
    if not r_shape:  # only size-1 dims reduced: a copy
        body = p.strided_copy(src.dtype, out.dtype, kept_shape, [src.stride(d) for d in kept],
                              [out_strides_by_dim[d] for d in kept])

        def run(o, ins, ws):
            body(ins[0], o)

        p.steps.append(run)
        return p.done("copy")

    k_shape, (k_src, k_out) = coalesce(kept_shape, [[src.stride(d) for d in kept], [out_strides_by_dim[d] for d in kept]])
    M = math.prod(k_shape)
    # rows: reduced dims are the contiguous tail of src
    if len(r_shape) == 1 and r_src[0] == 1 and (not k_shape or (len(k_shape) == 1 and k_src[0] == r_shape[0])):
        N = r_shape[0]
        out_stride = k_out[0] if k_shape else 1
        body, variant = _plan_rows_sum(p, src.dtype, out.dtype, M, N)

        def run(o, ins, ws):
            body(ins[0].as_strided((M, N), (N, 1)), o.as_strided((M,), (out_stride,)), ws)

        p.steps.append(run)
        return p.done(variant)
    # columns: one reduced dim of stride C over [B, C] kept dims
    if len(r_shape) == 1 and k_shape and k_src[-1] == 1 and r_src[0] == k_shape[-1] and (
            len(k_shape) == 1 or (len(k_shape) == 2 and k_src[0] == r_shape[0] * k_shape[-1])):
        C, R = k_shape[-1], r_shape[0]
        B = k_shape[0] if len(k_shape) == 2 else 1
        ob = k_out[0] if len(k_shape) == 2 else 0
        oc = k_out[-1]
        body, variant = _plan_columns_sum(p, src.dtype, out.dtype, B, R, C)

        def run(o, ins, ws):
            body(ins[0].as_strided((B, R, C), (R * C, C, 1)), o.as_strided((B, 1, C), (ob, 0, oc)), ws)

        p.steps.append(run)
        return p.done(variant)

    # staged: gather src as [kept (out's order), reduced] into the workspace, then rows
    ko_shape, (ko_out, ko_src) = coalesce(kept_shape, [[out_strides_by_dim[d] for d in kept],
                                                       [src.stride(d) for d in kept]])
    N = math.prod(r_shape)
    gshape = list(ko_shape) + list(r_shape)
    gsrc = list(ko_src) + list(r_src)
    p.ws.add("src", M * N, src.dtype)
    gather = p.strided_copy(src.dtype, src.dtype, gshape, gsrc, contiguous_strides(gshape))
    out_direct = len(ko_shape) <= 1
    if not out_direct:
        p.ws.add("out", M, out.dtype)
        scatter = p.strided_copy(out.dtype, out.dtype, ko_shape, contiguous_strides(ko_shape), ko_out)
    out_stride = ko_out[0] if ko_shape else 1
    body, variant = _plan_rows_sum(p, src.dtype, out.dtype, M, N)
    regions = p.ws

    def run(o, ins, ws):
        staged = regions.view(ws, "src", (M, N))
        gather(ins[0], staged)
        if out_direct:
            body(staged, o.as_strided((M,), (out_stride,)), ws)
        else:
            result = regions.view(ws, "out", (M,))
            body(staged, result, ws)
            scatter(result, o)

    p.steps.append(run)
    return p.done(variant + "+staged")


# -- softmax -----------------------------------------------------------------------------------------------

def _plan_softmax_rows(p: Planner, dtype, M: int, N: int):
    """Body (src [M, N] dense view, out [M, N] dense view, ws)."""
    dt = DTYPE_NAMES[dtype]
    vec = _vec(dtype)
    mod = load_kernels("softmax")
    if N <= 32 * mod.WARP_ROW_CLASSES[-1]:
        per_lane = next(c for c in mod.WARP_ROW_CLASSES if 32 * c >= N)
        group = next((g for g in mod.GROUP_ROW_CLASSES if g[0] * g[1] * vec >= N), None)
        if vec > 1 and N % vec == 0 and group is not None:
            pick = p.launcher("softmax", "group_rows", (dt, *group), (dt, per_lane), scalar_factory="warp_rows")
            return (lambda src, out, ws: pick(_aligned(src, out))(src, out)), f"group_rows{group[0] * group[1] * vec}"
        kernel = p.kernel("softmax", "warp_rows", (dt, per_lane))
        return (lambda src, out, ws: kernel(src, out)), f"warp_rows{32 * per_lane}"
    classes = mod.BLOCK_ROW_CLASSES[dt]
    for threads, per_thread in classes:
        if threads * per_thread >= N:
            scalar = (dt, threads, per_thread, 1)
            vec_args, name = (dt, threads, per_thread, vec), f"block_rows{threads * per_thread}"
            if N % vec:  # rows not whole vectors long (and >= 2 * vec: N > 32 * 32 here): flat
                vec_args, name = (dt, threads, per_thread, vec, True), name + "_flat"
            pick = p.launcher("softmax", "block_rows", vec_args, scalar)
            return (lambda src, out, ws: pick(_aligned(src, out))(src, out)), name
    S = max(1, -(-N // 32768))
    if M * S < TARGET_BLOCKS // 2:
        S = min(-(-TARGET_BLOCKS // M), -(-N // 8192), MAX_GRID_Y)
    scalar = (dt, 1)
    vec_args = (dt, vec) if N % vec == 0 else scalar
    stats_k = p.launcher("softmax", "split_stats", vec_args, scalar)
    apply_k = p.launcher("softmax", "split_apply", vec_args, scalar)
    name = f"stats{len(p.ws.regions)}"
    p.ws.add(name, 2 * M * S, torch.float32)
    regions = p.ws

    def run(src, out, ws):
        stats = regions.view(ws, name, (2, M, S))
        aligned = _aligned(src, out)
        stats_k(aligned)(src, stats)
        apply_k(aligned)(src, stats, out)

    return run, f"split{S}"


def _plan_softmax_columns(p: Planner, dtype, B: int, R: int, C: int):
    dt = DTYPE_NAMES[dtype]
    vec = _vec(dtype)
    # With a cluster planned, the two-pass kernels below serve only calls
    # whose bases are not 16-byte aligned: their scalar twins alone.
    cluster = _column_cluster_size(load_kernels("softmax"), vec, B, R, C)
    use_vec = C % vec == 0 and not cluster
    tiles = B * -(-C // (32 * (vec if use_vec else 1)))  # a block per 32 lanes x vec columns
    # Segments for 8 blocks per SM, as the column sums; column_combine merges
    # each column's S pairs once, so column_apply reads one (it merged all S
    # in every segment's block before: S^2 reads, which held the two-launch
    # plan to 2 blocks per SM). H200 (scripts/tilelang_warp_rows_ab.py
    # columns), 8192^2 over dim 0, float32 / bf16: 216.6-221.9 / 164.7-169.1
    # us at S = 17-33 with the combine, 222.2 / 185.5 at the best S without.
    S = _segments(tiles, R, 64, 2 * TARGET_BLOCKS)
    merged = S > 1
    vec_args, scalar = (dt, vec if use_vec else 1), (dt, 1)
    stats_k = p.launcher("softmax", "column_stats", vec_args, scalar)
    after_combine = (4, True) if merged else ()
    apply_k = p.launcher("softmax", "column_apply", vec_args + after_combine, scalar + after_combine)
    combine = p.kernel("softmax", "column_combine", ()) if merged else None
    name = f"stats{len(p.ws.regions)}"
    p.ws.add(name, 2 * B * S * C, torch.float32)
    regions = p.ws

    def run(src, out, ws):
        stats = regions.view(ws, name, (2, B, S, C))
        aligned = _aligned(src, out)
        stats_k(aligned)(src, stats)
        if merged:
            combine(stats)
        apply_k(aligned)(src, stats, out)

    if not cluster:
        return run, f"columns{S}"
    # Each column tile read once by a cluster of blocks (16-byte aligned
    # bases; else the two-pass kernels above, their workspace kept for it).
    cluster_k = p.kernel("softmax", "column_cluster", (dt, cluster))

    def run_cluster(src, out, ws):
        if _aligned(src, out):
            cluster_k(src, out)
        else:
            run(src, out, ws)

    return run_cluster, f"column_cluster{cluster}"


def _column_cluster_size(mod, vec: int, B: int, R: int, C: int) -> int:
    """Blocks per column tile for softmax's column_cluster kernel (0: it does
    not apply): whole vectors across, columns of at most the largest
    cluster's rows, and the smallest cluster that still puts a block on
    every SM (as the nvidia backend's columns_cluster)."""
    if C % vec or tuned_off("SOFTMAX_COLUMN_CLUSTER"):
        return 0
    cap = mod.CLUSTER_ROWS  # rows a block holds
    tiles = B * -(-C // (mod.CLUSTER_ACROSS * vec))
    return next((c for c in mod.CLUSTER_SIZES if R <= c * cap and tiles * c >= TARGET_BLOCKS // 4), 0)


def plan_softmax(p: Planner, out, src, dim) -> TileLangDescriptor:
    if out.numel() == 0:
        return p.done("empty")
    nd = src.dim()
    if nd == 0:
        body, variant = _plan_softmax_rows(p, src.dtype, 1, 1)

        def run(o, ins, ws):
            body(ins[0].as_strided((1, 1), (1, 1)), o.as_strided((1, 1), (1, 1)), ws)

        p.steps.append(run)
        return p.done(variant)
    N = src.shape[dim]
    sd = src.stride(dim) if N > 1 else 1
    od = out.stride(dim) if N > 1 else 1
    others = [d for d in range(nd) if d != dim]
    o_shape, (o_src, o_out) = coalesce([src.shape[d] for d in others],
                                       [[src.stride(d) for d in others], [out.stride(d) for d in others]])
    M = math.prod(o_shape)

    def rows_ok(strides_rows, stride_dim):
        return stride_dim == 1 and (not o_shape or (len(o_shape) == 1 and strides_rows[0] == N))

    if rows_ok(o_src, sd) and rows_ok(o_out, od):
        body, variant = _plan_softmax_rows(p, src.dtype, M, N)

        def run(o, ins, ws):
            body(ins[0].as_strided((M, N), (N, 1)), o.as_strided((M, N), (N, 1)), ws)

        p.steps.append(run)
        return p.done(variant)

    def columns_ok(strides_rows, stride_dim):
        if not o_shape or strides_rows[-1] != 1 or stride_dim != o_shape[-1]:
            return False
        return len(o_shape) == 1 or (len(o_shape) == 2 and strides_rows[0] == N * o_shape[-1])

    if N > 1 and columns_ok(o_src, sd) and columns_ok(o_out, od):
        C = o_shape[-1]
        B = o_shape[0] if len(o_shape) == 2 else 1
        body, variant = _plan_softmax_columns(p, src.dtype, B, N, C)

        def run(o, ins, ws):
            body(ins[0].as_strided((B, N, C), (N * C, C, 1)), o.as_strided((B, N, C), (N * C, C, 1)), ws)

        p.steps.append(run)
        return p.done(variant)

    # staged: rows [others (src's order), dim] gathered into the workspace,
    # computed in place there, scattered back into out
    gshape = list(o_shape) + [N]
    p.ws.add("rows", M * N, src.dtype)
    dense = contiguous_strides(gshape)
    gather = p.strided_copy(src.dtype, src.dtype, gshape, list(o_src) + [sd], dense)
    scatter = p.strided_copy(out.dtype, out.dtype, gshape, dense, list(o_out) + [od])
    body, variant = _plan_softmax_rows(p, src.dtype, M, N)
    regions = p.ws

    def run(o, ins, ws):
        staged = regions.view(ws, "rows", (M, N))
        gather(ins[0], staged)
        body(staged, staged, ws)
        scatter(staged, o)

    p.steps.append(run)
    return p.done(variant + "+staged")


PLANNERS = {"copy": plan_copy, "vector_add": plan_vector_add, "reduce_sum": plan_reduce_sum,
            "softmax": plan_softmax}
OPS = tuple(PLANNERS)  # each has ops/<op>/tilelang/<op>_tilelang.py


# -- the backend ---------------------------------------------------------------------------------------------

def cuda_target(device=None) -> dict:
    major, minor = torch.cuda.get_device_capability(device)
    return {"kind": "cuda", "arch": f"sm_{major}{minor}"}


class TileLangBackend:
    name = "tilelang"
    device_type = "cuda"
    dtypes = STANDARD_DTYPES

    def __init__(self):
        try:
            import tilelang  # noqa: F401
        except Exception as error:  # an install that is present but broken
            raise BackendUnavailableError("tilelang", f"the tilelang package failed to import ({error}); "
                                          "reinstall with pip install -e .[tilelang] (TileLang 0.1.15)") from None
        if not torch.cuda.is_available():
            raise BackendUnavailableError("tilelang", "no CUDA device is available for TileLang kernels")
        for op in OPS:
            kernel_file(op)  # every op's kernel file is where the convention says
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
        if op.name not in PLANNERS:
            raise BackendUnavailableError("tilelang", f"no TileLang kernels for {op.name}")
        _check_shapes(op, out, inputs, params)
        table = self.table(out.device)
        with torch.cuda.device(out.device):
            return plan_descriptor(table, op.name, out, inputs, params)

    def stream(self, device: torch.device):
        return cuda_raw_stream(device.index)
