"""reduce_sum: ours vs torch.sum(src, dim, keepdim, out=) into a
preallocated out. params: dim (int, tuple, or None = every dim: a scalar),
keepdim (default False).

Bytes: src read once + out written once. FLOPs: 1 add per input element.
"""

from __future__ import annotations

import math

import torch

import operator_runtime as oprt
from operator_runtime_testing.benchmark import BenchCase

from . import OpBench


def _dim(case, ndim):
    dim = case.params.get("dim", -1)
    # torch.sum(out=) takes no dim=None: name every dim instead.
    return tuple(range(ndim)) if dim is None else dim


class ReduceSumBench(OpBench):
    op = "reduce_sum"

    def make_out(self, case, inputs):
        src = inputs[0]
        meta = torch.empty(src.shape, dtype=case.dtype, device="meta")
        shape = torch.sum(meta, _dim(case, src.dim()), keepdim=case.params.get("keepdim", False)).shape
        return torch.empty(shape, dtype=case.dtype, device=src.device)

    def prepare(self, out, inputs, case, backend):
        return oprt.prepare_reduce_sum(out, inputs[0], case.params.get("dim", -1),
                                       case.params.get("keepdim", False), backend=backend)

    def call(self, inputs, case, backend):
        return oprt.reduce_sum(inputs[0], case.params.get("dim", -1), case.params.get("keepdim", False),
                               backend=backend)

    def torch_out(self, out, inputs, case):
        src = inputs[0]
        torch.sum(src, _dim(case, src.dim()), keepdim=case.params.get("keepdim", False), out=out)

    def torch_functional(self, case):
        keepdim = case.params.get("keepdim", False)
        return lambda src: torch.sum(src, _dim(case, src.dim()), keepdim=keepdim)

    def error_scale(self, inputs, case, ref):
        # A sum of n random terms is about sqrt(n) * mean|x| in size. Where
        # the exact sum cancels to less, an error relative to it would blame
        # an accurate result for the cancellation (a 4M-element float32 sum
        # once read 2.0e-5 against torch's 8.6e-6, on the 2x-torch limit). So
        # errors count against max(|sum|, sqrt(n) * mean|x|): one element
        # missed from the sum still shows (1/sqrt(n) of the scale).
        src = inputs[0]
        if src.numel() == 0 or ref.numel() == 0:
            return ref
        terms = src.numel() // ref.numel()
        mean_abs = src.abs().sum(dtype=torch.float64).item() / src.numel()
        return ref.abs().clamp(min=math.sqrt(terms) * mean_abs)

    def flops(self, case, out, inputs):
        return inputs[0].numel()  # one add per input element

    def tiny_case(self):
        return BenchCase("tiny_4x16", ((4, 16),), torch.float32, {"dim": -1})


BENCH = ReduceSumBench()
