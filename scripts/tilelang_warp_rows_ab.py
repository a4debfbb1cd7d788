"""A/B of TileLang row kernels, timed directly beside the nvidia backend
and torch, each first checked against torch on ragged shapes.

  warp_rows   (default) reduce_sum and softmax, 128-wide rows: rows per warp
              1/2/4, plain and persistent grids, float32 and bf16; timed at
              262144x128
  block_rows  softmax block_rows (threads, per_thread) classes for 8192- and
              16384-wide rows, float32 and bf16; timed at 8192x8192 and
              16384x16384 (H200: docs/data/tilelang-h200-2026-12-02f-block-rows-ab.txt)
  columns     reduce_sum columns (dim 0) with 4 or 8 rows of loads in flight,
              at 5..66 segments, float32 and bf16; timed at 8192x8192
              (H200: docs/data/tilelang-h200-2026-12-02f-columns-ab.txt);
              then softmax over dim 0 (column_stats + column_apply) at
              5..66 segments (H200: docs/data/tilelang-h200-2026-12-02g-columns-ab.txt),
              and with column_combine between the passes ("c" rows)
  rows_split  reduce_sum rows with 2, 4 or 8 vectors in flight per thread,
              at 132..1056 segments, float32 and bf16, both passes timed (and
              the first alone); timed at 64M summed to a scalar and at 4 x 4M
  split       softmax split_stats + split_apply (long rows) with 2 or 4
              vectors in flight per thread, at 33..528 segments per row,
              float32 and bf16; timed at 4 x 4M

Timing: the benchmark harness (operator_runtime_testing.benchmark.measure).

    python scripts/tilelang_warp_rows_ab.py [block_rows|columns|split] compile   # here: fill $TILELANG_CACHE_DIR
    python scripts/tilelang_warp_rows_ab.py [block_rows|columns|split]           # on the GPU, with that cache

The H200 output of warp_rows is docs/data/tilelang-h200-2026-12-02d-warp-rows-ab.txt.
"""
import sys, itertools
import torch, tilelang
from operator_runtime._internal.tilelang_backend import load_kernels
from operator_runtime._internal.tilelang_common import pass_configs
import operator_runtime as oprt
from operator_runtime_testing.benchmark import TimingConfig, measure

TARGET = {"kind": "cuda", "arch": "sm_90"}
FAMILY = next((f for f in ("block_rows", "columns", "rows_split", "split") if f in sys.argv[1:]), "warp_rows")
COMPILE_ONLY = "compile" in sys.argv[1:]

def build(op, fac, args):
    mod = load_kernels(op); make = getattr(mod, fac)
    return tilelang.compile(make(*args), target=TARGET, execution_backend="tvm_ffi", pass_configs=pass_configs(make))

def timeit(fn):
    """Median device time per call: the benchmark harness (L2 flushed before each call)."""
    return measure({"call": fn}, "cuda", TimingConfig(min_time=0.02, max_reps=50))["call"].median_us

def nvt(fn):
    try:
        return timeit(fn)
    except Exception:
        return float("nan")

jobs = []  # (op, factory, args); the timed shape comes from timed_shape()
if FAMILY == "warp_rows":
    for dt in ("float32", "bfloat16"):
        for rpw, pers in itertools.product((1, 2, 4), (False, True)):
            jobs.append(("reduce_sum", "warp_rows", (dt, dt, 4, rpw, pers)))
            jobs.append(("softmax", "warp_rows", (dt, 4, rpw, pers)))
elif FAMILY == "block_rows":
    for dt in ("float32", "bfloat16"):
        vec = 16 // getattr(torch, dt).itemsize
        for threads, per_thread in ((512, 16), (256, 32), (1024, 8), (1024, 16), (512, 32)):
            jobs.append(("softmax", "block_rows", (dt, threads, per_thread, vec)))
