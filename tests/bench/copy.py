"""copy: ours vs torch's Tensor.copy_ into a preallocated contiguous out.

Bytes: src read once (a transposed src counts its elements, not its
storage stride) + out written once. FLOPs: 0.
"""

from __future__ import annotations

import torch

import operator_runtime as oprt
from operator_runtime_testing.benchmark import BenchCase

from . import OpBench


class CopyBench(OpBench):
    op = "copy"

    def make_out(self, case, inputs):
        return torch.empty(inputs[0].shape, dtype=case.dtype, device=inputs[0].device)

    def prepare(self, out, inputs, case, backend):
        return oprt.prepare_copy(out, inputs[0], backend=backend)

    def call(self, inputs, case, backend):
        return oprt.copy(inputs[0], backend=backend)

    def torch_out(self, out, inputs, case):
        out.copy_(inputs[0])

    def torch_functional(self, case):
        return lambda src: src.clone(memory_format=torch.contiguous_format)

    def tiny_case(self):
        return BenchCase("tiny_16", ((16,),), torch.float32)


BENCH = CopyBench()
