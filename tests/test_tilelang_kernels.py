"""The TileLang kernel files: every variant of every op with a kernel file
lowers (a quick sample here; CI compiles all of them for sm_90 with
tilelang_compile), and the two teaching forms of copy (eager T.empty, lazy
out_idx) compile and, on a GPU, run."""

from __future__ import annotations


import pytest
import torch

pytest.importorskip("tilelang")
import tilelang  # noqa: E402

from cuda_helpers import NEEDS_NVCC  # noqa: E402
from operator_runtime._internal.tilelang_elementwise import COPY, contiguous  # noqa: E402
from operator_runtime._internal.tilelang_kernels import discovered_ops, load_kernels  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90"}
GPU = torch.cuda.is_available()


@pytest.mark.parametrize("op", discovered_ops())
def test_every_variant_lowers_to_tir(op):
    """Tracing every variant builds a PrimFunc (compiling them all is CI's job)."""
    for name, factory, args in load_kernels(op).variants():
        prim_func = factory(*args)
        assert prim_func.params, name


@NEEDS_NVCC
def test_lazy_out_idx_form():
    kernel = tilelang.compile(load_kernels("copy").copy_lazy("float32"), out_idx=[-1], target=TARGET)
    assert "__global__" in kernel.get_kernel_source()
    if GPU:
        x = torch.randn(1000, device="cuda")
        assert torch.equal(kernel(x), x)   # allocates and returns the output
        assert torch.equal(kernel(x[:77]), x[:77])   # N is dynamic: same kernel, new length


@pytest.mark.skipif(not GPU, reason="the eager form compiles and runs on its first call: needs a GPU")
def test_eager_t_empty_form():
    copy_eager = load_kernels("copy").copy_eager
    x = torch.randn(3000, device="cuda")
    assert torch.equal(copy_eager(x), x)
    assert torch.equal(copy_eager(x[:5]), x[:5])


@NEEDS_NVCC
def test_contiguous_copy_is_vectorized():
    kernel = tilelang.compile(contiguous(COPY, "float16", "float16", 8), target=TARGET)
    assert "uint4" in kernel.get_kernel_source()
