"""vector_add: ours vs torch.add(a, b, out=) into a preallocated out.

Bytes: a and b read once at their real size (a broadcast bias [N] counts N
elements, not M*N) + out written once. FLOPs: 1 add per output element.
"""

from __future__ import annotations

import torch

import operator_runtime as oprt
from operator_runtime_testing.benchmark import BenchCase

from . import OpBench


class VectorAddBench(OpBench):
    op = "vector_add"

    def make_out(self, case, inputs):
        shape = torch.broadcast_shapes(*(t.shape for t in inputs))
        return torch.empty(shape, dtype=case.dtype, device=inputs[0].device)

    def prepare(self, out, inputs, case, backend):
        return oprt.prepare_vector_add(out, *inputs, backend=backend)

    def call(self, inputs, case, backend):
        return oprt.vector_add(*inputs, backend=backend)

    def torch_out(self, out, inputs, case):
        torch.add(*inputs, out=out)

    def torch_functional(self, case):
        return torch.add

    def tiny_case(self):
        return BenchCase("tiny_16", ((16,), (16,)), torch.float32)


BENCH = VectorAddBench()
