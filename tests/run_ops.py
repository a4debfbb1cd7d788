#!/usr/bin/env python
"""Test and benchmark the operators on one backend.

  python tests/run_ops.py --op {copy|vector_add|reduce_sum|softmax|all} [more ops]
                          --backend {best|cpu|nvidia|tilelang|...}
                          --mode {test|bench|all} [--json PATH] [--csv PATH] [--plot FILE.png] [--quick]
                          [--dtype float32 float16 ...] [--case SUBSTRING]
                          [--condition {clean|dirty|both}] [--cross-check]

test:  pytest tests/ops/test_<op>.py --backend NAME -q per op (exit code 5,
       "no tests collected", counts as a failure).
bench: python -m operator_runtime bench with the same options (the code is
       operator_runtime/cli/bench.py; it also takes --csv and --plot).

--backend best (the default) picks the first of nvidia, tilelang, cpu that
is available and runs every selected op (a tiny prepared call per op).
The ops are those operator_runtime.ops discovers.

Exit status: 0 all good; 1 a test failed or a benchmark case was wrong or
raised; 2 bad arguments or the backend cannot run here; 3 nothing failed
but some requested op has no kernel on this backend.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import operator_runtime  # noqa: F401
    import operator_runtime_testing  # noqa: F401
except ImportError:  # a plain checkout: use the sources (the library must still be built)
    sys.path.insert(0, str(ROOT / "python"))

from operator_runtime.cli import bench  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.add_arguments(p)
    p.add_argument("--mode", default="all", choices=("test", "bench", "all"))
    return p.parse_args(argv)


def run_tests(ops, backend) -> int:
    failed = []
    for op in ops:
        cmd = [sys.executable, "-m", "pytest", "tests/test_ops.py", f"ops/{op}", "--op", op, "--backend", backend,
               "-q"]
        print(f"[test] {op}: {' '.join(cmd[1:])}", flush=True)
        rc = subprocess.call(cmd, cwd=ROOT)
        if rc != 0:
            why = "no tests collected" if rc == 5 else f"exit code {rc}"
            print(f"[test] {op}: FAILED ({why})", flush=True)
            failed.append(op)
        else:
            print(f"[test] {op}: passed", flush=True)
    print(f"[test] {len(ops) - len(failed)}/{len(ops)} ops passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.plot and args.mode in ("bench", "all"):
        from operator_runtime.cli.plot import require_matplotlib

        require_matplotlib()
    ops = bench.selected_ops(args.op)
    backend, device_type = bench.resolve_backend(args.backend, ops)
    if args.mode in ("bench", "all"):
        bench.refuse_unavailable_cross_check(args, device_type)
    status = 0
    if args.mode in ("test", "all"):
        status = run_tests(ops, backend)
    if args.mode in ("bench", "all"):
        bench_status = bench.run_bench(ops, backend, device_type, args)
        status = status or bench_status
    return status


if __name__ == "__main__":
    sys.exit(main())
