"""Compile every TileLang kernel variant of every op for one target.

    python -m operator_runtime._internal.tilelang_compile [--arch sm_90] [--jobs N] [--op NAME]

Used by CI (no GPU: the target is explicit, nvcc must be on PATH or at
$CUDA_HOME) so that a kernel which no longer lowers or compiles fails the
build, and to fill TileLang's on-disk cache ($TILELANG_CACHE_DIR) before a
GPU run. Exits non-zero if any variant fails or produces no cubin.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--op", action="append", default=[])
    args = parser.parse_args(argv)

    import tilelang

    from .tilelang_backend import OPS, load_kernels
    from .tilelang_common import pass_configs

    target = {"kind": "cuda", "arch": args.arch}
    jobs = []
    for op in args.op or OPS:
        for name, factory, fargs in load_kernels(op).variants():
            jobs.append((op, name, factory, fargs))
    print(f"tilelang {tilelang.__version__}: compiling {len(jobs)} kernel variants for {target} "
          f"with {args.jobs} workers; cache {os.environ.get('TILELANG_CACHE_DIR', '~/.tilelang/cache')}", flush=True)

    def build(job):
        op, name, factory, fargs = job
        start = time.perf_counter()
        kernel = tilelang.compile(factory(*fargs), target=target, execution_backend="tvm_ffi",
                                  pass_configs=pass_configs(factory))
        source = kernel.get_kernel_source()
        if "__global__" not in source:
            raise RuntimeError("no CUDA kernel in the generated source")
        lib = getattr(kernel.adapter, "libpath", None) or getattr(kernel.adapter, "lib_path", None)
        return time.perf_counter() - start, ("uint4" in source or "float4" in source), lib

    failures = 0
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(build, job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            op, name, _, _ = futures[future]
            try:
                seconds, vectorized, _ = future.result()
                print(f"  ok   {op:10s} {name:42s} {seconds:6.2f} s{'  16-byte vectors' if vectorized else ''}",
                      flush=True)
            except Exception as error:  # report every failure, then fail
                failures += 1
                print(f"  FAIL {op:10s} {name:42s} {type(error).__name__}: {str(error).splitlines()[-1:]}",
                      flush=True)
    print(f"{len(jobs) - failures}/{len(jobs)} variants compiled in {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
