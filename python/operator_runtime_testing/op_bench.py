"""The benchmark driver (operator_runtime bench), the same for every discovered op: how to build a
case's inputs, run ours (prepared and out of place) and torch's equivalent,
and count bytes/FLOPs, all from the op's description.

run_case() checks a case against a float64 reference, times it and returns
a PerformanceResult.
"""

from __future__ import annotations

from typing import Callable, Dict, Sequence

import torch

import operator_runtime as oprt
from operator_runtime import BackendUnavailableError
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing.benchmark import (BenchCase, Timing, TimingConfig, case_grid, conditions_for, measure,
                                                measure_conditions, measure_host_overhead)
from operator_runtime_testing.performance import PerformanceResult, dtype_name, min_bytes_moved, time_field

OPS = tuple(DESCRIPTIONS)

# ||ours - ref|| / ||ref|| must stay under max(this, 2 x torch's own error):
# output rounding of each dtype, with room for a different summation order.
TOLERANCES = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float64: 1e-12}


def bench_for(op: str) -> "OpBench":
    return OpBench(DESCRIPTIONS[op])


def benchmark_cases(op: str) -> list:
    """The op's benchmark shapes, one BenchCase per dtype."""
    return [case for bench in DESCRIPTIONS[op].benchmarks
            for case in case_grid(bench.name, bench.shapes, bench.dtypes, quick_dtypes=bench.quick,
                                  params=dict(bench.params), layout=bench.layout, gpu_only=bench.gpu_only)]


def make_input(shape, dtype, device, layout="contiguous") -> torch.Tensor:
    """Standard-normal data (never zeros) in the requested layout."""
    if layout == "contiguous":
        return torch.randn(shape, dtype=dtype, device=device)
    if layout == "transposed":
        if len(shape) != 2:
            raise ValueError(f"layout 'transposed' needs a 2-D shape, got {shape}")
        return torch.randn(shape[::-1], dtype=dtype, device=device).t()
    raise ValueError(f"unknown benchmark layout '{layout}'")


def rel_error(out: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor | None = None) -> float:
    """||out - ref|| / ||scale|| in float64 (scale: ref unless given, of ref's
    shape); inf if out holds NaN/inf where ref is finite."""
    out64 = out.to(torch.float64)
    scale = ref if scale is None else scale
    finite = torch.isfinite(ref)
    if not torch.equal(torch.isfinite(out64), finite):
        return float("inf")
    if not finite.all():  # compare where the reference is finite (masking copies, so only then)
        out64, ref, scale = out64[finite], ref[finite], scale[finite]
    diff = (out64 - ref).norm().item()
    norm = scale.norm().item()
    return diff / norm if norm > 0 else diff


class OpBench:
    """One op's benchmark hooks, from its description. `inputs` is the
    tuple of input tensors in the op's argument order."""

    def __init__(self, description):
        self.description = description
        self.op = description.name

    def make_inputs(self, case: BenchCase, device) -> tuple:
        layouts = [case.layout] + ["contiguous"] * (len(case.shapes) - 1)
        return tuple(make_input(s, case.dtype, device, l) for s, l in zip(case.shapes, layouts))

    def _params(self, case) -> tuple:
        return self.description.bound_params(case.params)

    def make_out(self, case: BenchCase, inputs: tuple) -> torch.Tensor:
        plan = self.description.plan(None, *inputs, *self._params(case))
        dtype = plan.out_dtype or case.dtype
        return torch.empty(plan.out_shape, dtype=dtype, device=inputs[0].device)

    def prepare(self, out, inputs, case, backend):
        return getattr(oprt, f"prepare_{self.op}")(out, *inputs, **case.params, backend=backend)

    def call(self, inputs, case, backend):
        return getattr(oprt, self.op)(*inputs, **case.params, backend=backend)

    def torch_out(self, out, inputs, case) -> None:
        self.description.torch_out(out, *inputs, **case.params)

    def torch_functional(self, case):
        reference, params = self.description.reference, dict(case.params)
        return lambda *inputs: reference(*inputs, **params)

    def flops(self, case: BenchCase, out, inputs) -> int:
        count = out.numel() if self.description.flops_count == "out" else inputs[0].numel()
        return self.description.flops_per_element * count

    def tiny_case(self) -> BenchCase:
        """The host-overhead case: the op's tiny benchmark in float32."""
        bench = self.description.tiny or self.description.benchmarks[0]
        return BenchCase(bench.name, tuple(tuple(s) for s in bench.shapes), torch.float32, dict(bench.params))

    def reference(self, inputs, case) -> torch.Tensor:
        return self.torch_functional(case)(*[t.to(torch.float64) for t in inputs])

    def error_scale(self, inputs, case, ref: torch.Tensor) -> torch.Tensor:
        """What errors are measured against (float64, ref's shape): the
        reference itself unless the description says otherwise."""
        scale = self.description.error_scale
        return ref if scale is None else scale(inputs, ref, **case.params)

    def probe(self, backend, device) -> str | None:
        """None if ours runs this op on `backend`, else why not."""
        case = self.tiny_case()
        inputs = self.make_inputs(case, device)
        try:
            self.prepare(self.make_out(case, inputs), inputs, case, backend).run()
        except BackendUnavailableError as error:
            return error.reason
        return None


