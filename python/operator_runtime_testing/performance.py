"""One benchmark report row (PerformanceResult), byte/FLOP counting helpers,
an aligned text table and JSON output.

Every time is a measured median in microseconds; a figure that was not
measured stays None and prints as "-". Derived columns (GB/s, fraction of
the copy ceiling, GFLOP/s, speedup) are computed from the measured times of
the same run, never estimated. A CUDA row holds them for each timing
condition measured (clean and dirty L2, see CONDITION_SUFFIX and
benchmark.py); a CPU row for its one condition.

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
from typing import Callable, Iterable, NamedTuple, Sequence

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


# Where each timing condition (benchmark.CONDITIONS) lives in a row: the
# plain fields (prepared_us, tbps, speedup, ...) hold "clean" on CUDA and the
# CPU's only condition ("cpu"); "dirty" adds "_dirty" (prepared_dirty_us,
# tbps_dirty, speedup_dirty, ...).
CONDITION_SUFFIX = {"clean": "", "cpu": "", "dirty": "_dirty"}
# Implementations timed per row, by the prefix of their time fields.
TIME_PREFIX = {"prepared": "prepared", "call": "call", "torch": "torch", "compile": "torch_compile"}
# Figures derived from each condition's times (PerformanceResult.derived).
DERIVED = ("gbps", "tbps", "ceiling_fraction", "gflops", "speedup", "call_speedup", "compile_speedup")


def time_field(implementation: str, condition: str = "clean") -> str:
    """The row field of one implementation's median under one condition."""
    return f"{TIME_PREFIX[implementation]}{CONDITION_SUFFIX[condition]}_us"


def derived_field(name: str, condition: str = "clean") -> str:
    return name + CONDITION_SUFFIX[condition]


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
    conditions: list = field(default_factory=list)  # the timing conditions measured (see CONDITION_SUFFIX)
    prepared_us: float | None = None      # prepare_op(...).run()
    call_us: float | None = None          # op(...) out of place
    torch_us: float | None = None         # torch eager (out= form where torch has one)
    torch_compile_us: float | None = None  # torch.compile of the functional form (CUDA, opt-in)
    prepared_dirty_us: float | None = None       # the same four under the dirty condition (CUDA)
    call_dirty_us: float | None = None
    torch_dirty_us: float | None = None
    torch_compile_dirty_us: float | None = None
    bytes_moved: int = 0
    flops: int = 0
    ceiling_gbps: float | None = None     # copy bandwidth measured in this run
    rel_error: float | None = None        # ||ours - ref|| / ||ref||, ref in float64
    torch_rel_error: float | None = None  # the same for torch's output
    timing: dict = field(default_factory=dict)  # {condition: {implementation: method, reps, spreads}}

    def us(self, implementation: str, condition: str = "clean") -> float | None:
        return getattr(self, time_field(implementation, condition))

    def derived(self, name: str, condition: str = "clean") -> float | None:
        """A figure of DERIVED from the times of one condition (all from
        measured medians; None where one was not measured)."""
        ours = self.us("prepared", condition)
        if name in ("gbps", "tbps", "ceiling_fraction"):
            gbps = self.bytes_moved / (ours * 1e3) if ours else None
            if gbps is None or name == "gbps":
                return gbps
            if name == "tbps":
                return gbps / 1e3
            return gbps / self.ceiling_gbps if self.ceiling_gbps else None
        if name == "gflops":
            return self.flops / (ours * 1e3) if ours else None
        if name == "speedup":  # torch time / our prepared time: > 1 means ours is faster
            return _quotient(self.us("torch", condition), ours)
        if name == "call_speedup":
            return _quotient(self.us("torch", condition), self.us("call", condition))
        if name == "compile_speedup":
            return _quotient(self.us("compile", condition), ours)
        raise KeyError(name)

    # -- the clean (CPU: the only) condition's derived columns -------------------
    @property
    def gbps(self) -> float | None:
        return self.derived("gbps")

    @property
    def tbps(self) -> float | None:
        return self.derived("tbps")

    @property
    def ceiling_fraction(self) -> float | None:
        return self.derived("ceiling_fraction")

    @property
    def gflops(self) -> float | None:
        return self.derived("gflops")

    @property
    def speedup(self) -> float | None:
        """torch time / our prepared time: > 1 means ours is faster."""
        return self.derived("speedup")

    @property
    def call_speedup(self) -> float | None:
        """torch time / our out-of-place time."""
        return self.derived("call_speedup")

    @property
    def compile_speedup(self) -> float | None:
        """torch.compile time / our prepared time: > 1 means ours is faster."""
        return self.derived("compile_speedup")

    def _timings(self) -> list:
        return [t for per_condition in self.timing.values() for t in per_condition.values()]

    @property
    def max_spread(self) -> float | None:
        """Largest (high - low) / median over this row's timings: the
        run-to-run noise (CPU: slowest vs fastest batch; CUDA: quartiles)."""
        spreads = [(t["high_us"] - t["low_us"]) / t["median_us"] for t in self._timings() if t.get("median_us")]
        return max(spreads) if spreads else None

    @property
    def background_busy(self) -> float | None:
        values = [t["background_busy"] for t in self._timings() if t.get("background_busy") is not None]
        return max(values) if values else None

    @property
    def noisy(self) -> bool:
        """Timings spread widely, or other processes loaded the CPUs meanwhile."""
        spread, busy = self.max_spread, self.background_busy
        return (spread is not None and spread > NOISY_SPREAD) or (busy is not None and busy > BUSY_LIMIT)

    def to_dict(self) -> dict:
        row = asdict(self)
        for condition in ("clean", "dirty"):
            for name in DERIVED:
                row[derived_field(name, condition)] = self.derived(name, condition)
        for name in ("max_spread", "background_busy", "noisy"):
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