elif FAMILY == "rows_split":
    for dt in ("float32", "bfloat16"):
        vec = 16 // getattr(torch, dt).itemsize
        for unroll in (2, 4, 8):
            jobs.append(("reduce_sum", "rows", (dt, "float32", vec, unroll)))
        jobs.append(("reduce_sum", "rows", ("float32", dt, 1)))  # the second pass
elif FAMILY == "split":
    for dt in ("float32", "bfloat16"):
        vec = 16 // getattr(torch, dt).itemsize
        for unroll in (2, 4):
            jobs.append(("softmax", "split_stats", (dt, vec, unroll)))
            jobs.append(("softmax", "split_apply", (dt, vec, unroll)))
else:
    for dt in ("float32", "bfloat16"):
        vec = 16 // getattr(torch, dt).itemsize
        for unroll in (4, 8):
            jobs.append(("reduce_sum", "columns", (dt, "float32", vec, unroll)))
        jobs.append(("reduce_sum", "columns", ("float32", dt, 1)))  # the second pass
        jobs.append(("softmax", "column_stats", (dt, vec)))
        jobs.append(("softmax", "column_apply", (dt, vec)))
        jobs.append(("softmax", "column_apply", (dt, vec, 4, True)))  # after column_combine
    jobs.append(("softmax", "column_combine", ()))


def two_pass(stats_k, apply_k, x, out, ref, stats, label, nv, tt):
    """Checks, then times, a softmax as a stats launch and an apply launch; prints one row."""
    out.fill_(float("nan"))
    stats_k(x, stats); apply_k(x, stats, out)
    ok = torch.allclose(out.double(), ref, rtol=1e-2 if x.dtype != torch.float32 else 1e-5, atol=1e-9)
    us = timeit(lambda: (stats_k(x, stats), apply_k(x, stats, out)))
    print(f"{label} {us:8.1f} {2 * x.numel() * x.element_size() / us / 1e3:6.0f}  "
          f"{'ok' if ok else 'BAD':4s} | {nv:8.1f} {tt:8.1f}", flush=True)


def run_softmax_columns(kernels):
    """Softmax over dim 0 of 8192 x 8192 (stats pass, then apply), at several
    S around the planner's (5 float32, 9 bf16); then with column_combine
    between them (apply reads one merged pair per column)."""
    print(f"{'dtype':9s} {'S':>3s} {'us':>8s} {'GB/s':>6s}  ok   | nvidia_us torch_us")
    combine = kernels[("softmax", "column_combine", ())]
    for dt_name in ("float32", "bfloat16"):
        dt = getattr(torch, dt_name)
        vec = 16 // dt.itemsize
        stats_k = kernels[("softmax", "column_stats", (dt_name, vec))]
        apply_k = kernels[("softmax", "column_apply", (dt_name, vec))]
        x = torch.randn(1, 8192, 8192, device="cuda", dtype=dt)
        ref = torch.softmax(x.double(), 1)
        out = torch.empty_like(x)
        nv = nvt(lambda: oprt.softmax_(out[0], x[0], 0, backend="nvidia"))
        tt = timeit(lambda: torch._softmax(x[0], 0, False))
        for S in (5, 9, 17, 33, 66):
            two_pass(stats_k, apply_k, x, out, ref, torch.empty(2, 1, S, 8192, device="cuda"),
                     f"{dt_name:9s} {S:3d}", nv, tt)
        merged_k = kernels[("softmax", "column_apply", (dt_name, vec, 4, True))]
        for S in (5, 9, 17, 33, 66, 132):
            two_pass(lambda x, st: (stats_k(x, st), combine(st)), merged_k, x, out, ref,
                     torch.empty(2, 1, S, 8192, device="cuda"), f"{dt_name:9s} {S:3d}c", nv, tt)


