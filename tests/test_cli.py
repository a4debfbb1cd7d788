"""python -m operator_runtime {info,check,bench}, run as a user would: in a
subprocess whose working directory is outside the checkout."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from cuda_helpers import NEEDS_NVCC

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(tmp_path, *args, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only what is installed
    return subprocess.run([sys.executable, "-m", "operator_runtime", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_info(tmp_path):
    import operator_runtime as oprt

    run = cli(tmp_path, "info")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert f"operator_runtime {oprt.__version__}" in out
    assert f"C ABI version: {oprt.abi_version()}" in out
    for line in ("library: ", "CUDA targets built: ", "C fast path: ", "tensor reads: ", "TileLang: "):
        assert line in out, out
    assert "  cpu       available" in out, out
    assert "  metax     unavailable: " in out, out


def test_check_cpu(tmp_path):
    run = cli(tmp_path, "check", "--backend", "cpu")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failure(s)" in run.stdout


def test_bench_writes_json_csv_plot(tmp_path):
    plot = importlib.util.find_spec("matplotlib") is not None
    args = ["bench", "--backend", "cpu", "--quick", "--op", "copy", "--min-time", "0.01", "--host-calls", "50",
            "--json", "b.json", "--csv", "b.csv"] + (["--plot", "b.png"] if plot else [])
    run = cli(tmp_path, *args)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = json.loads((tmp_path / "b.json").read_text())
    results = rows["results"]
    assert results and {r["op"] for r in results} == {"copy"}
    assert all(r["status"] == "ok" and r["prepared_us"] > 0 for r in results)
    assert rows["meta"]["complete"] and rows["meta"]["copy_ceiling"]["gbps"] > 0
    assert f"[{len(results)}/{len(results)}] copy " in run.stderr  # the progress count
    with open(tmp_path / "b.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [(r["case"], r["dtype"]) for r in table] == [(r["case"], r["dtype"]) for r in results]
    assert all(float(r["tbps"]) > 0 for r in table)
    # The CPU has one timing condition: the plain columns hold it, the dirty ones stay empty.
    assert all(r["conditions"] == ["cpu"] and r["prepared_dirty_us"] is None for r in results)
    assert all(r["conditions"] == "cpu" and r["prepared_dirty_us"] == "" for r in table)
    assert "cross_check" not in rows
    if not plot:
        pytest.skip("matplotlib is not importable: the plot was not tested")
    assert (tmp_path / "b.png").read_bytes()[:8] == PNG_MAGIC


def test_plot_without_matplotlib_is_a_clear_error(tmp_path):
    (tmp_path / "matplotlib").mkdir()  # a package that fails to import shadows the real one
    (tmp_path / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)
    run = subprocess.run([sys.executable, "-m", "operator_runtime", "bench", "--op", "copy", "--plot", "x.png"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "pip install 'operator_runtime[plot]'" in run.stderr


def test_bench_condition_on_the_cpu_is_its_one_condition(tmp_path):
    run = cli(tmp_path, "bench", "--backend", "cpu", "--op", "copy", "--case", "tiny", "--min-time", "0.01",
              "--host-calls", "0", "--condition", "dirty", "--json", "b.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "one timing condition on the CPU" in run.stdout
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["meta"]["args"]["condition"] == "dirty" and data["meta"]["device"]["conditions"] == ["cpu"]
    assert all(r["conditions"] == ["cpu"] and r["prepared_us"] > 0 for r in data["results"])


def test_bench_rejects_an_unknown_condition(tmp_path):
    run = cli(tmp_path, "bench", "--backend", "cpu", "--condition", "warm")
    assert run.returncode == 2 and "--condition" in run.stderr


def test_cross_check_on_the_cpu_is_refused_before_measuring(tmp_path):
    run = cli(tmp_path, "bench", "--backend", "cpu", "--op", "copy", "--cross-check", "--json", "b.json")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--cross-check compares CUDA timings" in run.stderr
    assert "[bench]" not in run.stdout and not (tmp_path / "b.json").exists()


def test_compile_refuses_a_bad_arch(tmp_path):
    run = cli(tmp_path, "compile", "--arch", "90")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--arch '90'" in run.stderr and "sm_90" in run.stderr


@pytest.mark.skipif(importlib.util.find_spec("tilelang") is None, reason="tilelang not installed")
@NEEDS_NVCC
def test_compile_fills_the_tilelang_cache_once(tmp_path, monkeypatch):
    """compile builds every variant of an op into $TILELANG_CACHE_DIR; a
    second run finds them all there and writes nothing new."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(cache))
    first = cli(tmp_path, "compile", "--arch", "sm_90", "--op", "relu", "--jobs", "2", timeout=600)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    done = [line for line in first.stdout.splitlines() if "variants compiled" in line]
    assert done and done[0].split()[0].split("/")[0] == done[0].split()[0].split("/")[1] != "0", first.stdout
    files = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert any(p.suffix == ".cubin" for p in files), files
    second = cli(tmp_path, "compile", "--arch", "sm_90", "--op", "relu", "--jobs", "2", timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()) == files
