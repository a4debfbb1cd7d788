"""Large-shape benchmark of the TileLang backend against torch (and the
nvidia backend when it is available), on one GPU:

    python -m operator_runtime._internal.tilelang_bench [--quick] [--op OP...] [--case PREFIX...]

Prints one row per (op, shape, dtype): the variant chosen, first-call time
(plan + kernel compile or disk-cache load), steady-state time (median of
CUDA-event timed runs by operator_runtime_testing.benchmark.measure, L2
flushed before each run), effective GB/s, and the
ratio to torch and nvidia; last, the lowest ratios against issue 4's targets.
"""

from __future__ import annotations

import argparse
import time

import torch

import operator_runtime as oprt
from operator_runtime_testing.benchmark import TimingConfig, measure

M = 2**20
F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def cases(quick: bool):
    rows = [
        ("copy", "64M", (64 * M,), {}, "contiguous"),
        ("copy", "transpose_8192x8192", (8192, 8192), {}, "transposed"),
        ("vector_add", "64M", (64 * M,), {}, "contiguous"),
        ("vector_add", "bias_16384x4096", (16384, 4096), {}, "bias"),
        ("reduce_sum", "rows_262144x128", (262144, 128), {"dim": -1}, "contiguous"),
        ("reduce_sum", "medium_8192x8192", (8192, 8192), {"dim": -1}, "contiguous"),
        ("reduce_sum", "long_4x4M", (4, 4 * M), {"dim": -1}, "contiguous"),
        ("reduce_sum", "dim0_8192x8192", (8192, 8192), {"dim": 0}, "contiguous"),
        ("reduce_sum", "scalar_64M", (64 * M,), {"dim": None}, "contiguous"),
        ("softmax", "rows_262144x128", (262144, 128), {"dim": -1}, "contiguous"),
        ("softmax", "medium_8192x8192", (8192, 8192), {"dim": -1}, "contiguous"),
        ("softmax", "large_16384x16384", (16384, 16384), {"dim": -1}, "contiguous"),
        ("softmax", "long_4x4M", (4, 4 * M), {"dim": -1}, "contiguous"),
        ("softmax", "long_16x4M", (16, 4 * M), {"dim": -1}, "contiguous"),
        ("softmax", "odd_16384x12289", (16384, 12289), {"dim": -1}, "contiguous"),
        ("softmax", "dim0_8192x8192", (8192, 8192), {"dim": 0}, "contiguous"),
        ("softmax", "vocab_4096x151936", (4096, 151936), {"dim": -1}, "contiguous"),
    ]
    dtypes = (F32, BF16) if not quick else (F32,)
    for op, name, shape, params, layout in rows:
        for dtype in dtypes:
            yield op, name, shape, params, layout, dtype


def make_inputs(op, shape, layout, dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape, device="cuda", generator=g, dtype=torch.float32).to(dtype)
    if layout == "transposed":
        x = x.t()
    if op == "vector_add":
        y = torch.randn(shape[-1:] if layout == "bias" else shape, device="cuda", generator=g).to(dtype)
        return [x, y]
    return [x]


def torch_call(op, inputs, params):
    if op == "copy":
        return lambda out: out.copy_(inputs[0])
    if op == "vector_add":
        return lambda out: torch.add(inputs[0], inputs[1], out=out)
    if op == "reduce_sum":
        dim = params["dim"]
        if dim is None:
            return lambda out: torch.sum(inputs[0])
        return lambda out: torch.sum(inputs[0], dim, out=out)
    return lambda out: torch.softmax(inputs[0], params["dim"])


def time_it(fn):
    """Median device time per call, by the benchmark harness (L2 flushed
    before each call; host enqueue time kept out of the interval)."""
    return measure({"call": fn}, "cuda", TimingConfig(min_time=0.05, max_reps=100))["call"].median_us


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--op", nargs="*", help="only these ops")
    parser.add_argument("--case", nargs="*", help="only cases whose name starts with one of these")
    args = parser.parse_args(argv)
    backends = ["tilelang"] + (["nvidia"] if "nvidia" in oprt.available_backends() else [])
    print(f"device {torch.cuda.get_device_name()}, backends {backends}")
    header = (f"{'op':10s} {'case':22s} {'dtype':9s} {'variant':28s} {'first_ms':>9s} {'us':>9s} {'GB/s':>7s} "
              f"{'torch_us':>9s} {'vs_torch':>8s} {'nvidia_us':>9s} {'vs_nv':>6s}")
    print(header)
    ratios = []  # (op, case, dtype, vs torch, vs nvidia)
    for op, name, shape, params, layout, dtype in cases(args.quick):
        if (args.op and op not in args.op) or (args.case and not name.startswith(tuple(args.case))):
            continue
        inputs = make_inputs(op, shape, layout, dtype)
        if op in ("copy", "vector_add", "softmax"):
            out_shape = torch.broadcast_shapes(*[t.shape for t in inputs])
        else:
            out_shape = inputs[0].sum(params["dim"]).shape if params["dim"] is not None else ()
        out = torch.empty(out_shape, dtype=dtype, device="cuda")
        prepare = getattr(oprt, f"prepare_{op}")
        torch.cuda.synchronize()
        start = time.perf_counter()
        prepared = prepare(out, *inputs, **params, backend="tilelang")
        prepared.run()
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - start) * 1e3
        ours = time_it(prepared.run)
        nbytes = sum(t.numel() * t.element_size() for t in inputs) + out.numel() * out.element_size()
        reference = torch.empty_like(out)
        theirs = time_it(lambda: torch_call(op, inputs, params)(reference))
        nv = float("nan")
        if "nvidia" in backends:
            try:
                nv_prepared = prepare(torch.empty_like(out), *inputs, **params, backend="nvidia")
                nv = time_it(nv_prepared.run)
            except Exception as error:  # report, keep going
                print(f"  nvidia failed: {error}")
        print(f"{op:10s} {name:22s} {str(dtype)[6:]:9s} {prepared.variant:28s} {first_ms:9.1f} {ours:9.1f} "
              f"{nbytes / ours / 1e3:7.0f} {theirs:9.1f} {theirs / ours:8.2f} {nv:9.1f} {nv / ours:6.2f}", flush=True)
        ratios.append((op, name, str(dtype)[6:], theirs / ours, nv / ours))
        prepared.destroy()
        del inputs, out, reference
    print_targets(ratios)


def print_targets(ratios):
    """Issue 4's speed targets against this run: every case at least 0.90x
    of nvidia, reduce_sum and softmax at least torch's speed."""
    def lowest(rows, index):
        rows = [r for r in rows if r[index] == r[index]]  # nvidia may be nan (not built)
        return min(rows, key=lambda r: r[index]) if rows else None

    nv = lowest(ratios, 4)
    torch_rows = lowest([r for r in ratios if r[0] in ("reduce_sum", "softmax")], 3)
    if nv:
        print(f"lowest vs nvidia: {nv[4]:.3f}x ({' '.join(nv[:3])}); target >= 0.90: {'met' if nv[4] >= 0.9 else 'MISSED'}")
    else:
        print("lowest vs nvidia: no nvidia timings in this run")
    if torch_rows:
        print(f"lowest vs torch (reduce_sum, softmax): {torch_rows[3]:.3f}x ({' '.join(torch_rows[:3])}); "
              f"target >= 1.00: {'met' if torch_rows[3] >= 1.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
