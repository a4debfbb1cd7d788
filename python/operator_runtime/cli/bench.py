"""`python -m operator_runtime bench`: the benchmark of every discovered op on
one backend. It measures the copy-bandwidth ceiling, then per case checks
ours (both paths) against a float64 reference, times ours (prepared and out
of place) and torch, prints one row per case and a summary; --json, --csv
and --plot write every row. On CUDA every row is timed under a clean and a
dirty L2 (--condition picks one), and --cross-check compares a few cases
with triton's do_bench (operator_runtime_testing/cross_check.py). See
operator_runtime_testing/benchmark.py for the method. tests/run_ops.py runs
the same benchmark (its --mode bench).

Exit status: 0 all good; 1 a benchmark case was wrong or raised; 2 bad
arguments or the backend cannot run here; 3 nothing failed but some
requested op has no kernel on this backend.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import traceback

import torch

from operator_runtime import backend_unavailable_reason
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import cross_check, op_bench
from operator_runtime_testing.benchmark import (CONDITIONS, FLUSH_OF_CONDITION, TimingConfig, conditions_for,
                                                cpu_busy_fraction, device_info, flush_buffer_bytes,
                                                measure_copy_ceiling)
from operator_runtime_testing.performance import (BUSY_LIMIT, NOISY_SPREAD, PerformanceResult, TableFormatter,
                                                  condition_summary, dtype_name, speedup_summary, write_csv,
                                                  write_json)

PROG = "operator_runtime"
OPS = tuple(DESCRIPTIONS)
BEST_ORDER = ("nvidia", "tilelang", "cpu")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
CPU_TARGET = (4 * 2**20, 1.5)  # CPU: contiguous cases of >= 4M elements within 1.5x of torch


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `bench` (and of tests/run_ops.py)."""
    p.add_argument("--op", nargs="+", default=["all"], choices=OPS + ("all",), metavar="OP",
                   help=f"one or more of {', '.join(OPS)}, or all")
    p.add_argument("--backend", default="best",
                   help="backend name, or 'best': the first of nvidia, tilelang, cpu that runs every selected op")
    p.add_argument("--quick", action="store_true", help="bench only the quick subset (small/medium sizes)")
    p.add_argument("--dtype", nargs="+", choices=tuple(DTYPES), help="bench only these dtypes")
    p.add_argument("--case", help="bench only cases whose name contains this")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds of timed calls per measurement")
    p.add_argument("--host-calls", type=int, default=2000, help="calls for the host-overhead row (0: skip)")
    p.add_argument("--torch-compile", action="store_true", help="CUDA: also time torch.compile of torch's op")
    p.add_argument("--condition", choices=CONDITIONS + ("both",), default="both",
                   help="CUDA: time each row after an L2 flush that leaves clean lines (a read), dirty lines "
                        "(a write, as after a producer kernel), or both (the default); the CPU has one condition")
    p.add_argument("--cross-check", action="store_true",
                   help="CUDA: also time a few large cases with triton.testing.do_bench and compare its medians "
                        "with ours under the dirty condition (needs triton)")
    p.add_argument("--json", metavar="PATH", help="write every benchmark row (and the ceiling) as JSON")
    p.add_argument("--csv", metavar="PATH", help="write every benchmark row as CSV")
    p.add_argument("--plot", metavar="FILE.png",
                   help="write a roofline-style chart (TB/s against bytes moved); needs matplotlib "
                        "(pip install 'operator_runtime[plot]')")


def selected_ops(names) -> list:
    return list(OPS) if "all" in names else list(dict.fromkeys(names))


def device_type_of(backend: str) -> str:
    from operator_runtime import Backend
    from operator_runtime._internal.backends import backend_impl

    return backend_impl(Backend(backend)).device_type


def op_failure(op: str, backend: str, device_type: str) -> str | None:
    """None if `op` really runs on `backend` (a tiny prepared call), else why not."""
    try:
        return op_bench.bench_for(op).probe(backend, torch.device(device_type))
    except Exception as error:  # a kernel that exists but fails even on a tiny input
        return f"{type(error).__name__}: {error}".splitlines()[0][:200]


