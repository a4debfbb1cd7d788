"""A/B of the TileLang warp_rows kernels (reduce_sum and softmax, 128-wide
rows): rows per warp 1/2/4, plain and persistent grids, float32 and bf16.
Each kernel is checked against torch on ragged shapes, then timed directly
at 262144x128 (CUDA events, 7 x 20 launches, no L2 flush), beside the nvidia
backend (nan when the library lacks it) and torch.

    python scripts/tilelang_warp_rows_ab.py compile   # here: fill $TILELANG_CACHE_DIR
    python scripts/tilelang_warp_rows_ab.py           # on the GPU, with that cache

The H200 output is docs/data/tilelang-h200-2026-12-02d-warp-rows-ab.txt.
"""
import sys, time, statistics, itertools
import torch, tilelang
from operator_runtime._internal.tilelang_backend import load_kernels
from operator_runtime._internal.tilelang_common import pass_configs
import operator_runtime as oprt

TARGET = {"kind": "cuda", "arch": "sm_90"}
COMPILE_ONLY = len(sys.argv) > 1 and sys.argv[1] == "compile"

def build(op, fac, args):
    mod = load_kernels(op); make = getattr(mod, fac)
    return tilelang.compile(make(*args), target=TARGET, execution_backend="tvm_ffi", pass_configs=pass_configs(make))

def timeit(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(reps): fn()
        b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1000 / reps)
    return statistics.median(ts)

def nvt(fn):
    try:
        return timeit(fn)
    except Exception:
        return float("nan")

jobs = []
for dt in ("float32", "bfloat16"):
    for rpw, pers in itertools.product((1, 2, 4), (False, True)):
        jobs.append(("reduce_sum", "warp_rows", (dt, dt, 4, rpw, pers)))
        jobs.append(("softmax", "warp_rows", (dt, 4, rpw, pers)))
kernels = {j: build(*j) for j in jobs}
if COMPILE_ONLY:
    print(len(kernels), "compiled"); sys.exit()
dev = "cuda"
print(f"{'op':10s} {'dtype':9s} rpw pers   us(262144x128)  GB/s   ok   | nvidia_us torch_us")
for (op, fac, args), k in kernels.items():
    dt = getattr(torch, args[0])
    ok = True
    for M, N in ((1000, 100), (777, 128), (33, 7)):
        x = torch.randn(M, N, device=dev, dtype=dt)
        if op == "reduce_sum":
            out = torch.full((M,), float("nan"), device=dev, dtype=dt); k(x, out)
            ref = x.double().sum(-1); tol = 1e-4 if dt == torch.float32 else 2e-2
            ok &= torch.allclose(out.double(), ref, rtol=tol, atol=tol * 4)
        else:
            out = torch.full((M, N), float("nan"), device=dev, dtype=dt); k(x, out)
            ref = torch.softmax(x.double(), -1); tol = 1e-5 if dt == torch.float32 else 1e-2
            ok &= torch.allclose(out.double(), ref, rtol=tol, atol=1e-6)
    M, N = 262144, 128
    x = torch.randn(M, N, device=dev, dtype=dt)
    if op == "reduce_sum":
        out = torch.empty(M, device=dev, dtype=dt)
        us = timeit(lambda: k(x, out)); nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
        nv = nvt(lambda: oprt.reduce_sum_(out, x, -1, backend="nvidia")); tt = timeit(lambda: torch.sum(x, -1, out=out))
    else:
        out = torch.empty_like(x)
        us = timeit(lambda: k(x, out)); nbytes = 2 * x.numel() * x.element_size()
        nv = nvt(lambda: oprt.softmax_(out, x, -1, backend="nvidia")); tt = timeit(lambda: torch.softmax(x, -1, out=out) if False else torch._softmax(x, -1, False))
    print(f"{op:10s} {args[0]:9s} {args[-2]:3d} {str(args[-1]):5s} {us:9.1f}  {nbytes / us / 1e3:7.0f}  {'ok' if ok else 'BAD':4s} | {nv:8.1f} {tt:8.1f}", flush=True)
