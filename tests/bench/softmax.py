"""softmax: ours vs torch's softmax writing a preallocated out
(aten._softmax.out, the out= form behind torch.softmax; torch.softmax
itself has no out=). params: dim (default -1).

Bytes: src read once + out written once (the minimum; a multi-pass kernel
reads more, which shows as a lower fraction of the ceiling). FLOPs: 5 per
element: max-compare, subtract, exp (counted as 1), sum-add, scale.
"""

from __future__ import annotations

import torch

import operator_runtime as oprt
from operator_runtime_testing.benchmark import BenchCase

from . import OpBench


class SoftmaxBench(OpBench):
    op = "softmax"

    def make_out(self, case, inputs):
        return torch.empty(inputs[0].shape, dtype=case.dtype, device=inputs[0].device)

    def prepare(self, out, inputs, case, backend):
        return oprt.prepare_softmax(out, inputs[0], case.params.get("dim", -1), backend=backend)

    def call(self, inputs, case, backend):
        return oprt.softmax(inputs[0], case.params.get("dim", -1), backend=backend)

    def torch_out(self, out, inputs, case):
        torch.ops.aten._softmax.out(inputs[0], case.params.get("dim", -1), False, out=out)

    def torch_functional(self, case):
        dim = case.params.get("dim", -1)
        return lambda src: torch.softmax(src, dim)

    def tiny_case(self):
        return BenchCase("tiny_4x16", ((4, 16),), torch.float32, {"dim": -1})


BENCH = SoftmaxBench()
