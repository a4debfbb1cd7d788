"""Compile every TileLang kernel variant of every op for one target.

    python -m operator_runtime._internal.tilelang_compile [--arch sm_90] [--jobs N] [--op NAME]

The ops are those with a kernel file (ops/<op>/tilelang/<op>_tilelang.py,
found by tilelang_kernels); each lists its kernels in variants(). A kernel
that several ops share (the softmax family's statistics kernels) is compiled
once. Used by CI (no GPU: the target is explicit, nvcc must be on PATH or
at $CUDA_HOME) so that a kernel which no longer lowers or compiles fails the
build, and to fill TileLang's on-disk cache ($TILELANG_CACHE_DIR) before a
GPU run. Exits non-zero if any variant fails or produces no CUDA kernel.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import time

import tilelang

from .tilelang_kernels import compile_kernel, discovered_ops, load_kernels


def variant_jobs(ops) -> list:
    """(op, name, factory, args) of every variant of `ops`, each kernel once."""
    jobs, seen = [], set()
    for op in ops:
        for name, factory, args in load_kernels(op).variants():
            if (factory, args) not in seen:
                seen.add((factory, args))
                jobs.append((op, name, factory, args))
    return jobs


def build(job, target: dict):
    """(seconds, whether the source has 16-byte vectors) of one compiled variant."""
    _, _, factory, args = job
    start = time.perf_counter()
    kernel = compile_kernel(factory, args, target)
    source = kernel.get_kernel_source()
    if "__global__" not in source:
        raise RuntimeError("no CUDA kernel in the generated source")
    return time.perf_counter() - start, ("uint4" in source or "float4" in source)


def compile_variants(ops, target: dict, jobs: int, say=print) -> int:
    """Compiles every variant of `ops` for `target` with `jobs` workers into
    TileLang's disk cache, one line per variant; returns the failure count."""
    todo = variant_jobs(ops)
    say(f"tilelang {tilelang.__version__}: compiling {len(todo)} kernel variants for {target} "
        f"with {jobs} workers; cache {os.environ.get('TILELANG_CACHE_DIR', '~/.tilelang/cache')}")
    failures = 0
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(build, job, target): job for job in todo}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            op, name, _, _ = futures[future]
            try:
                seconds, vectorized = future.result()
                say(f"  ok   [{done}/{len(todo)}] {op:11s} {name:42s} {seconds:6.2f} s"
                    f"{'  16-byte vectors' if vectorized else ''}")
            except Exception as error:  # report every failure, then fail
                failures += 1
                say(f"  FAIL [{done}/{len(todo)}] {op:11s} {name:42s} "
                    f"{type(error).__name__}: {str(error).splitlines()[-1:]}")
    say(f"{len(todo) - failures}/{len(todo)} variants compiled in {time.perf_counter() - started:.1f} s")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--op", action="append", default=[])
    args = parser.parse_args(argv)
    failures = compile_variants(args.op or discovered_ops(), {"kind": "cuda", "arch": args.arch}, args.jobs,
                                lambda line: print(line, flush=True))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
