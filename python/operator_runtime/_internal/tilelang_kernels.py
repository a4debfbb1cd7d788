"""TileLang kernel files, found by the folder convention alone, and the
table of kernels compiled from them.

An op has TileLang support when ops/<op>/tilelang/<op>_tilelang.py exists:
next to the package in a source checkout (editable install), under
operator_runtime/_tilelang_ops/ in a wheel, or under $OPRT_TILELANG_OPS_DIR
(looked at first). The file is imported by path and provides

  plan(planner, out, inputs, params) -> descriptor
                        the op's planner (tilelang_planning.Planner)
  variants() -> [(name, factory, args)]
                        every kernel it may compile (tilelang_compile)
  cuts(out, inputs, params) -> [(input dim, out dim)]      optional
                        dims along which a problem too large for int32
                        indexing may be cut into pieces (default: every dim,
                        the inputs having out's shape; tilelang_pieces)
  split_reduction(out, inputs, params) -> (dim, params)    optional
                        a reduction with no dim left to cut: the input dim
                        to split into float32 partials, and the op's params
                        that reduce the partials' leading dim into out

Adding an op's TileLang support is adding that one file.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from pathlib import Path

import tilelang

from ..errors import BackendUnavailableError
from .tilelang_device import pass_configs

REQUIRED = ("plan", "variants")


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


def kernel_file(op: str) -> Path | None:
    for root in kernel_roots():
        path = root / op / "tilelang" / f"{op}_tilelang.py"
        if path.is_file():
            return path
    return None


def discovered_ops() -> tuple:
    """Every op with a kernel file, by name."""
    names = set()
    for root in kernel_roots():
        if root.is_dir():
            names.update(path.parent.parent.name for path in root.glob("*/tilelang/*_tilelang.py")
                         if path.name == f"{path.parent.parent.name}_tilelang.py")
    return tuple(sorted(names))


_MODULES: dict = {}
_MODULES_LOCK = threading.Lock()


def load_kernels(op: str):
    """The module ops/<op>/tilelang/<op>_tilelang.py, imported by file path
    once per process; BackendUnavailableError where the op has none."""
    with _MODULES_LOCK:
        module = _MODULES.get(op)
        if module is not None:
            return module
        path = kernel_file(op)
        if path is None:
            raise BackendUnavailableError("tilelang", f"{op} has no TileLang kernel (no {op}/tilelang/{op}_tilelang.py "
                                          f"under {', '.join(str(r) for r in kernel_roots())})")
        name = f"operator_runtime._tilelang_ops.{op}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        missing = [f for f in REQUIRED if not callable(getattr(module, f, None))]
        if missing:
            raise BackendUnavailableError("tilelang", f"{path} defines no {' or '.join(missing)}")
        _MODULES[op] = module
        return module


def kernel_name(factory, args) -> str:
    return f"{factory.__name__}{args}"


def compile_kernel(factory, args, target: dict):
    """factory(*args) compiled for `target`, as the runtime and CI do it."""
    return tilelang.compile(factory(*args), target=target, execution_backend="tvm_ffi",
                            pass_configs=pass_configs(factory))


class KernelTable:
    """(factory, args) -> compiled kernel, compiled at most once per process."""

    def __init__(self, target: dict):
        self.target = target
        self._kernels: dict = {}
        self._lock = threading.Lock()
        self.compile_log: list = []   # (name, seconds) of every kernel this process compiled or loaded

    def get(self, factory, args: tuple):
        key = (factory, args)
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                start = time.perf_counter()
                kernel = compile_kernel(factory, args, self.target)
                self.compile_log.append((kernel_name(factory, args), time.perf_counter() - start))
                self._kernels[key] = kernel
        return kernel

    def __len__(self) -> int:
        return len(self._kernels)
