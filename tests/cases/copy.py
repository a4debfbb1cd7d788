"""copy / copy_ cases."""

from __future__ import annotations

import torch

from . import ApiErrorCase, Case, call_forms, randn


_copy, _copy_, _prepare = call_forms("copy")


def correctness_cases():
    return [
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
    ]





def _overlapping_pair(device):
    base = randn(12, device=device)
    return base[:8], base[2:10]


def _expanded_out(device):
    return randn(1, 5, device=device).expand(4, 5), randn(4, 5, device=device)


def api_error_cases():
    f32 = torch.float32
    return [
        ApiErrorCase("src_not_tensor", lambda d: ([1.0, 2.0],), _copy, TypeError, "torch.Tensor"),
        ApiErrorCase("out_not_tensor", lambda d: ([0.0, 0.0], randn(2, device=d)), _copy_, TypeError,
                     "torch.Tensor"),
        ApiErrorCase("src_int32", lambda d: (torch.arange(6, dtype=torch.int32, device=d),), _copy, TypeError,
                     "dtype"),
        ApiErrorCase("src_complex", lambda d: (randn(3, device=d).to(torch.complex64),), _copy, TypeError,
                     "dtype"),
        ApiErrorCase("out_int64", lambda d: (torch.zeros(3, dtype=torch.int64, device=d), randn(3, device=d)),
                     _copy_, TypeError, "dtype"),
        ApiErrorCase("src_does_not_broadcast", lambda d: (randn(3, 4, device=d), randn(5, device=d)), _copy_,
                     ValueError, "broadcast"),
        ApiErrorCase("src_more_dims_than_out", lambda d: (randn(4, device=d), randn(2, 4, device=d)), _copy_,
                     ValueError, "broadcast"),
        ApiErrorCase("out_partially_overlaps_src", _overlapping_pair, _copy_, ValueError, "overlap"),
        ApiErrorCase("out_expanded", _expanded_out, _copy_, ValueError, "overlaps itself"),
        ApiErrorCase("nine_dims", lambda d: (randn(*([1] * 9), device=d),), _copy, ValueError, "dims"),
        ApiErrorCase("sparse_src", lambda d: (randn(3, 3, device=d).to_sparse(),), _copy, ValueError, "strided"),
        ApiErrorCase("prepare_without_out", lambda d: (None, randn(3, device=d, dtype=f32)), _prepare, TypeError,
                     "out"),
        ApiErrorCase("prepare_expanded_out", _expanded_out, _prepare, ValueError, "overlaps itself"),
    ]


def benchmark_cases():
    # tiny (host overhead), >= 4M elements (the CPU target), GPU-only 16M/64M/256M;
    # non-power-of-two lengths; a transposed (non-contiguous) source.
    from operator_runtime_testing.benchmark import case_grid

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    M = 2**20
    return [
        *case_grid("tiny_4096", [(4096,)], quick_dtypes=(f32,)),
        *case_grid("1M", [(M,)], quick_dtypes=(f32,)),
        *case_grid("odd_1000003", [(1000003,)], quick_dtypes=(f16,)),
        *case_grid("4M", [(4 * M,)], quick_dtypes=(f32, f16, bf16)),
        *case_grid("2d_1024x4099", [(1024, 4099)], quick_dtypes=(bf16,)),
        *case_grid("transpose_2048x2048", [(2048, 2048)], layout="transposed", quick_dtypes=(f32,)),
        *case_grid("transpose_2047x2053", [(2047, 2053)], layout="transposed", quick_dtypes=(f16,)),
        *case_grid("16M", [(16 * M,)], gpu_only=True),
        *case_grid("64M", [(64 * M,)], gpu_only=True),
        *case_grid("256M", [(256 * M,)], gpu_only=True),
        *case_grid("odd_64M+1", [(64 * M + 1,)], [f16], gpu_only=True),
        *case_grid("transpose_8192x8192", [(8192, 8192)], layout="transposed", gpu_only=True),
        *case_grid("transpose_16384x12289", [(16384, 12289)], [f16], layout="transposed", gpu_only=True),
    ]
