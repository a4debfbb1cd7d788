"""The roofline-style chart of a benchmark run: achieved TB/s against bytes
moved per call, one marker series per op, implementation (ours, torch,
torch.compile) and timing condition (CUDA: clean and dirty L2, the dirty
one faded), and the copy ceiling measured in the same run as a line."""

from __future__ import annotations

import datetime

# Filled markers for ours, open ones for torch, crosses for torch.compile:
# the implementation reads from the marker, the op from the colour.
STYLES = {"ours": dict(marker="o"), "torch": dict(marker="s", facecolors="none"),
          "torch.compile": dict(marker="x")}
IMPLEMENTATIONS = {"ours": "prepared", "torch": "torch", "torch.compile": "compile"}
CONDITION_ALPHA = {"clean": 1.0, "cpu": 1.0, "dirty": 0.4}


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("operator_runtime: --plot needs matplotlib: pip install 'operator_runtime[plot]' "
                         "(or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def series(results) -> dict:
    """{(op, backend label, implementation, condition): [(bytes, TB/s), ...]} of the measured rows."""
    points = {}
    for r in results:
        if r.status != "ok" or not r.bytes_moved:
            continue
        for condition in r.conditions:
            for impl, name in IMPLEMENTATIONS.items():
                us = r.us(name, condition)
                if us:
                    label = r.backend if impl == "ours" else impl
                    points.setdefault((r.op, label, impl, condition), []).append(
                        (r.bytes_moved, r.bytes_moved / (us * 1e6)))
    return points


def plot_roofline(path, results, meta: dict) -> None:
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    points = series(results)
    ops = sorted({op for op, _, _, _ in points})
    colours = {op: plt.get_cmap("tab10")(i % 10) for i, op in enumerate(ops)}
    conditions = sorted({condition for _, _, _, condition in points})
    for (op, label, impl, condition), xy in sorted(points.items()):
        xs, ys = zip(*sorted(xy))
        style = dict(STYLES[impl])
        key = "edgecolors" if style.get("facecolors") == "none" else "color"
        style[key] = colours[op]
        name = f"{op} ({label}, {condition})" if len(conditions) > 1 else f"{op} ({label})"
        ax.scatter(xs, ys, s=36, label=name, alpha=CONDITION_ALPHA[condition], **style)
    ceiling = (meta.get("copy_ceiling") or {}).get("gbps")
    if ceiling:
        ax.axhline(ceiling / 1e3, color="black", linestyle="--", linewidth=1)
        ax.annotate(f"copy ceiling {ceiling / 1e3:.3g} TB/s (measured in this run)", xy=(0.99, ceiling / 1e3), ha="right",
                    xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points", fontsize=9)
    ax.set_xscale("log")
    ax.set_xlabel("bytes moved per call (log scale)")
    ax.set_ylabel("achieved bandwidth (TB/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    device = meta.get("device") or {}
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    ax.set_title(f"operator_runtime bench, backend {meta.get('backend')}: {device.get('name', '?')}, "
                 f"torch {device.get('torch', '?')}, {date}\n"
                 "filled: ours (prepared), open squares: torch eager, crosses: torch.compile"
                 + ("; faded: dirty L2" if "dirty" in conditions else ""), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="op (implementation)")
    fig.savefig(path, dpi=120)
    plt.close(fig)
