"""The benchmark's timing conditions (clean / dirty L2 on CUDA, one on the
CPU) and its --cross-check against triton's do_bench, without a GPU: the
CUDA-side logic runs with fake measure and do_bench functions."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from operator_runtime_testing import cross_check, op_bench
from operator_runtime_testing.benchmark import (CONDITIONS, BenchCase, Timing, TimingConfig, conditions_for,
                                                measure_conditions)
from operator_runtime_testing.performance import (CSV_COLUMNS, PerformanceResult, format_table, speedup_summary,
                                                  write_csv, write_json)

ROOT = Path(__file__).resolve().parent.parent
# What the fake measure returns, per flush: the dirty condition costs more.
FAKE_US = {"read": {"prepared": 10.0, "call": 11.0, "torch": 12.0},
           "write": {"prepared": 12.0, "call": 13.0, "torch": 12.0},
           None: {"prepared": 5.0, "call": 6.0, "torch": 5.0}}


def fake_measure(calls: list | None = None):
    def measure(fns, device, config=None, flush="read"):
        if calls is not None:
            calls.append((tuple(fns), flush))
        for fn in fns.values():
            fn()  # the callables must at least run
        return {name: Timing(FAKE_US[flush][name], FAKE_US[flush][name], FAKE_US[flush][name], 10, "fake")
                for name in fns}
    return measure


def small_copy_case() -> BenchCase:
    return BenchCase("small", ((1024,),), torch.float32)


def test_conditions_by_device():
    assert conditions_for(torch.device("cuda")) == CONDITIONS == ("clean", "dirty")
    assert conditions_for(torch.device("cuda"), "dirty") == ("dirty",)
    assert conditions_for(torch.device("cuda"), "clean") == ("clean",)
    for requested in ("both", "clean", "dirty"):  # the CPU flushes nothing: one condition
        assert conditions_for(torch.device("cpu"), requested) == ("cpu",)
    with pytest.raises(ValueError):
        conditions_for(torch.device("cuda"), "warm")


def test_each_condition_is_measured_with_its_flush():
    calls = []
    timings = measure_conditions({"prepared": lambda: None}, "cuda", None, CONDITIONS, fake_measure(calls))
    assert list(timings) == ["clean", "dirty"]
    assert [flush for _, flush in calls] == ["read", "write"]
    calls.clear()
    measure_conditions({"prepared": lambda: None}, "cpu", None, ("cpu",), fake_measure(calls))
    assert calls == [(("prepared",), None)]


def timed_row(conditions=CONDITIONS) -> PerformanceResult:
    """A copy row on the CPU backend, timed by the fake under `conditions`."""
    bench = op_bench.bench_for("copy")
    return op_bench.run_case(bench, small_copy_case(), "cpu", "cpu", 100.0, TimingConfig(), conditions=conditions,
                             measure_fn=fake_measure())


def test_a_row_holds_both_conditions():
    row = timed_row()
    assert row.status == "ok", row.message
    assert row.conditions == ["clean", "dirty"]
    assert (row.prepared_us, row.call_us, row.torch_us) == (10.0, 11.0, 12.0)
    assert (row.prepared_dirty_us, row.call_dirty_us, row.torch_dirty_us) == (12.0, 13.0, 12.0)
    assert row.speedup == pytest.approx(1.2) and row.derived("speedup", "dirty") == pytest.approx(1.0)
    assert row.tbps == pytest.approx(row.bytes_moved / 10e6)
    assert row.derived("ceiling_fraction", "dirty") == pytest.approx(row.bytes_moved / 12e3 / 100.0)
    assert set(row.timing) == {"clean", "dirty"} and row.timing["dirty"]["prepared"]["median_us"] == 12.0
    data = row.to_dict()
    for name in ("prepared_dirty_us", "torch_dirty_us", "tbps_dirty", "ceiling_fraction_dirty", "speedup_dirty"):
        assert data[name] is not None, name
    assert data["torch_compile_dirty_us"] is None and data["compile_speedup_dirty"] is None


def test_one_condition_leaves_the_other_unmeasured():
    row = timed_row(("dirty",))
    assert row.conditions == ["dirty"] and row.prepared_us is None and row.speedup is None
    assert row.prepared_dirty_us == 12.0
    assert "-/" not in format_table([row], conditions=("dirty",))


def test_the_table_prints_clean_slash_dirty():
    row = timed_row()
    table = format_table([row], tbps=True, conditions=CONDITIONS)
    header, rule, line = table.splitlines()
    assert "10.0/12.0" in line and "12.0/12.0" in line and "1.20x/1.00x" in line
    assert len(line) <= len(rule) and header.startswith("op ")
    single = format_table([row]).splitlines()[2]
    assert "/" not in single.split("contiguous", 1)[1] and "1.20x" in single


def test_json_and_csv_carry_both_conditions(tmp_path):
    rows = [timed_row(), timed_row(("clean",))]
    extra = {"cross_check": {"cases": [], "verdict": cross_check.verdict([])}}
    write_json(tmp_path / "b.json", rows, {"backend": "cpu"}, extra)
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["cross_check"]["verdict"]["agree"] is None
    assert [r["conditions"] for r in data["results"]] == [["clean", "dirty"], ["clean"]]
    assert data["results"][1]["prepared_dirty_us"] is None
    summary = data["summary"]["copy"]
    assert summary["median_speedup"] == pytest.approx(1.2)
    assert summary["dirty"]["measured"] == 1 and summary["dirty"]["speedup"]["median"] == pytest.approx(1.0)
    write_csv(tmp_path / "b.csv", rows)
    with open(tmp_path / "b.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == CSV_COLUMNS
    assert table[0]["conditions"] == "clean dirty" and float(table[0]["prepared_dirty_us"]) == 12.0
    assert float(table[0]["speedup_dirty"]) == pytest.approx(1.0) and table[1]["speedup_dirty"] == ""


def test_cpu_summary_has_no_dirty_part():
    row = timed_row(("cpu",))
    assert row.conditions == ["cpu"] and row.prepared_us == 5.0
    assert "dirty" not in speedup_summary([row])["copy"]


def test_bench_table_renders_either_condition(tmp_path):
    write_json(tmp_path / "b.json", [timed_row()], {"backend": "cpu", "args": {"op": ["copy"], "condition": "dirty"}},
               {"cross_check": {"verdict": {"text": "cross-check: agreement (test)"}}})

    def table(*options):
        run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_table.py"), str(tmp_path / "b.json"),
                              "--min-numel", "0", *options], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert "| copy | small | float32 | contiguous | 10.0 | 12.0 |" in table()
    assert "| copy | small | float32 | contiguous | 12.0 | 12.0 |" in table("--condition", "dirty")
    caption = table("--caption").splitlines()[0]
    assert "--condition dirty" in caption and "cross-check: agreement (test)" in caption


def test_the_plot_has_a_series_per_condition():
    from operator_runtime.cli.plot import series

    keys = set(series([timed_row()]))
    assert ("copy", "cpu", "ours", "clean") in keys and ("copy", "torch", "torch", "dirty") in keys


# -- cross-check ------------------------------------------------------------------

def test_the_representative_case_is_float32_and_large():
    cases = op_bench.benchmark_cases("softmax")
    case = cross_check.pick_case(cases)
    assert case.dtype == torch.float32 and case.layout == "contiguous"
    big = [c for c in cases if c.dtype == torch.float32 and c.numel >= cross_check.MIN_NUMEL]
    if big:
        assert case.numel == min(c.numel for c in big)
    small = [BenchCase("a", ((8,),), torch.float16), BenchCase("b", ((64,),), torch.float16)]
    assert cross_check.pick_case(small).name == "b" and cross_check.pick_case([]) is None


def test_the_plan_is_one_case_per_op_for_a_handful_of_ops():
    cases = {op: op_bench.benchmark_cases(op) for op in op_bench.OPS}
    plan, left_out = cross_check.cross_check_plan(cases)
    assert len(plan) == min(len(cases), cross_check.MAX_CASES)
    assert [op for op, _ in plan] + left_out == list(cases)


def test_verdict_states_the_worst_deviation():
    def entry(prepared, torch_ratio):
        return {"op": "copy", "case": "big", "implementations": {"prepared": {"ratio": prepared},
                                                                 "torch": {"ratio": torch_ratio}}}

    good = cross_check.verdict([entry(1.02, 0.97)])
    assert good["agree"] and good["max_deviation"] == pytest.approx(0.03)
    assert good["text"].startswith("cross-check: agreement") and "3.0%" in good["text"]
    bad = cross_check.verdict([entry(1.02, 0.97), entry(1.25, 1.0)])
    assert bad["agree"] is False and "DISAGREEMENT" in bad["text"] and "1.250x" in bad["text"]


def test_cross_check_with_fakes_compares_dirty_medians():
    do_bench_calls = []

    def fake_do_bench(fn, warmup, rep, return_mode):
        do_bench_calls.append(return_mode)
        fn()
        return 0.012  # ms: 12 us, the fake's dirty median of ours and torch

    flushes, lines = [], []
    result = cross_check.run_cross_check([("copy", small_copy_case())], op_bench.bench_for, "cpu", "cpu",
                                         TimingConfig(), fake_do_bench, fake_measure(flushes), lines.append)
    assert [flush for _, flush in flushes] == ["write"] and do_bench_calls == ["median", "median"]
    (entry,) = result["cases"]
    assert entry["implementations"]["prepared"] == {"harness_dirty_us": 12.0, "do_bench_us": 12.0, "ratio": 1.0}
    assert result["verdict"]["agree"] and lines[-1].startswith("[cross-check] cross-check: agreement")


def test_a_failing_case_is_reported_not_raised():
    def broken_do_bench(*args, **kwargs):
        raise RuntimeError("no GPU here")

    result = cross_check.run_cross_check([("copy", small_copy_case())], op_bench.bench_for, "cpu", "cpu",
                                         TimingConfig(), broken_do_bench, fake_measure(), lambda line: None)
    assert "RuntimeError: no GPU here" in result["cases"][0]["error"]
    assert result["verdict"]["agree"] is None


def test_cross_check_refuses_without_cuda_or_triton(monkeypatch):
    with pytest.raises(cross_check.CrossCheckUnavailable, match="CUDA"):
        cross_check.require_do_bench("cpu")
    monkeypatch.setitem(sys.modules, "triton", None)  # importing it now raises ImportError
    monkeypatch.setitem(sys.modules, "triton.testing", None)
    with pytest.raises(cross_check.CrossCheckUnavailable, match=r"operator_runtime\[cross-check\]"):
        cross_check.require_do_bench("cuda")