def resolve_backend(name: str, ops=OPS) -> tuple[str, str]:
    """(backend, device type); exits 2 if it cannot run here. 'best' is the
    first of BEST_ORDER that is available and runs every op in `ops`."""
    name = name.strip().lower()
    if name == "best":
        for candidate in BEST_ORDER:
            reason = backend_unavailable_reason(candidate)
            if reason is None:
                device_type = device_type_of(candidate)
                failures = {op: op_failure(op, candidate, device_type) for op in ops}
                failures = {op: why for op, why in failures.items() if why is not None}
                if not failures:
                    print(f"{PROG}: best backend: {candidate}", file=sys.stderr)
                    return candidate, device_type
                reason = "; ".join(f"{op}: {why}" for op, why in failures.items())
            print(f"{PROG}: skipping {candidate}: {reason}", file=sys.stderr)
        print(f"{PROG}: no backend of {', '.join(BEST_ORDER)} runs {', '.join(ops)} here", file=sys.stderr)
        sys.exit(2)
    try:
        reason = backend_unavailable_reason(name)
    except ValueError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        sys.exit(2)
    if reason is not None:
        print(f"{PROG}: backend '{name}' is not available: {reason}", file=sys.stderr)
        sys.exit(2)
    return name, device_type_of(name)


# -- bench mode ------------------------------------------------------------------------

def select_cases(op, args, device_type):
    """(cases to run, number skipped as GPU-only)."""
    cases = op_bench.benchmark_cases(op)
    if args.quick:
        cases = [c for c in cases if c.quick]
    if args.dtype:
        cases = [c for c in cases if dtype_name(c.dtype) in args.dtype]
    if args.case:
        cases = [c for c in cases if args.case in c.name]
    gpu_only = [c for c in cases if c.gpu_only] if device_type == "cpu" else []
    return [c for c in cases if not (c.gpu_only and device_type == "cpu")], len(gpu_only)


CONDITION_TEXT = {"clean": "clean (the flush reads: L2 left holding clean lines)",
                  "dirty": "dirty (the flush writes: the call pays the write-back of up to a whole L2 of dirty "
                           "lines, as after a producer kernel; as triton's do_bench)"}


def describe_setup(device, info: dict, conditions, config: TimingConfig) -> dict:
    """Print the machine, the conditions and the copy ceiling (measured now); returns the ceiling."""
    if device.type == "cpu":
        info["background_busy"] = busy = cpu_busy_fraction()
        llc = info.get("llc_bytes")
        if llc:
            print(f"[bench] {info['threads']} threads; largest cache {llc / 2**20:.0f} MiB: cases smaller than it "
                  "stay cache-resident, so their GB/s can pass the copy ceiling (DRAM)", flush=True)
        if busy is not None and busy > BUSY_LIMIT:
            print(f"[bench] WARNING: other processes kept {100 * busy:.0f}% of the CPUs busy just before this "
                  "run; CPU timings will be slow and noisy", flush=True)
        print("[bench] one timing condition on the CPU: nothing is flushed, caches stay warm as in a loop "
              "(--condition applies to CUDA only)", flush=True)
    ceiling = measure_copy_ceiling(device, config=config)
    print(f"[bench] copy ceiling (torch copy_ of {ceiling['buffer_bytes'] / 2**20:.0f} MiB, read+write, "
          f"measured now): {ceiling['gbps']:.1f} GB/s (median {ceiling['median_us']:.0f} us)", flush=True)
    if device.type == "cuda":
        info["l2_flush"] = {"buffer_bytes": flush_buffer_bytes(device),
                            **{c: FLUSH_OF_CONDITION[c] for c in conditions}}
        print(f"[bench] L2 flushed before every timed call over {info['l2_flush']['buffer_bytes'] / 2**20:.0f} "
              "MiB; conditions: " + ", ".join(CONDITION_TEXT[c] for c in conditions)
              + ("; cells read clean/dirty" if len(conditions) > 1 else ""), flush=True)
    return ceiling


def plan_cases(ops, args, device_type) -> tuple[list, list]:
    """([(op, cases)], notes)."""
    plan, notes = [], []
    for op in ops:
        try:
            cases, skipped = select_cases(op, args, device_type)
        except Exception as error:  # the cases module itself is broken
            notes.append(f"{op}: could not load benchmark cases: {type(error).__name__}: {error}")
            plan.append((op, []))
            continue
        if skipped:
            notes.append(f"{op}: skipped {skipped} GPU-only case(s) on the CPU")
        plan.append((op, cases))
    return plan, notes


