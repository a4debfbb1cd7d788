"""Markdown table of run_ops.py benchmark JSON files, as in docs/performance.md.

    python scripts/bench_table.py bench.json [more.json ...] [--min-numel 16777216] [--op softmax ...]
                                  [--condition clean|dirty] [--caption] [--host]

Rows are keyed by (op, case, dtype); a later file's row replaces an earlier
one, so a partial re-run can be laid over a full run. Columns: our prepared
time, torch eager's, torch.compile's (when measured), achieved TB/s, the
fraction of the copy ceiling measured in the same run, and the ratios
(peer time / ours: > 1 means ours is faster), all of one timing condition:
--condition clean (the default, and a CPU run's only one) or dirty (CUDA
rows timed after an L2 flush that writes). --caption first prints, per
file, the machine, torch, date, copy ceiling, the run_ops.py command that
wrote it and its --cross-check verdict; --host adds the host-overhead rows
the files hold.
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--min-numel", type=int, default=16 * 2**20)
    parser.add_argument("--op", nargs="*", default=None)
    parser.add_argument("--caption", action="store_true")
    parser.add_argument("--host", action="store_true")
    parser.add_argument("--condition", choices=("clean", "dirty"), default="clean")
    args = parser.parse_args()
    dirty = "_dirty" if args.condition == "dirty" else ""
    rows: dict = {}
    metas = []
    for path in args.files:
        with open(path) as f:
            data = json.load(f)
        metas.append((path, data.get("meta", {}), data.get("cross_check")))
        for r in data["results"]:
            rows[(r["op"], r["case"], r["dtype"])] = r
    if args.caption:
        for path, meta, cross_check in metas:
            print(caption(path, meta, cross_check))
        print()
    any_compile = any(r.get(f"torch_compile{dirty}_us") for r in rows.values())
    head = ["op", "case", "dtype", "variant", "ours µs", "torch µs"] + (["compile µs"] if any_compile else []) + \
        ["TB/s", "% ceiling", "vs torch"] + (["vs compile"] if any_compile else [])
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join("---" if i < 4 else "---:" for i in range(len(head))) + " |")
    for r in rows.values():
        if (r["numel"] < args.min_numel or (args.op and r["op"] not in args.op) or r["status"] != "ok"
                or not r.get(f"prepared{dirty}_us")):  # e.g. a row of a run that timed the other condition only
            continue
        cells = [r["op"], r["case"], r["dtype"], r["variant"], f"{r[f'prepared{dirty}_us']:.1f}",
                 f"{r[f'torch{dirty}_us']:.1f}"]
        if any_compile:
            cells.append(f"{r[f'torch_compile{dirty}_us']:.1f}" if r.get(f"torch_compile{dirty}_us") else "")
        cells += [f"{r[f'tbps{dirty}']:.2f}", f"{100 * r[f'ceiling_fraction{dirty}']:.0f}",
                  f"{r[f'speedup{dirty}']:.2f}x"]
        if any_compile:
            cells.append(f"{r[f'compile_speedup{dirty}']:.2f}x" if r.get(f"compile_speedup{dirty}") else "")
        print("| " + " | ".join(cells) + " |")
    if args.host:
        print()
        print_host_overhead(metas)


def run_ops_command(run_args: dict) -> str:
    """The tests/run_ops.py command line that a file's meta.args describe."""
    parts = ["python3 tests/run_ops.py", "--op " + " ".join(run_args.get("op") or []),
             "--backend " + str(run_args.get("backend")), "--mode " + str(run_args.get("mode"))]
    for key in ("case", "dtype"):
        if run_args.get(key):
            values = run_args[key] if isinstance(run_args[key], list) else [run_args[key]]
            parts.append(f"--{key} " + " ".join(map(str, values)))
    for key in ("min_time", "host_calls"):
        if run_args.get(key) is not None:
            parts.append(f"--{key.replace('_', '-')} {run_args[key]}")
    if run_args.get("condition") not in (None, "both"):
        parts.append(f"--condition {run_args['condition']}")
    parts += [flag for key, flag in (("quick", "--quick"), ("torch_compile", "--torch-compile"),
                                     ("cross_check", "--cross-check")) if run_args.get(key)]
    return " ".join(parts)


def caption(path: str, meta: dict, cross_check: dict | None = None) -> str:
    device = meta.get("device", {})
    ceiling = meta.get("copy_ceiling", {}).get("gbps")
    where = f"{device.get('name', device.get('device', '?'))}, torch {device.get('torch', '?')}, {device.get('time', '?')}"
    if ceiling:
        where += f", copy ceiling {ceiling / 1000:.3f} TB/s"
    text = f"- `{path}`: {where}; `{run_ops_command(meta.get('args', {}))}`"
    if cross_check:
        text += f"; {cross_check['verdict']['text']}"
    return text


def print_host_overhead(metas: list) -> None:
    """us per call on a tiny tensor; ratios are ours / torch's (< 1: ours faster)."""
    print("| op | ours op() µs | torch eager µs | ratio | ours prepared µs | torch out= µs | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for _, meta, _ in metas:
        for op, h in (meta.get("host_overhead_us") or {}).items():
            print(f"| {op} | {h['call']:.2f} | {h['torch_call']:.2f} | {h['call_ratio']:.2f}x | "
                  f"{h['prepared']:.2f} | {h['torch']:.2f} | {h['prepared_ratio']:.2f}x |")


if __name__ == "__main__":
    main()
