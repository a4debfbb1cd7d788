#!/usr/bin/env python
"""Host overhead per call, ours vs torch eager, on a tiny tensor.

  python scripts/host_overhead.py [--device cpu|cuda] [--backend NAME] [--calls 1000] [--threads 1] [--parts]

Times N back-to-back calls (median of 7 rounds, after warm-up; synchronized
before and after on CUDA) of, per op: ours out of place vs torch's
functional call, ours op_(out, ...) vs torch's out= call, and ours prepared
run(). It uses only the public API, so the same file measures any
checkout of the package. --parts adds vector_add's out-of-place call beside
its pieces; it reads torch's stream / device entry points from the
package's internals. Targets: op() <= 1.3x torch, prepared <= 1.0x torch
out=.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch

import operator_runtime as oprt


def per_call_us(fn, calls: int, sync) -> float:
    for _ in range(100):
        fn()
    samples = []
    gc.disable()
    try:
        for _ in range(7):
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            samples.append((time.perf_counter() - start) / calls * 1e6)
    finally:
        gc.enable()
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--backend", default=None, help="default: the device's default backend")
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (tiny tensors: 1)")
    p.add_argument("--parts", action="store_true",
                   help="also time the pieces of vector_add's out-of-place call (where its overhead goes)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device, b = torch.device(args.device), args.backend
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    x, y, m = (torch.randn(16, device=device), torch.randn(16, device=device), torch.randn(4, 16, device=device))
    o16, o4, o4x16 = torch.empty(16, device=device), torch.empty(4, device=device), torch.empty(4, 16, device=device)
    # op: (ours(), torch(), ours_(out), torch out=, prepared)
    ops = {
        "copy": (lambda: oprt.copy(x, backend=b), lambda: x.clone(),
                 lambda: oprt.copy_(o16, x, backend=b), lambda: o16.copy_(x),
                 oprt.prepare_copy(o16, x, backend=b)),
        "vector_add": (lambda: oprt.vector_add(x, y, backend=b), lambda: torch.add(x, y),
                       lambda: oprt.vector_add_(o16, x, y, backend=b), lambda: torch.add(x, y, out=o16),
                       oprt.prepare_vector_add(o16, x, y, backend=b)),
        "reduce_sum": (lambda: oprt.reduce_sum(m, -1, backend=b), lambda: torch.sum(m, -1),
                       lambda: oprt.reduce_sum_(o4, m, -1, backend=b), lambda: torch.sum(m, -1, out=o4),
                       oprt.prepare_reduce_sum(o4, m, -1, backend=b)),
        "softmax": (lambda: oprt.softmax(m, -1, backend=b), lambda: torch.softmax(m, -1),
                    lambda: oprt.softmax_(o4x16, m, -1, backend=b), lambda: torch.softmax(m, -1, out=o4x16),
                    oprt.prepare_softmax(o4x16, m, -1, backend=b)),
    }
    print(f"us/call, {args.calls} back-to-back calls, median of 7 rounds; device {device}, backend "
          f"{b or 'default'}, torch {torch.__version__}")
    print(f"{'op':<11}{'op()':>8}{'torch':>8}{'ratio':>7}{'op_()':>9}{'out=':>8}{'ratio':>7}"
          f"{'prepared':>10}{'vs out=':>9}")
    for name, (ours, theirs, ours_, theirs_, prepared) in ops.items():
        t = [per_call_us(f, args.calls, sync) for f in (ours, theirs, ours_, theirs_, prepared.run)]
        print(f"{name:<11}{t[0]:>8.2f}{t[1]:>8.2f}{t[0] / t[1]:>6.2f}x{t[2]:>9.2f}{t[3]:>8.2f}{t[2] / t[3]:>6.2f}x"
              f"{t[4]:>10.2f}{t[4] / t[3]:>8.2f}x")
    if args.parts:
        print_parts(x, y, o16, b, args.calls, sync)


def print_parts(x, y, out, backend, calls: int, sync) -> None:
    """vector_add's out-of-place call next to what it is made of: the
    signature key (built here in Python; fast_call.c builds the same tuple),
    the new output, torch's current stream and device, and the prepared
    launch (the C entry point alone)."""
    from operator_runtime._internal.cuda import CUDA_GET_DEVICE, CUDA_RAW_STREAM

    index = x.device.index if x.device.type == "cuda" else None
    prepared = oprt.prepare_vector_add(out, x, y, backend=backend)
    parts = {
        "op() (all of it)": lambda: oprt.vector_add(x, y, backend=backend),
        "torch.add": lambda: torch.add(x, y),
        "key: 2 x (dtype, shape, stride(), device)": lambda: (x.dtype, x.shape, x.stride(), x.device, y.dtype,
                                                             y.shape, y.stride(), y.device),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "x.data_ptr() x 3": lambda: (x.data_ptr(), y.data_ptr(), out.data_ptr()),
        "prepared run()": prepared.run,
    }
    if index is not None and CUDA_RAW_STREAM is not None and CUDA_GET_DEVICE is not None:
        parts["current raw stream + device"] = lambda: (CUDA_RAW_STREAM(index), CUDA_GET_DEVICE())
    print("\nvector_add op() and its pieces (us/call, same timing)")
    for name, fn in parts.items():
        print(f"  {name:<44}{per_call_us(fn, calls, sync):>8.2f}")


if __name__ == "__main__":
    main()