def run_bench(ops, backend, device_type, args):
    config = TimingConfig(min_time=args.min_time)
    device = torch.device(device_type)
    conditions = conditions_for(device, args.condition)
    do_bench = cross_check.require_do_bench(device_type) if args.cross_check else None
    info = device_info(device)
    info["conditions"] = list(conditions)
    print(f"[bench] backend {backend} on {info['name']} ({device}); torch {info['torch']}", flush=True)
    ceiling = describe_setup(device, info, conditions, config)
    plan, notes = plan_cases(ops, args, device_type)
    unavailable, overheads, extra = [], {}, {}

    def meta(complete: bool) -> dict:
        return {"backend": backend, "device": info, "copy_ceiling": ceiling, "host_overhead_us": overheads,
                "args": vars(args), "notes": notes, "timing_config": vars(config), "complete": complete}

    names = [c.name for _, cases in plan for c in cases]
    total, done = len(names), 0
    table = TableFormatter(names, with_compile=args.torch_compile, tbps=device_type == "cuda",
                           conditions=conditions)
    results: list[PerformanceResult] = []
    print("\n" + table.header(), flush=True)
    for op, cases in plan:
        bench = op_bench.bench_for(op)
        try:
            reason, status = bench.probe(backend, device), "unavailable"
        except Exception as error:  # the op exists but fails even on a tiny input
            reason, status = f"{type(error).__name__}: {error}".splitlines()[0][:160], "error"
        if reason is not None:
            if status == "unavailable":
                unavailable.append(op)
            row = PerformanceResult(op=op, backend=backend, case="*", dtype="*", shapes=[], device=str(device),
                                    status=status, message=reason)
            results.append(row)
            print(table.row(row), flush=True)
            continue
        if not cases:
            notes.append(f"{op}: no benchmark cases selected (benchmark_cases() empty or all filtered out)")
        for case in cases:
            done += 1
            print(f"[{done}/{total}] {op} {case.name} {dtype_name(case.dtype)}", file=sys.stderr, flush=True)
            try:
                row = op_bench.run_case(bench, case, backend, device, ceiling["gbps"], config, args.torch_compile,
                                        conditions)
            except Exception as error:
                row = op_bench.make_result(bench, case, backend, device, status="error",
                                        message=f"{type(error).__name__}: {error}".splitlines()[0][:160])
                traceback.print_exc(limit=3)
            results.append(row)
            print(table.row(row), flush=True)
            if device_type == "cuda":
                torch.cuda.empty_cache()
            if args.json:  # rewritten after every row: a run cut short still leaves what it measured
                write_json(args.json, results, meta(complete=False))
        if args.host_calls > 0:
            try:
                overheads[op] = op_bench.host_overhead(bench, backend, device, args.host_calls)
            except Exception as error:
                notes.append(f"{op}: host-overhead measurement failed: {type(error).__name__}: {error}")
            if args.json:
                write_json(args.json, results, meta(complete=False))
    if do_bench is not None:
        extra["cross_check"] = run_cross_check(ops, backend, device, config, args, do_bench, unavailable)
    print_summary(results, overheads, notes, device_type, conditions)
    if "cross_check" in extra:
        print(f"[summary] {extra['cross_check']['verdict']['text']}")
    write_outputs(args, results, meta(complete=True), extra)
    if any(r.status in ("wrong", "error") for r in results):
        return 1
    if unavailable:
        return 3
    if not any(r.status == "ok" for r in results):
        print("[bench] nothing was measured", file=sys.stderr)
        return 1
    return 0


def run_cross_check(ops, backend, device, config, args, do_bench, unavailable) -> dict:
    """--cross-check: one large case per selected op (the first few ops),
    whatever --quick/--case chose; --dtype still applies."""
    cases_by_op = {}
    for op in ops:
        if op in unavailable:
            continue
        cases = op_bench.benchmark_cases(op)
        cases_by_op[op] = [c for c in cases if not args.dtype or dtype_name(c.dtype) in args.dtype]
    plan, left_out = cross_check.cross_check_plan(cases_by_op)
    print(f"\n[cross-check] ours (prepared) and torch eager: this harness's dirty-condition median against "
          f"triton.testing.do_bench's, {len(plan)} case(s)"
          + (f"; left out (at most {cross_check.MAX_CASES} ops): {', '.join(left_out)}" if left_out else ""),
          flush=True)
    result = cross_check.run_cross_check(plan, op_bench.bench_for, backend, device, config, do_bench,
                                         log=lambda line: print(line, flush=True))
    result["left_out"] = left_out
    return result


def write_outputs(args, results, meta: dict, extra: dict | None = None) -> None:
    if args.json:
        write_json(args.json, results, meta, extra)
        print(f"[bench] wrote {args.json}")
    if args.csv:
        write_csv(args.csv, results)
        print(f"[bench] wrote {args.csv}")
    if args.plot:
        from .plot import plot_roofline

        plot_roofline(args.plot, results, meta)
        print(f"[bench] wrote {args.plot}")


def _x(value):
    return "-" if value is None else f"{value:.2f}x"


