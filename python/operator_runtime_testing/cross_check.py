"""The benchmark's --cross-check: a few cases timed by this harness under
the dirty condition (an L2 flush that writes, before every call) and by
triton.testing.do_bench (median; its own flush also writes a 256 MiB
buffer), for ours (prepared) and torch eager, with the ratio of the two
medians per case and a one-line verdict. Both tools then time the same
thing, so a ratio far from 1 points at one of them (event placement, host
gaps, the flush), not at the kernels.
"""

from __future__ import annotations

from typing import Callable, Sequence

from operator_runtime_testing.benchmark import FLUSH_OF_CONDITION, BenchCase, TimingConfig, measure
from operator_runtime_testing.performance import dtype_name

MIN_NUMEL = 16 * 2**20   # a case this large is DRAM-bound, where the conditions matter
MAX_CASES = 5            # one case per op, for this many ops at most
TOLERANCE = 0.10         # medians within 10% of do_bench's count as agreeing
IMPLEMENTATIONS = ("prepared", "torch")


class CrossCheckUnavailable(RuntimeError):
    """--cross-check cannot run here (no CUDA device, or no triton)."""


def require_do_bench(device_type: str) -> Callable:
    """triton.testing.do_bench, imported only now (triton is optional)."""
    if device_type != "cuda":
        raise CrossCheckUnavailable(f"--cross-check compares CUDA timings with triton's do_bench; this backend "
                                    f"runs on the {device_type}, which has no L2 flush to compare")
    try:
        from triton.testing import do_bench
    except ImportError as error:
        raise CrossCheckUnavailable("--cross-check needs triton (triton.testing.do_bench): pip install "
                                    f"'operator_runtime[cross-check]' (or pip install triton); {error}") from None
    return do_bench


def pick_case(cases: Sequence[BenchCase]) -> BenchCase | None:
    """The op's representative case: float32 where it has that dtype (else
    its first dtype), contiguous, the smallest of >= MIN_NUMEL elements
    (else the largest)."""
    if not cases:
        return None
    dtypes = [c.dtype for c in cases]
    dtype = next((d for d in dtypes if dtype_name(d) == "float32"), dtypes[0])
    same = [c for c in cases if c.dtype == dtype]
    same = [c for c in same if c.layout == "contiguous"] or same
    big = [c for c in same if c.numel >= MIN_NUMEL]
    return min(big, key=lambda c: c.numel) if big else max(same, key=lambda c: c.numel)


def cross_check_plan(cases_by_op: dict) -> tuple[list, list]:
    """([(op, case)] for the first MAX_CASES ops that have a case, [ops left out])."""
    plan, left_out = [], []
    for op, cases in cases_by_op.items():
        case = pick_case(cases)
        if case is None:
            continue
        if len(plan) < MAX_CASES:
            plan.append((op, case))
        else:
            left_out.append(op)
    return plan, left_out


def cross_check_case(bench, case: BenchCase, backend: str, device, config: TimingConfig, do_bench: Callable,
                     measure_fn: Callable = measure) -> dict:
    """One case: each implementation's dirty-condition median by this
    harness and by do_bench, and their ratio (harness / do_bench)."""
    inputs = bench.make_inputs(case, device)
    out, torch_out = bench.make_out(case, inputs), bench.make_out(case, inputs)
    prepared = bench.prepare(out, inputs, case, backend)
    fns = {"prepared": prepared.run, "torch": lambda: bench.torch_out(torch_out, inputs, case)}
    try:
        harness = measure_fn(fns, device, config, flush=FLUSH_OF_CONDITION["dirty"])
        rep_ms = max(100.0, 1e3 * config.min_time)
        implementations = {}
        for name, fn in fns.items():
            reference_us = 1e3 * do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
            ours_us = harness[name].median_us
            implementations[name] = {"harness_dirty_us": ours_us, "do_bench_us": reference_us,
                                     "ratio": ours_us / reference_us if reference_us else None}
    finally:
        prepared.destroy()
    return {"op": bench.op, "case": case.name, "dtype": dtype_name(case.dtype), "numel": case.numel,
            "implementations": implementations}


def verdict(entries: Sequence[dict], tolerance: float = TOLERANCE) -> dict:
    """Whether every measured ratio lies within `tolerance` of 1, with the
    worst deviation and a one-line statement of it."""
    ratios = [(e["op"], e["case"], name, t["ratio"]) for e in entries
              for name, t in e.get("implementations", {}).items() if t.get("ratio")]
    if not ratios:
        return {"agree": None, "max_deviation": None, "tolerance": tolerance,
                "text": "cross-check: nothing was measured"}
    op, case, name, ratio = max(ratios, key=lambda r: abs(r[3] - 1))
    worst = abs(ratio - 1)
    agree = worst <= tolerance
    text = (f"cross-check: {'agreement' if agree else 'DISAGREEMENT'}: {len(ratios)} medians of the dirty "
            f"condition within {100 * worst:.1f}% of do_bench's (tolerance {100 * tolerance:.0f}%; worst: "
            f"{op} {case} {name}, {ratio:.3f}x)")
    return {"agree": agree, "max_deviation": worst, "tolerance": tolerance, "text": text}


def format_entry(entry: dict) -> str:
    head = f"[cross-check] {entry['op']} {entry['case']} {entry['dtype']}:"
    if "error" in entry:
        return f"{head} {entry['error']}"
    parts = [f"{name} {t['harness_dirty_us']:.1f} us (dirty) vs {t['do_bench_us']:.1f} us (do_bench) = "
             f"{t['ratio']:.3f}x" for name, t in entry["implementations"].items()]
    return f"{head} " + "; ".join(parts)


def run_cross_check(plan: Sequence, bench_for: Callable, backend: str, device, config: TimingConfig,
                    do_bench: Callable, measure_fn: Callable = measure, log: Callable = print) -> dict:
    """Every (op, case) of `plan` cross-checked; the JSON's "cross_check"."""
    entries = []
    for op, case in plan:
        try:
            entry = cross_check_case(bench_for(op), case, backend, device, config, do_bench, measure_fn)
        except Exception as error:  # one case failing leaves the others' comparison standing
            entry = {"op": op, "case": case.name, "dtype": dtype_name(case.dtype), "numel": case.numel,
                     "error": f"{type(error).__name__}: {error}".splitlines()[0][:200]}
        entries.append(entry)
        log(format_entry(entry))
    result = {"method": "harness: median under the dirty condition (L2 flush by a write of max(256 MiB, 4 x L2)); "
                        "do_bench: return_mode='median' (its flush writes 256 MiB)",
              "cases": entries, "verdict": verdict(entries)}
    log(f"[cross-check] {result['verdict']['text']}")
    return result