def make_result(bench, case, backend, device, **kw) -> PerformanceResult:
    return PerformanceResult(op=bench.op, backend=backend, case=case.name, dtype=dtype_name(case.dtype),
                             shapes=[list(s) for s in case.shapes], params=dict(case.params),
                             device=str(device), layout=case.layout, numel=case.numel, **kw)


def run_case(bench: OpBench, case: BenchCase, backend: str, device, ceiling_gbps: float | None,
             config: TimingConfig, torch_compile: bool = False, conditions: Sequence[str] | None = None,
             measure_fn: Callable = measure) -> PerformanceResult:
    """Check ours (both paths) against float64, then time ours and torch
    under each of `conditions` (default: every one `device` has)."""
    conditions = conditions or conditions_for(device)
    result = make_result(bench, case, backend, device, ceiling_gbps=ceiling_gbps)
    inputs = bench.make_inputs(case, device)
    out = bench.make_out(case, inputs)
    out.fill_(float("nan"))  # poison: an unwritten element fails the check
    try:
        prepared = bench.prepare(out, inputs, case, backend)
        result.variant = prepared.variant
        prepared.run()
        call_out = bench.call(inputs, case, backend)
    except BackendUnavailableError as error:
        result.status, result.message = "unavailable", error.reason
        return result
    torch_out = bench.make_out(case, inputs)
    bench.torch_out(torch_out, inputs, case)
    ref = bench.reference(inputs, case)
    scale = bench.error_scale(inputs, case, ref)
    result.rel_error = max(rel_error(out, ref, scale), rel_error(call_out, ref, scale))
    result.torch_rel_error = rel_error(torch_out, ref, scale)
    del ref, call_out, scale
    limit = max(TOLERANCES[case.dtype], 2 * result.torch_rel_error)
    if not result.rel_error <= limit:  # also catches NaN
        result.status = "wrong"
        result.message = f"rel error {result.rel_error:.3g} > {limit:.3g} (torch: {result.torch_rel_error:.3g})"
        return result
    result.bytes_moved = min_bytes_moved(out, inputs)
    result.flops = bench.flops(case, out, inputs)

    fns = {"prepared": prepared.run,
           "call": lambda: bench.call(inputs, case, backend),
           "torch": lambda: bench.torch_out(torch_out, inputs, case)}
    if torch_compile:
        try:
            # Every case compiles afresh: dynamo keeps one cache per function,
            # and past its recompile limit (8) it silently runs the function
            # eagerly, which made later cases' "compile" column torch eager.
            torch._dynamo.reset()
            compiled = torch.compile(bench.torch_functional(case), dynamic=False)
            compiled(*inputs)
            fns["compile"] = lambda: compiled(*inputs)
        except Exception as error:  # optional column: report, keep the rest of the row
            result.message = f"torch.compile failed: {type(error).__name__}: {error}"[:200]
    record_timings(result, measure_conditions(fns, device, config, conditions, measure_fn))
    prepared.destroy()
    return result


def record_timings(result: PerformanceResult, timings: Dict[str, Dict[str, Timing]]) -> None:
    """Put {condition: {implementation: Timing}} into the row's time fields."""
    result.conditions = list(timings)
    result.timing = {condition: {name: t.to_dict() for name, t in per_name.items()}
                     for condition, per_name in timings.items()}
    for condition, per_name in timings.items():
        for name, t in per_name.items():
            setattr(result, time_field(name, condition), t.median_us)
    if any(t.host_bound for per_name in timings.values() for t in per_name.values()):
        result.message = "host-bound: some device times may include launch gaps"


def host_overhead(bench: OpBench, backend: str, device, calls: int = 2000) -> dict:
    """µs/call of back-to-back calls on a tiny tensor: ours out of place
    ("call") vs torch eager's functional call ("torch_call"), and ours
    prepared ("prepared") vs torch's out= form ("torch"); plus the two
    ratios (ours / torch: <= 1 means ours costs no more)."""
    case = bench.tiny_case()
    inputs = bench.make_inputs(case, device)
    out = bench.make_out(case, inputs)
    torch_out = bench.make_out(case, inputs)
    prepared = bench.prepare(out, inputs, case, backend)
    functional = bench.torch_functional(case)
    fns = {"call": lambda: bench.call(inputs, case, backend),
           "torch_call": lambda: functional(*inputs),
           "prepared": prepared.run,
           "torch": lambda: bench.torch_out(torch_out, inputs, case)}
    times = measure_host_overhead(fns, device, calls=calls)
    prepared.destroy()
    times["call_ratio"] = times["call"] / times["torch_call"] if times["torch_call"] else None
    times["prepared_ratio"] = times["prepared"] / times["torch"] if times["torch"] else None
    times["shape"] = [list(s) for s in case.shapes]
    times["dtype"] = dtype_name(case.dtype)
    return times
