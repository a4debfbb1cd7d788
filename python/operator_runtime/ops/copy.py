"""copy: a contiguous copy, or ``copy_(out, src)`` into any strides and any
supported dtype (src broadcasts to out's shape, like ``Tensor.copy_``)."""

from __future__ import annotations

import torch

from ..description import Backward, Bench, Case, ErrorCase, OpDescription, Plan
from ..families import BF16, F16, F32, M, UNARY_TINY, randn
from ..gradients import sum_to


def _plan(out, src):
    if out is None:
        return Plan((src,), (), tuple(src.shape), src.dtype)
    try:
        expanded = src.expand(out.shape)
    except RuntimeError:
        raise ValueError(f"copy: src of shape {tuple(src.shape)} cannot broadcast to out's shape "
                         f"{tuple(out.shape)}") from None
    return Plan((expanded,), (), tuple(out.shape), None)


_CASES = (
    Case("scalar_0d", [()]),
    Case("one_element", [(1,)]),
    Case("vector_odd", [(37,)]),
    Case("empty", [(0, 5)]),
    Case("empty_inner", [(3, 0, 2)]),
    Case("size_one_dims", [(1, 7, 1, 3)]),
    Case("matrix", [(9, 17)]),
    Case("five_dims", [(2, 3, 1, 4, 5)]),
    Case("eight_dims", [(2, 1, 2, 3, 1, 2, 2, 3)]),
    Case("eight_dims_mixed", [(2, 1, 2, 3, 1, 2, 2, 3)], ["mixed"], out_layout="transposed"),
    Case("src_transposed", [(6, 7, 5)], ["transposed"]),
    Case("src_sliced", [(5, 8)], ["sliced"]),
    Case("src_offset_odd", [(3, 33)], ["offset"]),
    Case("src_mixed", [(4, 3, 6)], ["mixed"]),
    Case("src_expanded", [(4, 5, 6)], ["expanded"]),
    Case("out_transposed", [(6, 7, 5)], out_layout="transposed"),
    Case("out_sliced", [(5, 8)], out_layout="sliced"),
    Case("out_offset_odd", [(67,)], out_layout="offset"),
    Case("both_mixed", [(3, 4, 5)], ["mixed"], out_layout="mixed"),
    Case("transposed_to_sliced", [(8, 9)], ["transposed"], out_layout="sliced"),
    Case("broadcast_row", [(1, 5)], out_shape=(4, 5)),
    Case("broadcast_leading_dims", [(6,)], out_shape=(2, 3, 6), out_layout="transposed"),
    Case("broadcast_scalar", [()], out_shape=(3, 4), out_layout="sliced"),
    # medium: more than one thread's worth of elements (grain 32768)
    Case("medium_contiguous", [(70001,)]),
    Case("medium_strided", [(300, 257)], ["transposed"], out_layout="offset"),
)


def _overlapping_pair(device):
    base = randn(12, device=device)
    return base[:8], base[2:10]


def _expanded_out(device):
    return randn(1, 5, device=device).expand(4, 5), randn(4, 5, device=device)


def _error_cases():
    f32 = torch.float32
    return (
        ErrorCase("src_not_tensor", lambda d: ([1.0, 2.0],), "op", TypeError, "torch.Tensor"),
        ErrorCase("out_not_tensor", lambda d: ([0.0, 0.0], randn(2, device=d)), "op_", TypeError,
                     "torch.Tensor"),
        ErrorCase("src_int32", lambda d: (torch.arange(6, dtype=torch.int32, device=d),), "op", TypeError,
                     "dtype"),
        ErrorCase("src_complex", lambda d: (randn(3, device=d).to(torch.complex64),), "op", TypeError,
                     "dtype"),
        ErrorCase("out_int64", lambda d: (torch.zeros(3, dtype=torch.int64, device=d), randn(3, device=d)),
                     "op_", TypeError, "dtype"),
        ErrorCase("src_does_not_broadcast", lambda d: (randn(3, 4, device=d), randn(5, device=d)), "op_",
                     ValueError, "broadcast"),
        ErrorCase("src_more_dims_than_out", lambda d: (randn(4, device=d), randn(2, 4, device=d)), "op_",
                     ValueError, "broadcast"),
        ErrorCase("out_partially_overlaps_src", _overlapping_pair, "op_", ValueError, "overlap"),
        ErrorCase("out_expanded", _expanded_out, "op_", ValueError, "overlaps itself"),
        ErrorCase("nine_dims", lambda d: (randn(*([1] * 9), device=d),), "op", ValueError, "dims"),
        ErrorCase("sparse_src", lambda d: (randn(3, 3, device=d).to_sparse(),), "op", ValueError, "strided"),
        ErrorCase("prepare_without_out", lambda d: (None, randn(3, device=d, dtype=f32)), "prepare", TypeError,
                     "out"),
        ErrorCase("prepare_expanded_out", _expanded_out, "prepare", ValueError, "overlaps itself"),
    )


# tiny (host overhead), >= 4M elements (the CPU target), GPU-only 16M/64M/256M;
# non-power-of-two lengths; a transposed (non-contiguous) source.
_BENCHMARKS = (
    Bench("tiny_4096", [(4096,)], quick=(F32,)),
    Bench("1M", [(M,)], quick=(F32,)),
    Bench("odd_1000003", [(1000003,)], quick=(F16,)),
    Bench("4M", [(4 * M,)], quick=(F32, F16, BF16)),
    Bench("2d_1024x4099", [(1024, 4099)], quick=(BF16,)),
    Bench("transpose_2048x2048", [(2048, 2048)], layout="transposed", quick=(F32,)),
    Bench("transpose_2047x2053", [(2047, 2053)], layout="transposed", quick=(F16,)),
    Bench("16M", [(16 * M,)], gpu_only=True),
    Bench("64M", [(64 * M,)], gpu_only=True),
    Bench("256M", [(256 * M,)], gpu_only=True),
    Bench("odd_64M+1", [(64 * M + 1,)], (F16,), gpu_only=True),
    Bench("transpose_8192x8192", [(8192, 8192)], layout="transposed", gpu_only=True),
    Bench("transpose_16384x12289", [(16384, 12289)], (F16,), layout="transposed", gpu_only=True),
)

def _backward(ctx, grad):
    """grad itself, in src's dtype and summed over the dims src was broadcast along."""
    return (sum_to(ctx.ops, grad, ctx.shapes[0], ctx.dtypes[0]),)


DESCRIPTION = OpDescription(
    name="copy",
    summary="src, converted to out's dtype and broadcast to out's shape",
    family="elementwise",
    inputs=("src",),
    plan=_plan,
    reference=lambda src: src.clone(memory_format=torch.contiguous_format),
    torch_out=lambda out, src: out.copy_(src),
    accuracy="exact",
    special_values="elementwise",
    cases=_CASES,
    error_cases=_error_cases(),
    tiny=UNARY_TINY,
    benchmarks=_BENCHMARKS,
    backward=Backward(_backward),
)
