"""reduce_sum / reduce_sum_ cases."""

from __future__ import annotations

import torch

from . import ApiErrorCase, call_forms, randn, unary_case as _c


_sum, _sum_, _prepare = call_forms("reduce_sum")


def correctness_cases():
    return [
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
    ]





def _out_overlaps_src(device):
    base = randn(4, 5, device=device)
    return base.view(-1)[:4], base, 1


def api_error_cases():
    f16 = torch.float16
    return [
        ApiErrorCase("dim_too_large", lambda d: (randn(2, 3, device=d), 2), _sum, ValueError, "out of range"),
        ApiErrorCase("dim_too_negative", lambda d: (randn(2, 3, device=d), -3), _sum, ValueError, "out of range"),
        ApiErrorCase("tuple_dim_out_of_range", lambda d: (randn(2, 3, device=d), (0, 5)), _sum, ValueError,
                     "out of range"),
        ApiErrorCase("dim_on_0d", lambda d: (randn(device=d), 1), _sum, ValueError, "out of range"),
        ApiErrorCase("duplicate_dims", lambda d: (randn(2, 3, device=d), (1, 1)), _sum, ValueError, "more than once"),
        ApiErrorCase("duplicate_dims_negative", lambda d: (randn(2, 3, device=d), (0, -2)), _sum, ValueError,
                     "more than once"),
        ApiErrorCase("int_input", lambda d: (torch.ones(2, 3, dtype=torch.int64, device=d),), _sum, TypeError,
                     "dtype"),
        ApiErrorCase("src_not_tensor", lambda d: ([[1.0, 2.0]],), _sum, TypeError, "torch.Tensor"),
        ApiErrorCase("out_dtype_mismatch", lambda d: (randn(2, device=d, dtype=f16), randn(2, 3, device=d), 1),
                     _sum_, TypeError, "dtype"),
        ApiErrorCase("out_missing_keepdim", lambda d: (randn(2, device=d), randn(2, 3, device=d), 1, True), _sum_,
                     ValueError, "shape"),
        ApiErrorCase("out_wrong_shape", lambda d: (randn(3, device=d), randn(2, 3, device=d), 1), _sum_,
                     ValueError, "shape"),
        ApiErrorCase("out_partially_overlaps_src", _out_overlaps_src, _sum_, ValueError, "overlap"),
        ApiErrorCase("out_expanded", lambda d: (randn(1, device=d).expand(4), randn(4, 5, device=d), 1), _sum_,
                     ValueError, "overlaps itself"),
        ApiErrorCase("prepare_duplicate_dims", lambda d: (randn(2, device=d), randn(2, 3, 4, device=d), (2, -1)),
                     _prepare, ValueError, "more than once"),
    ]


def benchmark_cases():
    # many short rows, medium, few very long rows, over dim 0, to a scalar;
    # tiny (host overhead), >= 4M elements (the CPU target), GPU-only up to 256M;
    # non-power-of-two widths.
    from operator_runtime_testing.benchmark import case_grid

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    M = 2**20
    last, dim0, scalar = {"dim": -1}, {"dim": 0}, {"dim": None}
    return [
        *case_grid("tiny_256x1024", [(256, 1024)], params=last, quick_dtypes=(f32,)),
        *case_grid("rows_32768x128", [(32768, 128)], params=last, quick_dtypes=(f32, bf16)),
        *case_grid("medium_2048x2048", [(2048, 2048)], params=last, quick_dtypes=(f16,)),
        *case_grid("long_4x1M", [(4, M)], params=last, quick_dtypes=(f32,)),
        *case_grid("dim0_4096x1024", [(4096, 1024)], params=dim0, quick_dtypes=(f32, f16)),
        *case_grid("scalar_4M", [(4 * M,)], params=scalar, quick_dtypes=(f32, bf16)),
        *case_grid("odd_2047x2053", [(2047, 2053)], params=last, quick_dtypes=(f16,)),
        *case_grid("odd_dim0_2047x2053", [(2047, 2053)], [f32, bf16], params=dim0),
        *case_grid("rows_262144x128", [(262144, 128)], params=last, gpu_only=True),
        *case_grid("medium_4096x4096", [(4096, 4096)], params=last, gpu_only=True),
        *case_grid("medium_8192x8192", [(8192, 8192)], params=last, gpu_only=True),
        *case_grid("long_4x4M", [(4, 4 * M)], params=last, gpu_only=True),
        *case_grid("dim0_8192x8192", [(8192, 8192)], params=dim0, gpu_only=True),
        *case_grid("scalar_64M", [(64 * M,)], params=scalar, gpu_only=True),
        *case_grid("large_16384x16384", [(16384, 16384)], params=last, gpu_only=True),
        *case_grid("odd_16384x12289", [(16384, 12289)], [bf16], params=last, gpu_only=True),
        *case_grid("scalar_256M", [(256 * M,)], [f32], params=scalar, gpu_only=True),
    ]
