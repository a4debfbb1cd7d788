"""vector_add / vector_add_ cases."""

from __future__ import annotations

import torch

from . import ApiErrorCase, Case, call_forms, randn


_add, _add_, _prepare = call_forms("vector_add")


def correctness_cases():
    return [
        Case("scalars_0d", [(), ()]),
        Case("one_element", [(1,), (1,)]),
        Case("vector_odd", [(37,), (37,)]),
        Case("empty", [(0, 4), (0, 4)]),
        Case("empty_broadcast", [(3, 0), (1, 0)]),
        Case("matrix", [(9, 17), (9, 17)]),
        Case("eight_dims", [(2, 1, 2, 3, 1, 2, 2, 3), (2, 1, 2, 3, 1, 2, 2, 3)]),
        Case("eight_dims_broadcast_mixed", [(2, 1, 2, 3, 1, 2, 2, 3), (3, 1, 2, 1)], ["mixed", "expanded"],
             out_layout="sliced"),
        Case("broadcast_row", [(6, 5), (1, 5)]),
        Case("broadcast_column", [(6, 1), (6, 7)]),
        Case("broadcast_both", [(3, 1, 5), (1, 4, 5)]),
        Case("broadcast_rank", [(5,), (2, 3, 5)]),
        Case("broadcast_scalar_0d", [(), (4, 6)]),
        Case("broadcast_size_one", [(1,), (7, 1)]),
        Case("a_transposed", [(6, 7, 5), (6, 7, 5)], ["transposed", "contiguous"]),
        Case("b_sliced", [(5, 8), (5, 8)], ["contiguous", "sliced"]),
        Case("both_offset_odd", [(3, 33), (3, 33)], ["offset", "offset"]),
        Case("mixed_inputs", [(4, 3, 6), (4, 3, 6)], ["mixed", "transposed"]),
        Case("expanded_inputs", [(4, 5, 6), (4, 5, 6)], ["expanded", "contiguous"]),
        Case("both_expanded", [(4, 5, 6), (4, 5, 6)], ["expanded", "expanded"]),
        Case("out_transposed", [(6, 7, 5), (6, 7, 5)], out_layout="transposed"),
        Case("out_sliced", [(5, 8), (1, 8)], out_layout="sliced"),
        Case("out_offset_odd", [(67,), (67,)], ["offset", "contiguous"], out_layout="offset"),
        Case("all_mixed", [(3, 4, 5), (4, 1)], ["mixed", "sliced"], out_layout="mixed"),
        # medium: more than one thread's worth of elements, odd size for vector tails
        Case("medium_contiguous", [(70001,), (70001,)]),
        Case("medium_broadcast_strided", [(300, 257), (257,)], ["transposed", "contiguous"], out_layout="offset"),
    ]





def _out_overlaps(which):
    def make(device):
        base = randn(20, device=device, seed=1)
        other = randn(10, device=device, seed=2)
        return (base[1:11], base[:10], other) if which == "a" else (base[1:11], other, base[:10])
    return make


def api_error_cases():
    f16 = torch.float16
    return [
        ApiErrorCase("dtype_mismatch", lambda d: (randn(4, device=d), randn(4, device=d, dtype=f16)), _add,
                     TypeError, "dtype"),
        ApiErrorCase("out_dtype_mismatch",
                     lambda d: (randn(4, device=d, dtype=f16), randn(4, device=d), randn(4, device=d)), _add_,
                     TypeError, "dtype"),
        ApiErrorCase("int_inputs", lambda d: (torch.ones(3, dtype=torch.int32, device=d),) * 2, _add, TypeError,
                     "dtype"),
        ApiErrorCase("b_not_tensor", lambda d: (randn(3, device=d), 1.0), _add, TypeError, "torch.Tensor"),
        ApiErrorCase("no_broadcast", lambda d: (randn(3, device=d), randn(4, device=d)), _add, ValueError,
                     "broadcast"),
        ApiErrorCase("out_wrong_shape", lambda d: (randn(2, 3, 4, device=d), randn(3, 4, device=d),
                                                   randn(3, 4, device=d)), _add_, ValueError, "shape"),
        ApiErrorCase("out_too_small", lambda d: (randn(1, 4, device=d), randn(3, 4, device=d),
                                                 randn(3, 4, device=d)), _add_, ValueError, "shape"),
        ApiErrorCase("out_partially_overlaps_a", _out_overlaps("a"), _add_, ValueError, "overlap"),
        ApiErrorCase("out_partially_overlaps_b", _out_overlaps("b"), _add_, ValueError, "overlap"),
        ApiErrorCase("out_expanded", lambda d: (randn(1, 5, device=d).expand(4, 5), randn(4, 5, device=d),
                                                randn(4, 5, device=d)), _add_, ValueError, "overlaps itself"),
        ApiErrorCase("prepare_dtype_mismatch",
                     lambda d: (randn(4, device=d), randn(4, device=d), randn(4, device=d, dtype=f16)), _prepare,
                     TypeError, "dtype"),
        ApiErrorCase("prepare_out_wrong_shape", lambda d: (randn(5, device=d), randn(4, device=d),
                                                           randn(4, device=d)), _prepare, ValueError, "shape"),
    ]


def benchmark_cases():
    # tiny (host overhead), >= 4M elements (the CPU target), GPU-only 16M/64M/256M;
    # non-power-of-two widths; a broadcast row bias [M, N] + [N].
    from operator_runtime_testing.benchmark import case_grid

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    M = 2**20
    return [
        *case_grid("tiny_4096", [(4096,), (4096,)], quick_dtypes=(f32,)),
        *case_grid("1M", [(M,), (M,)], quick_dtypes=(f32,)),
        *case_grid("odd_1000003", [(1000003,), (1000003,)], quick_dtypes=(f16,)),
        *case_grid("4M", [(4 * M,), (4 * M,)], quick_dtypes=(f32, f16, bf16)),
        *case_grid("2d_1024x4099", [(1024, 4099), (1024, 4099)], quick_dtypes=(f16,)),
        *case_grid("bias_4096x1024", [(4096, 1024), (1024,)], quick_dtypes=(f32, bf16)),
        *case_grid("bias_2047x2053", [(2047, 2053), (2053,)], quick_dtypes=(f16,)),
        *case_grid("16M", [(16 * M,), (16 * M,)], gpu_only=True),
        *case_grid("64M", [(64 * M,), (64 * M,)], gpu_only=True),
        *case_grid("256M", [(256 * M,), (256 * M,)], gpu_only=True),
        *case_grid("odd_64M+1", [(64 * M + 1,), (64 * M + 1,)], [f16], gpu_only=True),
        *case_grid("bias_16384x4096", [(16384, 4096), (4096,)], gpu_only=True),
        *case_grid("bias_16384x12289", [(16384, 12289), (12289,)], [bf16], gpu_only=True),
    ]
