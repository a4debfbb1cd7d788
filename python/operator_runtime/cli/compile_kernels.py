"""`python -m operator_runtime compile`: every TileLang kernel variant of
every op compiled ahead of time into TileLang's disk cache
($TILELANG_CACHE_DIR, default ~/.tilelang/cache), so that no process's
first call on a new shape class waits seconds for nvcc; later processes
load the kernels from the cache in milliseconds. The target is the current
GPU's architecture, or --arch on a machine without one (nvcc must be on
PATH or at $CUDA_HOME either way)."""

from __future__ import annotations

import argparse
import os
import sys

PROG = "python -m operator_runtime compile"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", help="sm_XY to compile for (default: the current CUDA device's)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    parser.add_argument("--op", nargs="+", default=[], metavar="OP",
                        help="only these ops (default: every op with a TileLang kernel file)")


def target_arch(requested: str | None) -> str:
    if requested is not None:
        if not requested.startswith("sm_") or not requested[3:].isdigit():
            raise ValueError(f"--arch {requested!r}: expected sm_ and the compute capability digits, e.g. sm_90")
        return requested
    import torch

    if not torch.cuda.is_available():
        raise ValueError("no CUDA device to take the architecture from: pass --arch, e.g. --arch sm_90")
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def main(args) -> int:
    try:
        arch = target_arch(args.arch)
    except ValueError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    try:
        import tilelang  # noqa: F401
    except ImportError:
        print(f"{PROG}: TileLang is not installed (pip install tilelang==0.1.15)", file=sys.stderr)
        return 1
    from operator_runtime._internal.tilelang_compile import compile_variants
    from operator_runtime._internal.tilelang_kernels import discovered_ops

    known = discovered_ops()
    unknown = [op for op in args.op if op not in known]
    if unknown:
        print(f"{PROG}: no TileLang kernels for {', '.join(unknown)} (ops with kernels: {', '.join(known)})",
              file=sys.stderr)
        return 2
    failures = compile_variants(args.op or known, {"kind": "cuda", "arch": arch}, args.jobs,
                                lambda line: print(line, flush=True))
    return 1 if failures else 0