def run_split(kernels):
    """Softmax of 4 rows of 4M elements (stats pass, then apply) at several S
    around the planner's (128: a segment per 32768 elements)."""
    print(f"{'dtype':9s} {'unroll':6s} {'S':>4s} {'us':>8s} {'GB/s':>6s}  ok   | nvidia_us torch_us")
    M, N = 4, 4 * 1024 * 1024
    for dt_name in ("float32", "bfloat16"):
        dt = getattr(torch, dt_name)
        x = torch.randn(M, N, device="cuda", dtype=dt)
        ref = torch.softmax(x.double(), -1)
        out = torch.empty_like(x)
        nv = nvt(lambda: oprt.softmax_(out, x, -1, backend="nvidia"))
        tt = timeit(lambda: torch._softmax(x, -1, False))
        for unroll in (2, 4):
            vec = 16 // dt.itemsize
            stats_k = kernels[("softmax", "split_stats", (dt_name, vec, unroll))]
            apply_k = kernels[("softmax", "split_apply", (dt_name, vec, unroll))]
            for S in (33, 66, 99, 128, 132, 198, 264, 528):
                two_pass(stats_k, apply_k, x, out, ref, torch.empty(2, M, S, device="cuda"),
                         f"{dt_name:9s} {unroll:<6d} {S:4d}", nv, tt)


def run_columns(kernels):
    """Sum over dim 0 of 8192 x 8192 in two passes (S segments of partials,
    then their sum), at several S around the planner's (9 float32, 17 bf16)."""
    print(f"{'dtype':9s} {'unroll':6s} {'S':>3s} {'us':>8s} {'GB/s':>6s}  ok   | nvidia_us torch_us")
    for dt_name in ("float32", "bfloat16"):
        dt = getattr(torch, dt_name)
        second = kernels[("reduce_sum", "columns", ("float32", dt_name, 1))]
        x = torch.randn(1, 8192, 8192, device="cuda", dtype=dt)
        ref = x.double().sum(1)
        out = torch.empty(1, 1, 8192, device="cuda", dtype=dt)
        nv = nvt(lambda: oprt.reduce_sum_(out[0, 0], x[0], 0, backend="nvidia"))
        tt = timeit(lambda: torch.sum(x[0], 0, out=out[0, 0]))
        for (op, fac, args), k in kernels.items():
            if fac != "columns" or len(args) != 4 or args[0] != dt_name:
                continue
            for S in (5, 9, 17, 33, 66):
                partials = torch.full((1, S, 8192), float("nan"), device="cuda")
                out.fill_(float("nan"))
                k(x, partials); second(partials, out)
                ok = torch.allclose(out.double(), ref, rtol=1e-2, atol=5e-1)
                us = timeit(lambda: (k(x, partials), second(partials, out)))
                print(f"{dt_name:9s} {args[3]:<6d} {S:3d} {us:8.1f} {x.numel() * x.element_size() / us / 1e3:6.0f}  "
                      f"{'ok' if ok else 'BAD':4s} | {nv:8.1f} {tt:8.1f}", flush=True)


def run_rows_split(kernels):
    """Sums of 64M elements to a scalar and of 4 rows of 4M, in two passes
    (S segments per row of float32 partials, then their sum), at several S
    around the planner's (528 and 132); "1st" = the first pass alone
    (H200: docs/data/tilelang-h200-2026-12-03f-rows-split-ab.txt)."""
    print(f"{'case':10s} {'dtype':9s} {'unroll':6s} {'S':>4s} {'us':>8s} {'1st_us':>8s} {'GB/s':>6s}  ok   | nvidia_us torch_us")
    for case, (M, N) in (("scalar_64M", (1, 64 * 2**20)), ("long_4x4M", (4, 4 * 2**20))):
        for dt_name in ("float32", "bfloat16"):
            dt = getattr(torch, dt_name)
            second = kernels[("reduce_sum", "rows", ("float32", dt_name, 1))]
            x = torch.randn(M, N, device="cuda", dtype=dt)
            ref = x.double().sum(1, keepdim=True)
            out = torch.empty(M, 1, device="cuda", dtype=dt)
            if M == 1:
                nv = nvt(lambda: oprt.reduce_sum_(out[0, 0], x[0], None, backend="nvidia"))
                tt = timeit(lambda: torch.sum(x))
            else:
                nv = nvt(lambda: oprt.reduce_sum_(out[:, 0], x, -1, backend="nvidia"))
                tt = timeit(lambda: torch.sum(x, -1, out=out[:, 0]))
            for (op, fac, args), k in kernels.items():
                if fac != "rows" or len(args) != 4 or args[0] != dt_name:
                    continue
                for S in ((132, 264, 528, 1056) if M == 1 else (33, 66, 132, 264)):
                    partials = torch.full((M, S), float("nan"), device="cuda")
                    out.fill_(float("nan"))
                    k(x, partials); second(partials, out)
                    ok = torch.allclose(out.double(), ref, rtol=1e-2, atol=5.0)
                    us = timeit(lambda: (k(x, partials), second(partials, out)))
                    first = timeit(lambda: k(x, partials))
                    print(f"{case:10s} {dt_name:9s} {args[3]:<6d} {S:4d} {us:8.1f} {first:8.1f} "
                          f"{x.numel() * x.element_size() / us / 1e3:6.0f}  {'ok' if ok else 'BAD':4s} | {nv:8.1f} {tt:8.1f}",
                          flush=True)