def _summary_line(op_rows, condition: str) -> str:
    s = condition_summary(op_rows, condition)
    eager, compiled, ceiling = s["speedup"], s["compile_speedup"], s["ceiling_fraction"]
    line = (f"{s['measured']:>3} measured  vs torch: min {_x(eager['min'])}  median {_x(eager['median'])}  "
            f"max {_x(eager['max'])}")
    if compiled["median"] is not None:
        line += (f"  | vs compile: min {_x(compiled['min'])}  median {_x(compiled['median'])}  "
                 f"max {_x(compiled['max'])}")
    if ceiling["median"] is not None:
        line += f"  | ceiling median {100 * ceiling['median']:.0f}%"
    timed = [r for r in op_rows if r.us("call", condition) and r.us("prepared", condition)]
    if timed:  # how much the out-of-place path costs on top of prepared
        ratios = [r.us("call", condition) / r.us("prepared", condition) for r in timed]
        line += f"  | call/prepared median {statistics.median(ratios):.2f}"
    return line


def print_summary(results, overheads, notes, device_type, conditions=("cpu",)):
    print("\n[summary] speedup = peer time / our prepared time (>1: ours faster); peers: torch eager"
          " (out= form), torch.compile (with --torch-compile)")
    labelled = len(conditions) > 1 or conditions[0] != "cpu"
    for op, s in speedup_summary(results).items():
        ok = [r for r in results if r.op == op and r.status == "ok"]
        for i, condition in enumerate(conditions):
            label = f"{op if i == 0 else '':<11}" + (f" {condition:<5}" if labelled else "")
            print(f"  {label} {_summary_line(ok, condition)}")
        for problem in s["not_ok"]:
            print(f"      {problem}")
    noisy = [r for r in results if r.status == "ok" and r.noisy]
    if noisy:
        print(f"[summary] {len(noisy)} row(s) marked '?': timings spread over {100 * NOISY_SPREAD:.0f}%, or other "
              f"processes used over {100 * BUSY_LIMIT:.0f}% of the CPUs meanwhile; rerun before trusting them")
    if device_type == "cpu":
        threshold, factor = CPU_TARGET
        big = [r for r in results if r.status == "ok" and r.numel >= threshold and r.layout == "contiguous"]
        slow = [r for r in big if r.speedup is not None and r.speedup < 1 / factor]
        print(f"[summary] CPU target (contiguous, >= 4M elements, within {factor}x of torch): "
              f"{len(big) - len(slow)}/{len(big)} rows meet it")
        for r in slow:
            print(f"      {r.op} {r.case} {r.dtype}: {r.torch_us / r.prepared_us:.2f}x of torch's speed")
    if overheads:
        print_host_overhead(overheads)
    for note in notes:
        print(f"[note] {note}")


HOST_TARGETS = {"call_ratio": 1.3, "prepared_ratio": 1.0}  # ours / torch, at most


def print_host_overhead(overheads) -> None:
    """Ours vs torch eager per op: out of place (target <= 1.3x torch's
    functional call) and prepared (target <= 1.0x torch's out= call)."""
    print("[summary] host overhead, tiny tensor, back-to-back calls (us/call; ratio = ours / torch, "
          f"targets: call <= {HOST_TARGETS['call_ratio']}x, prepared <= {HOST_TARGETS['prepared_ratio']}x)")
    print(f"  {'op':<11} {'shape':<10} {'ours call':>9} {'torch':>7} {'ratio':>7}   "
          f"{'prepared':>8} {'torch out=':>10} {'ratio':>7}")
    for op, t in overheads.items():
        shape = "x".join(str(s) for s in t["shape"][0])
        marks = {k: ("" if t.get(k) is None or t[k] <= limit else "!") for k, limit in HOST_TARGETS.items()}
        print(f"  {op:<11} {shape:<10} {t['call']:>9.2f} {t['torch_call']:>7.2f} {_x(t['call_ratio']):>7}"
              f"{marks['call_ratio']:1}  {t['prepared']:>8.2f} {t['torch']:>10.2f} "
              f"{_x(t['prepared_ratio']):>7}{marks['prepared_ratio']}")


def main(args) -> int:
    if args.plot:  # fail before measuring, not after
        from .plot import require_matplotlib

        require_matplotlib()
    ops = selected_ops(args.op)
    backend, device_type = resolve_backend(args.backend, ops)
    refuse_unavailable_cross_check(args, device_type)
    return run_bench(ops, backend, device_type, args)


def refuse_unavailable_cross_check(args, device_type: str) -> None:
    """Exit 2 before measuring anything if --cross-check cannot run here."""
    if not args.cross_check:
        return
    try:
        cross_check.require_do_bench(device_type)
    except cross_check.CrossCheckUnavailable as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        sys.exit(2)
