"""One benchmark report row (PerformanceResult), byte/FLOP counting helpers,
an aligned text table and JSON output.

Every time is a measured median in microseconds; a figure that was not
measured stays None and prints as "-". Derived columns (GB/s, fraction of
the copy ceiling, GFLOP/s, speedup) are computed from the measured times of
the same run, never estimated.

Counting conventions (the *minimum* traffic and work of the op, so GB/s is
comparable with the copy ceiling):
  bytes  = every input read once + the output written once. A broadcast
           input counts at its real (unexpanded) size; a strided view counts
           the elements it addresses, not the storage around them.
  FLOPs  = copy 0; vector_add 1 per output element; reduce_sum 1 add per
           input element (n-1 per output, rounded up to n); softmax 5 per
           element (max-compare, subtract, exp, sum-add, scale) with exp
           counted as one operation.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import torch

# A row is marked "?" in the table when its timings spread more than
# NOISY_SPREAD, or other processes used more than BUSY_LIMIT of the CPUs.
NOISY_SPREAD = 0.3
BUSY_LIMIT = 0.15


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel must read (or write) to touch every distinct element of
    `t` once: stride-0 (broadcast) dims do not multiply the count."""
    distinct = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            distinct *= size
    return distinct * t.element_size() if t.numel() else 0


def min_bytes_moved(out: torch.Tensor, inputs: Iterable[torch.Tensor]) -> int:
    """Each input read once (at its real size) + the output written once."""
    return tensor_bytes(out) + sum(tensor_bytes(t) for t in inputs)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _quotient(numerator, denominator) -> float | None:
    """numerator / denominator when both were measured (and are non-zero)."""
    return numerator / denominator if numerator and denominator else None


@dataclass
class PerformanceResult:
    """One profiler-style row: one op, one case, one dtype on one backend."""

    op: str
    backend: str
    case: str
    dtype: str
    shapes: list                  # input shapes, in the op's argument order
    params: dict = field(default_factory=dict)
    device: str = "cpu"
    layout: str = "contiguous"
    numel: int = 0                # elements of the largest operand
    variant: str | None = None    # PreparedOp.variant
    status: str = "ok"            # ok | wrong | error | unavailable
    message: str = ""
    prepared_us: float | None = None      # prepare_op(...).run()
    call_us: float | None = None          # op(...) out of place
    torch_us: float | None = None         # torch eager (out= form where torch has one)
    torch_compile_us: float | None = None  # torch.compile of the functional form (CUDA, opt-in)
    bytes_moved: int = 0
    flops: int = 0
    ceiling_gbps: float | None = None     # copy bandwidth measured in this run
    rel_error: float | None = None        # ||ours - ref|| / ||ref||, ref in float64
    torch_rel_error: float | None = None  # the same for torch's output
    timing: dict = field(default_factory=dict)  # method, reps, spreads

    # -- derived columns (all from measured prepared_us) ----------------------
    @property
    def gbps(self) -> float | None:
        return self.bytes_moved / (self.prepared_us * 1e3) if self.prepared_us else None

    @property
    def tbps(self) -> float | None:
        gbps = self.gbps
        return gbps / 1e3 if gbps is not None else None

    @property
    def ceiling_fraction(self) -> float | None:
        gbps = self.gbps
        return gbps / self.ceiling_gbps if gbps is not None and self.ceiling_gbps else None

    @property
    def gflops(self) -> float | None:
        return self.flops / (self.prepared_us * 1e3) if self.prepared_us else None

    @property
    def speedup(self) -> float | None:
        """torch time / our prepared time: > 1 means ours is faster."""
        return _quotient(self.torch_us, self.prepared_us)

    @property
    def call_speedup(self) -> float | None:
        """torch time / our out-of-place time."""
        return _quotient(self.torch_us, self.call_us)

    @property
    def compile_speedup(self) -> float | None:
        """torch.compile time / our prepared time: > 1 means ours is faster."""
        return _quotient(self.torch_compile_us, self.prepared_us)

    @property
    def max_spread(self) -> float | None:
        """Largest (high - low) / median over this row's timings: the
        run-to-run noise (CPU: slowest vs fastest batch; CUDA: quartiles)."""
        spreads = [(t["high_us"] - t["low_us"]) / t["median_us"]
                   for t in self.timing.values() if t.get("median_us")]
        return max(spreads) if spreads else None

    @property
    def background_busy(self) -> float | None:
        values = [t["background_busy"] for t in self.timing.values() if t.get("background_busy") is not None]
        return max(values) if values else None

    @property
    def noisy(self) -> bool:
        """Timings spread widely, or other processes loaded the CPUs meanwhile."""
        spread, busy = self.max_spread, self.background_busy
        return (spread is not None and spread > NOISY_SPREAD) or (busy is not None and busy > BUSY_LIMIT)

    def to_dict(self) -> dict:
        row = asdict(self)
        for name in ("gbps", "tbps", "ceiling_fraction", "gflops", "speedup", "call_speedup", "compile_speedup",
                     "max_spread", "background_busy", "noisy"):
            row[name] = getattr(self, name)
        return row


# -- table ---------------------------------------------------------------------