def timed_shape(job):
    if job[1] == "warp_rows":
        return 262144, 128
    n = job[2][1] * job[2][2]
    return n, n  # 8192 x 8192 or 16384 x 16384


def ragged_shapes(job):
    if job[1] == "warp_rows":
        return ((1000, 100), (777, 128), (33, 7))
    n, vec = job[2][1] * job[2][2], job[2][3]
    return ((37, n), (5, n - vec), (3, n // 2 + vec))


kernels = {j: build(*j) for j in jobs}
if COMPILE_ONLY:
    print(len(kernels), "compiled"); sys.exit()
if FAMILY == "columns":
    run_columns(kernels); run_softmax_columns(kernels); sys.exit()
if FAMILY == "split":
    run_split(kernels); sys.exit()
if FAMILY == "rows_split":
    run_rows_split(kernels); sys.exit()
dev = "cuda"
print(f"{'op':10s} {'dtype':9s} args                 shape          us   GB/s   ok   | nvidia_us torch_us")
for (op, fac, args), k in kernels.items():
    dt = getattr(torch, args[0])
    ok = True
    for M, N in ragged_shapes((op, fac, args)):
        x = torch.randn(M, N, device=dev, dtype=dt)
        if op == "reduce_sum":
            out = torch.full((M,), float("nan"), device=dev, dtype=dt); k(x, out)
            ref = x.double().sum(-1); tol = 1e-4 if dt == torch.float32 else 2e-2
            ok &= torch.allclose(out.double(), ref, rtol=tol, atol=tol * 4)
        else:
            out = torch.full((M, N), float("nan"), device=dev, dtype=dt); k(x, out)
            ref = torch.softmax(x.double(), -1); tol = 1e-5 if dt == torch.float32 else 1e-2
            ok &= torch.allclose(out.double(), ref, rtol=tol, atol=1e-6)
    M, N = timed_shape((op, fac, args))
    x = torch.randn(M, N, device=dev, dtype=dt)
    if op == "reduce_sum":
        out = torch.empty(M, device=dev, dtype=dt)
        us = timeit(lambda: k(x, out)); nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        nv = nvt(lambda: oprt.reduce_sum_(out, x, -1, backend="nvidia")); tt = timeit(lambda: torch.sum(x, -1, out=out))
    else:
        out = torch.empty_like(x)
        us = timeit(lambda: k(x, out)); nbytes = 2 * x.numel() * x.element_size()
        nv = nvt(lambda: oprt.softmax_(out, x, -1, backend="nvidia")); tt = timeit(lambda: torch.softmax(x, -1, out=out) if False else torch._softmax(x, -1, False))
    print(f"{op:10s} {args[0]:9s} {str(args[1:]):20s} {M}x{N:<8d} {us:9.1f}  {nbytes / us / 1e3:7.0f}  "
          f"{'ok' if ok else 'BAD':4s} | {nv:8.1f} {tt:8.1f}", flush=True)
