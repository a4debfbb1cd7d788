"""softmax / softmax_ cases. Rows with -inf/+inf/NaN are built in
tests/ops/test_softmax.py, which compares them with torch.softmax."""

from __future__ import annotations

import torch

from . import ApiErrorCase, call_forms, randn, unary_case as _c


_softmax, _softmax_, _prepare = call_forms("softmax")


def correctness_cases():
    return [
        _c("default_dim_last", (4, 33)),
        _c("dim0", (5, 6), dim=0),
        _c("middle_dim", (3, 7, 4), dim=1),
        _c("negative_dim", (2, 3, 4, 5), dim=-3),
        _c("vector", (37,), dim=0),
        _c("single_element_rows", (5, 1), dim=1),
        _c("size_one_other_dims", (1, 9, 1), dim=1),
        _c("scalar_0d", ()),
        _c("scalar_0d_dim0", (), dim=0),
        _c("empty_rows", (0, 5), dim=1),
        _c("empty_dim", (5, 0), dim=-1),
        _c("eight_dims", (2, 1, 2, 3, 1, 2, 2, 3), dim=3),
        _c("eight_dims_mixed", (2, 1, 2, 3, 1, 2, 2, 3), "mixed", "sliced", dim=-2),
        _c("transposed_last", (6, 7, 5), "transposed", dim=-1),
        _c("transposed_first", (6, 7, 5), "transposed", dim=0),
        _c("sliced", (5, 8, 3), "sliced", dim=1),
        _c("offset_odd", (3, 33), "offset", dim=1),
        _c("mixed_in_out", (4, 3, 6), "mixed", "mixed", dim=2),
        _c("expanded_along_dim", (4, 5, 6), "expanded", dim=0),
        _c("expanded_across_dim", (4, 5, 6), "expanded", dim=1),
        _c("out_sliced", (6, 4, 5), out_layout="sliced", dim=1),
        _c("out_transposed", (5, 6, 7), out_layout="transposed", dim=-1),
        _c("out_offset_odd", (3, 65), out_layout="offset", dim=-1),
        # medium: long rows, many short rows, strided rows (multi-threaded paths)
        _c("medium_long_row", (3, 20001), dim=-1),
        _c("medium_many_rows", (20000, 7), dim=1),
        _c("medium_strided_dim0", (2000, 33), dim=0),
        _c("medium_transposed", (257, 300), "transposed", "offset", dim=1),
    ]





def _out_overlaps_src(device):
    base = randn(4, 6, device=device)
    return base[:, 1:], base[:, :5], 1


def api_error_cases():
    f16 = torch.float16
    return [
        ApiErrorCase("dim_too_large", lambda d: (randn(2, 3, device=d), 2), _softmax, ValueError, "out of range"),
        ApiErrorCase("dim_too_negative", lambda d: (randn(2, 3, device=d), -3), _softmax, ValueError,
                     "out of range"),
        ApiErrorCase("dim_on_0d", lambda d: (randn(device=d), 1), _softmax, ValueError, "out of range"),
        ApiErrorCase("int_input", lambda d: (torch.ones(2, 3, dtype=torch.int32, device=d),), _softmax, TypeError,
                     "dtype"),
        ApiErrorCase("src_not_tensor", lambda d: ((1.0, 2.0),), _softmax, TypeError, "torch.Tensor"),
        ApiErrorCase("out_dtype_mismatch", lambda d: (randn(2, 3, device=d, dtype=f16), randn(2, 3, device=d)),
                     _softmax_, TypeError, "dtype"),
        ApiErrorCase("out_wrong_shape", lambda d: (randn(3, 2, device=d), randn(2, 3, device=d)), _softmax_,
                     ValueError, "shape"),
        ApiErrorCase("out_partially_overlaps_src", _out_overlaps_src, _softmax_, ValueError, "overlap"),
        ApiErrorCase("out_expanded", lambda d: (randn(1, 5, device=d).expand(4, 5), randn(4, 5, device=d)),
                     _softmax_, ValueError, "overlaps itself"),
        ApiErrorCase("prepare_dim_out_of_range", lambda d: (randn(2, 3, device=d), randn(2, 3, device=d), 5),
                     _prepare, ValueError, "out of range"),
    ]


def benchmark_cases():
    # many short rows, medium, few very long rows, over dim 0, vocabulary-sized
    # rows; tiny (host overhead), >= 4M elements (the CPU target), GPU-only up
    # to 256M; non-power-of-two widths.
    from operator_runtime_testing.benchmark import case_grid

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    M = 2**20
    last, dim0 = {"dim": -1}, {"dim": 0}
    return [
        *case_grid("tiny_256x1024", [(256, 1024)], params=last, quick_dtypes=(f32,)),
        *case_grid("rows_32768x128", [(32768, 128)], params=last, quick_dtypes=(f32, bf16)),
        *case_grid("medium_2048x2048", [(2048, 2048)], params=last, quick_dtypes=(f16,)),
        *case_grid("long_4x1M", [(4, M)], params=last, quick_dtypes=(f32,)),
        *case_grid("dim0_4096x1024", [(4096, 1024)], params=dim0, quick_dtypes=(f32,)),
        *case_grid("vocab_32x151936", [(32, 151936)], params=last, quick_dtypes=(bf16,)),
        *case_grid("odd_2047x2053", [(2047, 2053)], params=last, quick_dtypes=(f16,)),
        *case_grid("rows_262144x128", [(262144, 128)], params=last, gpu_only=True),
        *case_grid("medium_4096x4096", [(4096, 4096)], params=last, gpu_only=True),
        *case_grid("medium_8192x8192", [(8192, 8192)], params=last, gpu_only=True),
        *case_grid("long_4x4M", [(4, 4 * M)], params=last, gpu_only=True),
        *case_grid("long_16x4M", [(16, 4 * M)], params=last, gpu_only=True),  # long rows at 64M elements
        *case_grid("dim0_8192x8192", [(8192, 8192)], params=dim0, gpu_only=True),
        *case_grid("vocab_4096x151936", [(4096, 151936)], params=last, gpu_only=True),
        *case_grid("vocab_gpt2_4096x50257", [(4096, 50257)], params=last, gpu_only=True),  # odd rows
        *case_grid("large_16384x16384", [(16384, 16384)], params=last, gpu_only=True),
        *case_grid("odd_16384x12289", [(16384, 12289)], [f32, bf16], params=last, gpu_only=True),
    ]