def _ratio(value) -> str:
    return _num(value, ".2f") + ("x" if value is not None else "")


def _percent(value) -> str:
    return _num(None if value is None else 100 * value, ".0f")


class Column(NamedTuple):
    """A table column: `cell(row)`, or `per_condition(row, condition)` for
    one value per timing condition. `width` fits one value; `value_width`
    is what each value needs when a cell holds several."""

    header: str
    width: int
    right: bool
    cell: Callable | None = None
    per_condition: Callable | None = None
    value_width: int = 0


_COLUMNS = [
    Column("op", 10, False, lambda r: r.op),
    Column("case", 0, False, lambda r: r.case),            # width set from the cases
    Column("dtype", 8, False, lambda r: r.dtype),
    Column("variant", 0, False, lambda r: r.variant or "-"),
    Column("prep us", 10, True, per_condition=lambda r, c: _us(r.us("prepared", c)), value_width=7),
    Column("call us", 10, True, per_condition=lambda r, c: _us(r.us("call", c)), value_width=7),
    Column("torch us", 10, True, per_condition=lambda r, c: _us(r.us("torch", c)), value_width=7),
    Column("GB/s", 8, True, per_condition=lambda r, c: _num(r.derived("gbps", c), ".1f"), value_width=6),
    Column("%ceil", 6, True, per_condition=lambda r, c: _percent(r.derived("ceiling_fraction", c)), value_width=3),
    Column("GFLOP/s", 8, True, per_condition=lambda r, c: _num(r.derived("gflops", c), ".2f") if r.flops else "-",
           value_width=6),
    Column("vs torch", 9, True, per_condition=lambda r, c: _ratio(r.derived("speedup", c)), value_width=5),
]
# With --torch-compile: its time after torch's, and our ratio to it after ours to torch.
_COMPILE_COLUMNS = {
    "torch us": Column("compile us", 10, True, per_condition=lambda r, c: _us(r.us("compile", c)), value_width=7),
    "vs torch": Column("vs compile", 10, True, per_condition=lambda r, c: _ratio(r.derived("compile_speedup", c)),
                       value_width=5)}
# On a GPU: bandwidth in TB/s.
_TBPS_COLUMN = Column("TB/s", 6, True, per_condition=lambda r, c: _num(r.derived("tbps", c), ".2f"), value_width=4)
# Columns that end in a noise mark ("?": rerun before trusting the row).
_MARKED = ("vs torch", "vs compile")


class TableFormatter:
    """Fixed-width rows, so rows can be printed as soon as they are measured.
    `case_names`/`variants` size the two free-text columns. With several
    `conditions`, a time or rate cell holds one value per condition, joined
    by "/" in the order given (clean/dirty)."""

    def __init__(self, case_names: Sequence[str] = (), variants: Sequence[str] = (), with_compile=False,
                 tbps=False, conditions: Sequence[str] = ("clean",)):
        self.conditions = tuple(conditions)
        self.columns = []
        for column in _COLUMNS:
            self.columns.append(_TBPS_COLUMN if tbps and column.header == "GB/s" else column)
            if with_compile and column.header in _COMPILE_COLUMNS:
                self.columns.append(_COMPILE_COLUMNS[column.header])
        widths = {"case": max([len("case")] + [len(n) for n in case_names]),
                  "variant": max([len("variant"), 16] + [len(v) for v in variants])}
        n = len(self.conditions)
        self.widths = [widths.get(c.header, c.width if c.per_condition is None or n == 1 else
                                  max(len(c.header), n * c.value_width + n - 1 + (c.header in _MARKED)))
                       for c in self.columns]

    def _line(self, cells) -> str:
        parts = [cell.rjust(width) if column.right else cell.ljust(width)
                 for column, width, cell in zip(self.columns, self.widths, cells)]
        return "  ".join(parts).rstrip()

    def header(self) -> str:
        head = self._line([c.header for c in self.columns])
        return head + "\n" + "-" * len(head)

    def _cell(self, column: Column, r: PerformanceResult) -> str:
        if column.per_condition is None:
            return column.cell(r)
        cell = "/".join(column.per_condition(r, c) for c in self.conditions)
        if column.header in _MARKED:
            cell += "?" if r.noisy else " "
        return cell

    def row(self, r: PerformanceResult) -> str:
        if r.status not in ("ok",):
            cells = [r.op, r.case, r.dtype, r.status.upper()]
            line = self._line(cells + [""] * (len(self.columns) - len(cells)))
            return (line + "  " + r.message).rstrip()
        return self._line([self._cell(column, r) for column in self.columns])

    def table(self, results: Iterable[PerformanceResult]) -> str:
        return "\n".join([self.header()] + [self.row(r) for r in results])


