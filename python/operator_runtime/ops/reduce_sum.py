"""reduce_sum: the sum over ``dim`` (an int, a tuple of ints, or None for
all dims), accumulated in float32 or wider, in the input's dtype."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence

import torch

from .._internal.tensors import normalize_dim
from ..description import Backward, Bench, Case, ErrorCase, OpDescription, Param, Plan
from ..families import BF16, F16, F32, M, randn


def reduced_dims(op: str, dim, ndim: int) -> tuple:
    """Sorted, normalized dims to reduce. None and () mean every dim (as in torch)."""
    if dim is None:
        dims = list(range(ndim))
    elif isinstance(dim, (tuple, list)):
        dims = [normalize_dim(op, d, ndim) for d in dim] if len(dim) else list(range(ndim))
    else:
        dims = [normalize_dim(op, dim, ndim)]
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {dim} names a dimension more than once")
    return tuple(sorted(d for d in dims if d < ndim))  # a 0-d tensor has nothing to reduce


def _plan(out, src, dim=-1, keepdim=False):
    if not isinstance(keepdim, bool):
        raise TypeError(f"reduce_sum: keepdim must be a bool, got {type(keepdim).__name__}")
    dims = reduced_dims("reduce_sum", dim, src.dim())
    if keepdim:
        shape = tuple(1 if d in dims else s for d, s in enumerate(src.shape))
    else:
        shape = tuple(s for d, s in enumerate(src.shape) if d not in dims)
    return Plan((src,), (dims, keepdim), shape, src.dtype)


def _c_params(dims, keepdim):
    return (ctypes.c_int32 * max(len(dims), 1))(*dims), len(dims), int(keepdim)


def _torch_dims(src, dim):
    # torch.sum(out=) takes no dim=None: name every dim instead.
    return tuple(range(src.dim())) if dim is None else dim


def _error_scale(inputs, ref, **params):
    """A sum of n random terms is about sqrt(n) * mean|x| in size; where the
    exact sum cancels to less, errors count against that instead, so an
    accurate result is not blamed for the cancellation (one element missed
    from the sum still shows, at 1/sqrt(n) of the scale)."""
    src = inputs[0]
    if src.numel() == 0 or ref.numel() == 0:
        return ref
    terms = src.numel() // ref.numel()
    mean_abs = src.abs().sum(dtype=torch.float64).item() / src.numel()
    return ref.abs().clamp(min=math.sqrt(terms) * mean_abs)


_c = lambda name, shape, layout="contiguous", out_layout="contiguous", **params: Case(  # noqa: E731
    name, [shape], [layout], params=params, out_layout=out_layout)

_CASES = (
    _c("default_dim_last", (4, 37)),
    _c("dim0", (5, 6), dim=0),
    _c("middle_dim", (3, 7, 4), dim=1),
    _c("two_dims", (3, 5, 4), dim=(0, 2)),
    _c("negative_tuple", (2, 3, 4, 5), dim=(-1, -3)),
    _c("list_dims", (3, 4, 5), dim=[2, 0]),
    _c("all_none", (3, 4, 5), dim=None),
    _c("all_empty_tuple", (3, 4, 5), dim=()),
    _c("all_tuple", (3, 4, 5), dim=(0, 1, 2)),
    _c("keepdim", (3, 4, 5), dim=1, keepdim=True),
    _c("keepdim_none", (3, 4, 5), dim=None, keepdim=True),
    _c("keepdim_tuple", (2, 3, 4, 5), dim=(0, -1), keepdim=True),
    _c("size_one_reduced", (4, 1, 3), dim=1),
    _c("size_one_kept", (1, 9), dim=1),
    _c("empty_reduced_gives_zeros", (3, 0), dim=1),
    _c("empty_reduced_keepdim", (2, 0, 3), dim=1, keepdim=True),
    _c("empty_all", (0, 4), dim=None),
    _c("empty_kept", (0, 5), dim=1),
    _c("scalar_0d_default", ()),
    _c("scalar_0d_dim0", (), dim=0),
    _c("scalar_0d_none", (), dim=None),
    _c("scalar_0d_empty_tuple_keepdim", (), dim=(), keepdim=True),
    _c("vector_full", (37,), dim=0),
    _c("eight_dims", (2, 1, 2, 3, 1, 2, 2, 3), dim=(1, 3, 6)),
    _c("eight_dims_mixed", (2, 1, 2, 3, 1, 2, 2, 3), "mixed", "sliced", dim=(0, -1, 4), keepdim=True),
    _c("transposed_last", (6, 7, 5), "transposed", dim=-1),
    _c("transposed_first", (6, 7, 5), "transposed", dim=0),
    _c("sliced", (5, 8, 3), "sliced", dim=(0, 2)),
    _c("offset_odd", (3, 33), "offset", dim=1),
    _c("mixed_in_out", (4, 3, 6), "mixed", "mixed", dim=1),
    _c("expanded_reduced", (4, 5, 6), "expanded", dim=(0, 2)),
    _c("expanded_kept", (4, 5, 6), "expanded", dim=1),
    _c("out_sliced_keepdim", (6, 4, 5), out_layout="sliced", dim=1, keepdim=True),
    _c("out_transposed", (5, 6, 7), out_layout="transposed", dim=2),
    # medium: long rows, many rows, and a full reduction (multi-threaded and workspace paths)
    _c("medium_long_row", (2, 70001), dim=-1),
    _c("medium_many_rows", (20000, 5), dim=1),
    _c("medium_column_sums", (2000, 33), dim=0),
    _c("medium_full", (257, 300), "transposed", dim=None),
)


def _out_overlaps_src(device):
    base = randn(4, 5, device=device)
    return base.view(-1)[:4], base, 1


def _error_cases():
    f16 = torch.float16
    return (
        ErrorCase("dim_too_large", lambda d: (randn(2, 3, device=d), 2), "op", ValueError, "out of range"),
        ErrorCase("dim_too_negative", lambda d: (randn(2, 3, device=d), -3), "op", ValueError, "out of range"),
        ErrorCase("tuple_dim_out_of_range", lambda d: (randn(2, 3, device=d), (0, 5)), "op", ValueError,
                     "out of range"),
        ErrorCase("dim_on_0d", lambda d: (randn(device=d), 1), "op", ValueError, "out of range"),
        ErrorCase("duplicate_dims", lambda d: (randn(2, 3, device=d), (1, 1)), "op", ValueError, "more than once"),
        ErrorCase("duplicate_dims_negative", lambda d: (randn(2, 3, device=d), (0, -2)), "op", ValueError,
                     "more than once"),
        ErrorCase("int_input", lambda d: (torch.ones(2, 3, dtype=torch.int64, device=d),), "op", TypeError,
                     "dtype"),
        ErrorCase("src_not_tensor", lambda d: ([[1.0, 2.0]],), "op", TypeError, "torch.Tensor"),
        ErrorCase("out_dtype_mismatch", lambda d: (randn(2, device=d, dtype=f16), randn(2, 3, device=d), 1),
                     "op_", TypeError, "dtype"),
        ErrorCase("out_missing_keepdim", lambda d: (randn(2, device=d), randn(2, 3, device=d), 1, True), "op_",
                     ValueError, "shape"),
        ErrorCase("out_wrong_shape", lambda d: (randn(3, device=d), randn(2, 3, device=d), 1), "op_",
                     ValueError, "shape"),
        ErrorCase("out_partially_overlaps_src", _out_overlaps_src, "op_", ValueError, "overlap"),
        ErrorCase("out_expanded", lambda d: (randn(1, device=d).expand(4), randn(4, 5, device=d), 1), "op_",
                     ValueError, "overlaps itself"),
        ErrorCase("dim_bool", lambda d: (randn(2, 3, device=d), True), "op", TypeError, "dim"),
        ErrorCase("dim_float", lambda d: (randn(2, 3, device=d), 1.0), "op", TypeError, "dim"),
        ErrorCase("dim_tuple_of_bool", lambda d: (randn(2, 3, device=d), (True,)), "op", TypeError, "dim"),
        ErrorCase("keepdim_int", lambda d: (randn(2, 3, device=d), 1, 1), "op", TypeError, "keepdim"),
        ErrorCase("prepare_duplicate_dims", lambda d: (randn(2, device=d), randn(2, 3, 4, device=d), (2, -1)),
                     "prepare", ValueError, "more than once"),
    )


# many short rows, medium, few very long rows, over dim 0, to a scalar;
# tiny (host overhead), >= 4M elements (the CPU target), GPU-only up to 256M.
_LAST, _DIM0, _SCALAR = {"dim": -1}, {"dim": 0}, {"dim": None}
_BENCHMARKS = (
    Bench("tiny_256x1024", [(256, 1024)], params=_LAST, quick=(F32,)),
    Bench("rows_32768x128", [(32768, 128)], params=_LAST, quick=(F32, BF16)),
    Bench("medium_2048x2048", [(2048, 2048)], params=_LAST, quick=(F16,)),
    Bench("long_4x1M", [(4, M)], params=_LAST, quick=(F32,)),
    Bench("dim0_4096x1024", [(4096, 1024)], params=_DIM0, quick=(F32, F16)),
    Bench("scalar_4M", [(4 * M,)], params=_SCALAR, quick=(F32, BF16)),
    Bench("odd_2047x2053", [(2047, 2053)], params=_LAST, quick=(F16,)),
    Bench("odd_dim0_2047x2053", [(2047, 2053)], (F32, BF16), params=_DIM0),
    Bench("rows_262144x128", [(262144, 128)], params=_LAST, gpu_only=True),
    Bench("medium_4096x4096", [(4096, 4096)], params=_LAST, gpu_only=True),
    Bench("medium_8192x8192", [(8192, 8192)], params=_LAST, gpu_only=True),
    Bench("long_4x4M", [(4, 4 * M)], params=_LAST, gpu_only=True),
    Bench("dim0_8192x8192", [(8192, 8192)], params=_DIM0, gpu_only=True),
    Bench("scalar_64M", [(64 * M,)], params=_SCALAR, gpu_only=True),
    Bench("large_16384x16384", [(16384, 16384)], params=_LAST, gpu_only=True),
    Bench("odd_16384x12289", [(16384, 12289)], (BF16,), params=_LAST, gpu_only=True),
    Bench("scalar_256M", [(256 * M,)], (F32,), params=_SCALAR, gpu_only=True),
)

def _backward(ctx, grad):
    """Every summed element gets the gradient of its sum: grad with the
    summed dims back (size 1), expanded to src's shape and copied out by
    the runtime's copy."""
    dims, keepdim = ctx.params
    if not keepdim:
        for d in dims:  # ascending, so each lands where it was
            grad = grad.unsqueeze(d)
    return (ctx.ops.copy(grad.expand(ctx.shapes[0])),)


DESCRIPTION = OpDescription(
    name="reduce_sum",
    summary="src summed over dim",
    family="reduction",
    inputs=("src",),
    params=(Param("dim", -1, schema="int[1]?", annotation=int | Sequence[int] | None,
                  doc="the dim(s) to sum over: an int, a sequence of ints, or None (and ()) for every dim"),
            Param("keepdim", False, doc="keep the summed dims with size 1", after_seed=True)),
    plan=_plan,
    c_params=_c_params,
    reference=lambda src, dim=-1, keepdim=False: torch.sum(src, _torch_dims(src, dim), keepdim=keepdim),
    torch_out=lambda out, src, dim=-1, keepdim=False: torch.sum(src, _torch_dims(src, dim), keepdim=keepdim,
                                                               out=out),
    in_place=False,
    flops_per_element=1,
    flops_count="input",
    accuracy="reduction",
    error_scale=_error_scale,
    cases=_CASES,
    error_cases=_error_cases(),
    tiny=Bench("tiny_4x16", [(4, 16)], params={"dim": -1}),
    benchmarks=_BENCHMARKS,
    backward=Backward(_backward),
)
