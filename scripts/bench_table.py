"""Markdown table of run_ops.py benchmark JSON files, as in docs/performance.md.

    python scripts/bench_table.py bench.json [more.json ...] [--min-numel 16777216] [--op softmax ...]

Rows are keyed by (op, case, dtype); a later file's row replaces an earlier
one, so a partial re-run can be laid over a full run. Columns: our prepared
time, torch eager's, torch.compile's (when measured), achieved TB/s, the
fraction of the copy ceiling measured in the same run, and the ratios
(peer time / ours: > 1 means ours is faster).
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--min-numel", type=int, default=16 * 2**20)
    parser.add_argument("--op", nargs="*", default=None)
    args = parser.parse_args()
    rows: dict = {}
    for path in args.files:
        with open(path) as f:
            for r in json.load(f)["results"]:
                rows[(r["op"], r["case"], r["dtype"])] = r
    any_compile = any(r.get("torch_compile_us") for r in rows.values())
    head = ["op", "case", "dtype", "variant", "ours µs", "torch µs"] + (["compile µs"] if any_compile else []) + \
        ["TB/s", "% ceiling", "vs torch"] + (["vs compile"] if any_compile else [])
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join("---" if i < 4 else "---:" for i in range(len(head))) + " |")
    for r in rows.values():
        if r["numel"] < args.min_numel or (args.op and r["op"] not in args.op) or r["status"] != "ok":
            continue
        cells = [r["op"], r["case"], r["dtype"], r["variant"], f"{r['prepared_us']:.1f}", f"{r['torch_us']:.1f}"]
        if any_compile:
            cells.append(f"{r['torch_compile_us']:.1f}" if r.get("torch_compile_us") else "")
        cells += [f"{r['tbps']:.2f}", f"{100 * r['ceiling_fraction']:.0f}", f"{r['speedup']:.2f}x"]
        if any_compile:
            cells.append(f"{r['compile_speedup']:.2f}x" if r.get("compile_speedup") else "")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