def format_table(results: Sequence[PerformanceResult], with_compile=False, tbps=False,
                 conditions: Sequence[str] = ("clean",)) -> str:
    fmt = TableFormatter([r.case for r in results], [r.variant or "" for r in results], with_compile, tbps,
                         conditions)
    return fmt.table(results)


# -- summary -------------------------------------------------------------------

def _spread(values) -> dict:
    return {"min": min(values) if values else None, "median": statistics.median(values) if values else None,
            "max": max(values) if values else None}


def condition_summary(ok: Sequence[PerformanceResult], condition: str) -> dict:
    """Over the measured rows `ok`: how many have a speedup under `condition`,
    and min/median/max of each peer's speedup and of the ceiling fraction."""
    speedups = [r.derived("speedup", condition) for r in ok]
    compiled = [r.derived("compile_speedup", condition) for r in ok]
    ceiling = [r.derived("ceiling_fraction", condition) for r in ok]
    return {"measured": sum(v is not None for v in speedups),
            "speedup": _spread([v for v in speedups if v is not None]),
            "compile_speedup": _spread([v for v in compiled if v is not None]),
            "ceiling_fraction": _spread([v for v in ceiling if v is not None])}


def speedup_summary(results: Sequence[PerformanceResult]) -> dict:
    """Per op: count, and min/median/max of each peer's time / our prepared
    time (torch eager; torch.compile where measured) and of the fraction of
    the copy ceiling, over the rows measured: at the top level for the clean
    condition (CPU: its only one), under "dirty" for the dirty one where
    measured."""
    summary = {}
    for op in dict.fromkeys(r.op for r in results):
        rows = [r for r in results if r.op == op]
        ok = [r for r in rows if r.status == "ok"]
        clean = condition_summary(ok, "clean")
        summary[op] = {
            "rows": len(rows),
            "measured": clean["measured"],
            "not_ok": [f"{r.case}/{r.dtype}: {r.status}" for r in rows if r.status != "ok"],
            "min_speedup": clean["speedup"]["min"],
            "median_speedup": clean["speedup"]["median"],
            "max_speedup": clean["speedup"]["max"],
            "compile_speedup": clean["compile_speedup"],
            "ceiling_fraction": clean["ceiling_fraction"],
        }
        if any("dirty" in r.conditions for r in ok):
            summary[op]["dirty"] = condition_summary(ok, "dirty")
    return summary


# -- JSON ----------------------------------------------------------------------

def to_json(results: Sequence[PerformanceResult], meta: dict | None = None, extra: dict | None = None) -> str:
    """{"meta", "results", "summary"}, plus `extra`'s keys (e.g. "cross_check")."""
    payload = {"meta": meta or {}, "results": [r.to_dict() for r in results],
               "summary": speedup_summary(results), **(extra or {})}
    return json.dumps(payload, indent=2, default=str)


def write_json(path, results: Sequence[PerformanceResult], meta: dict | None = None,
               extra: dict | None = None) -> None:
    with open(path, "w") as f:
        f.write(to_json(results, meta, extra))
        f.write("\n")


# -- CSV -----------------------------------------------------------------------

CSV_COLUMNS = ("op", "backend", "case", "dtype", "shapes", "params", "device", "layout", "numel", "variant", "status",
               "message", "conditions", "prepared_us", "call_us", "torch_us", "torch_compile_us", "bytes_moved",
               "flops", "gbps", "tbps", "ceiling_gbps", "ceiling_fraction", "speedup", "compile_speedup",
               "prepared_dirty_us", "call_dirty_us", "torch_dirty_us", "torch_compile_dirty_us", "gbps_dirty",
               "tbps_dirty", "ceiling_fraction_dirty", "speedup_dirty", "compile_speedup_dirty", "rel_error",
               "torch_rel_error", "noisy")


def write_csv(path, results: Sequence[PerformanceResult]) -> None:
    """One row per result; shapes and params as JSON text, conditions as
    "clean dirty"; the *_dirty columns stay empty where not measured."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for result in results:
            row = result.to_dict()
            row["shapes"], row["params"] = json.dumps(row["shapes"]), json.dumps(row["params"])
            row["conditions"] = " ".join(row["conditions"])
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in CSV_COLUMNS})