def _num(value, fmt: str) -> str:
    """`value` formatted, or "-" when it was not measured (None, inf, NaN)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, fmt)


def _us(value) -> str:
    return _num(value, ".1f" if value is None or value < 1e4 else ".0f")


def _ratio(value, noisy=False) -> str:
    return _num(value, ".2f") + ("x" if value is not None else "") + ("?" if noisy else " ")


# (header, width, right-aligned, cell function)
_COLUMNS = [
    ("op", 10, False, lambda r: r.op),
    ("case", 0, False, lambda r: r.case),            # width set from the cases
    ("dtype", 8, False, lambda r: r.dtype),
    ("variant", 0, False, lambda r: r.variant or "-"),
    ("prep us", 10, True, lambda r: _us(r.prepared_us)),
    ("call us", 10, True, lambda r: _us(r.call_us)),
    ("torch us", 10, True, lambda r: _us(r.torch_us)),
    ("GB/s", 8, True, lambda r: _num(r.gbps, ".1f")),
    ("%ceil", 6, True, lambda r: _num(None if r.ceiling_fraction is None else 100 * r.ceiling_fraction, ".0f")),
    ("GFLOP/s", 8, True, lambda r: _num(r.gflops, ".2f") if r.flops else "-"),
    ("vs torch", 9, True, lambda r: _ratio(r.speedup, r.noisy)),
]
# With --torch-compile: its time after torch's, and our ratio to it after ours to torch.
_COMPILE_COLUMNS = {"torch us": ("compile us", 10, True, lambda r: _us(r.torch_compile_us)),
                    "vs torch": ("vs compile", 10, True, lambda r: _ratio(r.compile_speedup, r.noisy))}
# On a GPU: bandwidth in TB/s.
_TBPS_COLUMN = ("TB/s", 6, True, lambda r: _num(r.tbps, ".2f"))


class TableFormatter:
    """Fixed-width rows, so rows can be printed as soon as they are measured.
    `case_names`/`variants` size the two free-text columns."""

    def __init__(self, case_names: Sequence[str] = (), variants: Sequence[str] = (), with_compile=False,
                 tbps=False):
        self.columns = []
        for column in _COLUMNS:
            self.columns.append(_TBPS_COLUMN if tbps and column[0] == "GB/s" else column)
            if with_compile and column[0] in _COMPILE_COLUMNS:
                self.columns.append(_COMPILE_COLUMNS[column[0]])
        case_w = max([len("case")] + [len(n) for n in case_names])
        var_w = max([len("variant"), 16] + [len(v) for v in variants])
        self.widths = [case_w if h == "case" else var_w if h == "variant" else w for h, w, _, _ in self.columns]

    def _line(self, cells) -> str:
        parts = []
        for (_, _, right, _), width, cell in zip(self.columns, self.widths, cells):
            parts.append(cell.rjust(width) if right else cell.ljust(width))
        return "  ".join(parts).rstrip()

    def header(self) -> str:
        head = self._line([h for h, _, _, _ in self.columns])
        return head + "\n" + "-" * len(head)

    def row(self, r: PerformanceResult) -> str:
        if r.status not in ("ok",):
            cells = [r.op, r.case, r.dtype, r.status.upper()]
            line = self._line(cells + [""] * (len(self.columns) - len(cells)))
            return (line + "  " + r.message).rstrip()
        return self._line([fn(r) for _, _, _, fn in self.columns])

    def table(self, results: Iterable[PerformanceResult]) -> str:
        return "\n".join([self.header()] + [self.row(r) for r in results])


def format_table(results: Sequence[PerformanceResult], with_compile=False, tbps=False) -> str:
    fmt = TableFormatter([r.case for r in results], [r.variant or "" for r in results], with_compile, tbps)
    return fmt.table(results)


# -- summary -------------------------------------------------------------------

def _spread(values) -> dict:
    return {"min": min(values) if values else None, "median": statistics.median(values) if values else None,
            "max": max(values) if values else None}


def speedup_summary(results: Sequence[PerformanceResult]) -> dict:
    """Per op: count, and min/median/max of each peer's time / our prepared
    time (torch eager; torch.compile where measured) and of the fraction of
    the copy ceiling, over the rows measured."""
    summary = {}
    for op in dict.fromkeys(r.op for r in results):
        rows = [r for r in results if r.op == op]
        ok = [r for r in rows if r.status == "ok"]
        speedups = [r.speedup for r in ok if r.speedup is not None]
        eager = _spread(speedups)
        summary[op] = {
            "rows": len(rows),
            "measured": len(speedups),
            "not_ok": [f"{r.case}/{r.dtype}: {r.status}" for r in rows if r.status != "ok"],
            "min_speedup": eager["min"],
            "median_speedup": eager["median"],
            "max_speedup": eager["max"],
            "compile_speedup": _spread([r.compile_speedup for r in ok if r.compile_speedup is not None]),
            "ceiling_fraction": _spread([r.ceiling_fraction for r in ok if r.ceiling_fraction is not None]),
        }
    return summary


# -- JSON ----------------------------------------------------------------------

def to_json(results: Sequence[PerformanceResult], meta: dict | None = None) -> str:
    payload = {"meta": meta or {}, "results": [r.to_dict() for r in results],
               "summary": speedup_summary(results)}
    return json.dumps(payload, indent=2, default=str)


def write_json(path, results: Sequence[PerformanceResult], meta: dict | None = None) -> None:
    with open(path, "w") as f:
        f.write(to_json(results, meta))
        f.write("\n")


# -- CSV -----------------------------------------------------------------------

CSV_COLUMNS = ("op", "backend", "case", "dtype", "shapes", "params", "device", "layout", "numel", "variant", "status",
               "message", "prepared_us", "call_us", "torch_us", "torch_compile_us", "bytes_moved", "flops", "gbps",
               "tbps", "ceiling_gbps", "ceiling_fraction", "speedup", "compile_speedup", "rel_error",
               "torch_rel_error", "noisy")


def write_csv(path, results: Sequence[PerformanceResult]) -> None:
    """One row per result; shapes and params as JSON text."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for result in results:
            row = result.to_dict()
            row["shapes"], row["params"] = json.dumps(row["shapes"]), json.dumps(row["params"])
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in CSV_COLUMNS})
