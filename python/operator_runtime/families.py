"""What ops of one family share: their plan (validation, output shape and
dtype), their test cases, error cases and benchmark shapes.

- elementwise: out[i] = f(inputs[i]...), inputs broadcast to a common shape,
  one dtype for inputs and out (relu, vector_add, mul);
- along_dim: a function of the whole of one dim, out shaped like src
  (softmax, log_softmax);
- along_dim_backward: the same of two inputs of one shape, grad and the
  forward's output (softmax_backward, log_softmax_backward).
"""

from __future__ import annotations

import torch

from ._internal.tensors import normalize_dim
from .description import Bench, Case, ErrorCase, Plan

M = 2**20
F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def randn(*shape, device, dtype=torch.float32, seed=0) -> torch.Tensor:
    """Deterministic random data for error cases (never zeros)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float32).to(dtype).to(device)


# -- plans ------------------------------------------------------------------------

def elementwise_plan(name: str, input_names: tuple):
    """out = f(a, b, ...): every input of one dtype, broadcast to one shape."""

    def plan(out, *inputs):
        first = inputs[0]
        for other_name, other in zip(input_names[1:], inputs[1:]):
            if other.dtype != first.dtype:
                raise TypeError(f"{name}: {input_names[0]} ({first.dtype}) and {other_name} ({other.dtype}) "
                                "must share a dtype")
        if len(inputs) == 1:
            return Plan(inputs, (), tuple(first.shape), first.dtype)
        try:
            shape = torch.broadcast_shapes(*(t.shape for t in inputs))
        except RuntimeError:
            shapes = " and ".join(str(tuple(t.shape)) for t in inputs)
            raise ValueError(f"{name}: shapes {shapes} do not broadcast") from None
        return Plan(tuple(t.expand(shape) for t in inputs), (), tuple(shape), first.dtype)

    return plan


def along_dim_plan(name: str):
    """out shaped like src, a function of the whole of dim ``dim``."""

    def plan(out, src, dim=-1):
        dim = normalize_dim(name, dim, src.dim())
        return Plan((src,), (dim,), tuple(src.shape), src.dtype)

    return plan


def along_dim_backward_plan(name: str):
    """out shaped like grad and output (one shape, one dtype), a function of
    the whole of dim ``dim`` of both."""

    def plan(out, grad, output, dim=-1):
        if output.dtype != grad.dtype:
            raise TypeError(f"{name}: grad ({grad.dtype}) and output ({output.dtype}) must share a dtype")
        if output.shape != grad.shape:
            raise ValueError(f"{name}: grad {tuple(grad.shape)} and output {tuple(output.shape)} must share a shape")
        dim = normalize_dim(name, dim, grad.dim())
        return Plan((grad, output), (dim,), tuple(grad.shape), grad.dtype)

    return plan


# The host-overhead cases: tiny tensors, so the time is the call's own.
UNARY_TINY = Bench("tiny_16", [(16,)])
BINARY_TINY = Bench("tiny_16", [(16,), (16,)])
ALONG_DIM_TINY = Bench("tiny_4x16", [(4, 16)], params={"dim": -1})
ALONG_DIM_BACKWARD_TINY = Bench("tiny_4x16", [(4, 16), (4, 16)], params={"dim": -1})
# The backward ops' own gradient (double backward of softmax-like ops).
SECOND_ORDER_NO_BACKWARD = "a gradient of a softmax-like op's gradient (double backward) is not built"


# -- elementwise cases ------------------------------------------------------------

def unary_cases() -> tuple:
    return (
        Case("scalar_0d", [()]),
        Case("one_element", [(1,)]),
        Case("vector_odd", [(37,)]),
        Case("empty", [(0, 5)]),
        Case("size_one_dims", [(1, 7, 1, 3)]),
        Case("matrix", [(9, 17)]),
        Case("eight_dims", [(2, 1, 2, 3, 1, 2, 2, 3)]),
        Case("eight_dims_mixed", [(2, 1, 2, 3, 1, 2, 2, 3)], ["mixed"], out_layout="transposed"),
        Case("src_transposed", [(6, 7, 5)], ["transposed"]),
        Case("src_sliced", [(5, 8)], ["sliced"]),
        Case("src_offset_odd", [(3, 33)], ["offset"]),
        Case("src_expanded", [(4, 5, 6)], ["expanded"]),
        Case("out_transposed", [(6, 7, 5)], out_layout="transposed"),
        Case("out_offset_odd", [(67,)], out_layout="offset"),
        Case("both_mixed", [(3, 4, 5)], ["mixed"], out_layout="mixed"),
        # medium: more than one thread's worth of elements, odd sizes for vector tails
        Case("medium_contiguous", [(70001,)]),
        Case("medium_strided", [(300, 257)], ["transposed"], out_layout="offset"),
    )


def binary_cases() -> tuple:
    return (
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
        Case("medium_contiguous", [(70001,), (70001,)]),
        Case("medium_broadcast_strided", [(300, 257), (257,)], ["transposed", "contiguous"], out_layout="offset"),
    )


def _overlapping(which: int, count: int):
    """out a shifted view of the same storage as input `which`."""

    def make(device):
        base = randn(20, device=device, seed=1)
        inputs = [randn(10, device=device, seed=2 + k) for k in range(count)]
        inputs[which] = base[:10]
        return (base[1:11], *inputs)

    return make


def elementwise_error_cases(count: int) -> tuple:
    """Refusals every elementwise op of `count` inputs shares."""
    f16 = torch.float16

    def args(*shapes, dtype=torch.float32, device):
        return tuple(randn(*s, device=device, dtype=dtype, seed=k) for k, s in enumerate(shapes))

    same = [(4,)] * count
    cases = [
        ErrorCase("int_inputs", lambda d: (torch.ones(3, dtype=torch.int32, device=d),) * count, "op", TypeError,
                  "dtype"),
        ErrorCase("input_not_tensor", lambda d: (*args(*same[1:], device=d), 1.0), "op", TypeError, "torch.Tensor"),
        ErrorCase("out_dtype_mismatch", lambda d: (randn(4, device=d, dtype=f16), *args(*same, device=d)), "op_",
                  TypeError, "dtype"),
        ErrorCase("out_wrong_shape", lambda d: (randn(2, 3, 4, device=d), *args(*[(3, 4)] * count, device=d)),
                  "op_", ValueError, "shape"),
        ErrorCase("out_expanded", lambda d: (randn(1, 5, device=d).expand(4, 5), *args(*[(4, 5)] * count, device=d)),
                  "op_", ValueError, "overlaps itself"),
        ErrorCase("nine_dims", lambda d: args(*[(1,) * 9] * count, device=d), "op", ValueError, "dims"),
        ErrorCase("sparse_input", lambda d: (randn(3, 3, device=d).to_sparse(),) * count, "op", ValueError,
                  "strided"),
        ErrorCase("prepare_out_wrong_shape", lambda d: (randn(5, device=d), *args(*same, device=d)), "prepare",
                  ValueError, "shape"),
        *[ErrorCase(f"out_partially_overlaps_input{k}", _overlapping(k, count), "op_", ValueError, "overlap")
          for k in range(count)],
    ]
    if count > 1:
        cases += [
            ErrorCase("dtype_mismatch", lambda d: (randn(4, device=d), randn(4, device=d, dtype=f16)), "op",
                      TypeError, "dtype"),
            ErrorCase("no_broadcast", lambda d: (randn(3, device=d), randn(4, device=d)), "op", ValueError,
                      "broadcast"),
            ErrorCase("out_too_small", lambda d: (randn(1, 4, device=d), randn(3, 4, device=d), randn(3, 4, device=d)),
                      "op_", ValueError, "shape"),
        ]
    return tuple(cases)


def unary_benchmarks() -> tuple:
    return (
        Bench("tiny_4096", [(4096,)], quick=(F32,)),
        Bench("1M", [(M,)], quick=(F32,)),
        Bench("odd_1000003", [(1000003,)], quick=(F16,)),
        Bench("4M", [(4 * M,)], quick=(F32, F16, BF16)),
        Bench("2d_1024x4099", [(1024, 4099)], quick=(BF16,)),
        Bench("16M", [(16 * M,)], gpu_only=True),
        Bench("64M", [(64 * M,)], gpu_only=True),
        Bench("256M", [(256 * M,)], gpu_only=True),
        Bench("odd_64M+1", [(64 * M + 1,)], (F16,), gpu_only=True),
    )


def binary_benchmarks() -> tuple:
    return (
        Bench("tiny_4096", [(4096,), (4096,)], quick=(F32,)),
        Bench("1M", [(M,), (M,)], quick=(F32,)),
        Bench("odd_1000003", [(1000003,), (1000003,)], quick=(F16,)),
        Bench("4M", [(4 * M,), (4 * M,)], quick=(F32, F16, BF16)),
        Bench("2d_1024x4099", [(1024, 4099), (1024, 4099)], quick=(F16,)),
        Bench("bias_4096x1024", [(4096, 1024), (1024,)], quick=(F32, BF16)),
        Bench("bias_2047x2053", [(2047, 2053), (2053,)], quick=(F16,)),
        Bench("16M", [(16 * M,), (16 * M,)], gpu_only=True),
        Bench("64M", [(64 * M,), (64 * M,)], gpu_only=True),
        Bench("256M", [(256 * M,), (256 * M,)], gpu_only=True),
        Bench("odd_64M+1", [(64 * M + 1,), (64 * M + 1,)], (F16,), gpu_only=True),
        Bench("bias_16384x4096", [(16384, 4096), (4096,)], gpu_only=True),
        Bench("bias_16384x12289", [(16384, 12289), (12289,)], (BF16,), gpu_only=True),
    )


# -- along-dim cases --------------------------------------------------------------

def _dim_case(name, shape, layout="contiguous", out_layout="contiguous", **params) -> Case:
    return Case(name, [shape], [layout], params=params, out_layout=out_layout)


def along_dim_cases() -> tuple:
    c = _dim_case
    return (
        c("default_dim_last", (4, 33)),
        c("dim0", (5, 6), dim=0),
        c("middle_dim", (3, 7, 4), dim=1),
        c("negative_dim", (2, 3, 4, 5), dim=-3),
        c("vector", (37,), dim=0),
        c("single_element_rows", (5, 1), dim=1),
        c("size_one_other_dims", (1, 9, 1), dim=1),
        c("scalar_0d", ()),
        c("scalar_0d_dim0", (), dim=0),
        c("empty_rows", (0, 5), dim=1),
        c("empty_dim", (5, 0), dim=-1),
        c("eight_dims", (2, 1, 2, 3, 1, 2, 2, 3), dim=3),
        c("eight_dims_mixed", (2, 1, 2, 3, 1, 2, 2, 3), "mixed", "sliced", dim=-2),
        c("transposed_last", (6, 7, 5), "transposed", dim=-1),
        c("transposed_first", (6, 7, 5), "transposed", dim=0),
        c("sliced", (5, 8, 3), "sliced", dim=1),
        c("offset_odd", (3, 33), "offset", dim=1),
        c("mixed_in_out", (4, 3, 6), "mixed", "mixed", dim=2),
        c("expanded_along_dim", (4, 5, 6), "expanded", dim=0),
        c("expanded_across_dim", (4, 5, 6), "expanded", dim=1),
        c("out_sliced", (6, 4, 5), out_layout="sliced", dim=1),
        c("out_transposed", (5, 6, 7), out_layout="transposed", dim=-1),
        c("out_offset_odd", (3, 65), out_layout="offset", dim=-1),
        # medium: long rows, many short rows, strided rows (multi-threaded paths)
        c("medium_long_row", (3, 20001), dim=-1),
        c("medium_many_rows", (20000, 7), dim=1),
        c("medium_strided_dim0", (2000, 33), dim=0),
        c("medium_transposed", (257, 300), "transposed", "offset", dim=1),
    )


def along_dim_backward_cases() -> tuple:
    """along_dim_cases with grad and output in the case's layout, and cases
    where the two inputs differ (one of them strided along the dim, or
    neither laid out as out)."""
    same = tuple(Case(c.name, [c.shapes[0]] * 2, [c.layouts[0]] * 2, params=c.params, out_layout=c.out_layout)
                 for c in along_dim_cases())
    return same + (
        Case("output_transposed", [(6, 7, 5)] * 2, ["contiguous", "transposed"], params={"dim": -1}),
        Case("grad_transposed_dim0", [(70, 65)] * 2, ["transposed", "contiguous"], params={"dim": 0}),
        Case("grad_expanded_output_sliced", [(4, 5, 6)] * 2, ["expanded", "sliced"], params={"dim": 1}),
        Case("inputs_offset_out_mixed", [(3, 4, 70)] * 2, ["offset", "mixed"], out_layout="mixed",
             params={"dim": -1}),
        Case("columns_dim0", [(9, 200)] * 2, params={"dim": 0}),
        Case("medium_columns_offset", [(300, 130)] * 2, ["offset", "contiguous"], out_layout="offset",
             params={"dim": 0}),
        # rows no multiple of a 16-byte vector long, each starting elsewhere within one: a block per
        # row, few long rows cut into segments, bases not aligned
        Case("medium_odd_rows", [(300, 3001)] * 2, params={"dim": -1}),
        Case("medium_odd_long_rows", [(6, 50257)] * 2, params={"dim": -1}),
        Case("medium_odd_long_rows_offset", [(3, 3 * 2 ** 16 + 5)] * 2, ["offset", "offset"], params={"dim": -1}),
    )


def along_dim_backward_error_cases() -> tuple:
    f16 = torch.float16

    def two(*shape, device, dtype=torch.float32):
        return randn(*shape, device=device, dtype=dtype), randn(*shape, device=device, dtype=dtype, seed=1)

    def out_overlaps_grad(device):
        base = randn(4, 6, device=device)
        return base[:, 1:], base[:, :5], randn(4, 5, device=device), 1

    return (
        ErrorCase("dim_too_large", lambda d: (*two(2, 3, device=d), 2), "op", ValueError, "out of range"),
        ErrorCase("dim_too_negative", lambda d: (*two(2, 3, device=d), -3), "op", ValueError, "out of range"),
        ErrorCase("dim_not_int", lambda d: (*two(2, 3, device=d), 1.0), "op", TypeError, "dim"),
        ErrorCase("int_inputs", lambda d: (torch.ones(2, 3, dtype=torch.int32, device=d),) * 2, "op", TypeError,
                  "dtype"),
        ErrorCase("dtype_mismatch", lambda d: (randn(2, 3, device=d), randn(2, 3, device=d, dtype=f16)), "op",
                  TypeError, "dtype"),
        ErrorCase("shape_mismatch", lambda d: (randn(2, 3, device=d), randn(1, 3, device=d)), "op", ValueError,
                  "shape"),
        ErrorCase("output_not_tensor", lambda d: (randn(2, device=d), (1.0, 2.0)), "op", TypeError, "torch.Tensor"),
        ErrorCase("out_dtype_mismatch", lambda d: (randn(2, 3, device=d, dtype=f16), *two(2, 3, device=d)), "op_",
                  TypeError, "dtype"),
        ErrorCase("out_wrong_shape", lambda d: (randn(3, 2, device=d), *two(2, 3, device=d)), "op_", ValueError,
                  "shape"),
        ErrorCase("out_partially_overlaps_grad", out_overlaps_grad, "op_", ValueError, "overlap"),
        ErrorCase("out_expanded", lambda d: (randn(1, 5, device=d).expand(4, 5), *two(4, 5, device=d)), "op_",
                  ValueError, "overlaps itself"),
        ErrorCase("prepare_dim_out_of_range", lambda d: (randn(2, 3, device=d), *two(2, 3, device=d), 5), "prepare",
                  ValueError, "out of range"),
    )


def along_dim_error_cases() -> tuple:
    f16 = torch.float16

    def out_overlaps_src(device):
        base = randn(4, 6, device=device)
        return base[:, 1:], base[:, :5], 1

    return (
        ErrorCase("dim_too_large", lambda d: (randn(2, 3, device=d), 2), "op", ValueError, "out of range"),
        ErrorCase("dim_too_negative", lambda d: (randn(2, 3, device=d), -3), "op", ValueError, "out of range"),
        ErrorCase("dim_on_0d", lambda d: (randn(device=d), 1), "op", ValueError, "out of range"),
        ErrorCase("dim_not_int", lambda d: (randn(2, 3, device=d), 1.0), "op", TypeError, "dim"),
        ErrorCase("dim_bool", lambda d: (randn(2, 3, device=d), True), "op", TypeError, "dim"),
        ErrorCase("int_input", lambda d: (torch.ones(2, 3, dtype=torch.int32, device=d),), "op", TypeError, "dtype"),
        ErrorCase("src_not_tensor", lambda d: ((1.0, 2.0),), "op", TypeError, "torch.Tensor"),
        ErrorCase("out_dtype_mismatch", lambda d: (randn(2, 3, device=d, dtype=f16), randn(2, 3, device=d)), "op_",
                  TypeError, "dtype"),
        ErrorCase("out_wrong_shape", lambda d: (randn(3, 2, device=d), randn(2, 3, device=d)), "op_", ValueError,
                  "shape"),
        ErrorCase("out_partially_overlaps_src", out_overlaps_src, "op_", ValueError, "overlap"),
        ErrorCase("out_expanded", lambda d: (randn(1, 5, device=d).expand(4, 5), randn(4, 5, device=d)), "op_",
                  ValueError, "overlaps itself"),
        ErrorCase("prepare_dim_out_of_range", lambda d: (randn(2, 3, device=d), randn(2, 3, device=d), 5), "prepare",
                  ValueError, "out of range"),
    )


def along_dim_benchmarks() -> tuple:
    """Many short rows, medium, few very long rows, over dim 0, vocabulary-sized rows."""
    last, dim0 = {"dim": -1}, {"dim": 0}
    return (
        Bench("tiny_256x1024", [(256, 1024)], params=last, quick=(F32,)),
        Bench("rows_32768x128", [(32768, 128)], params=last, quick=(F32, BF16)),
        Bench("medium_2048x2048", [(2048, 2048)], params=last, quick=(F16,)),
        Bench("long_4x1M", [(4, M)], params=last, quick=(F32,)),
        Bench("dim0_4096x1024", [(4096, 1024)], params=dim0, quick=(F32,)),
        Bench("vocab_32x151936", [(32, 151936)], params=last, quick=(BF16,)),
        Bench("odd_2047x2053", [(2047, 2053)], params=last, quick=(F16,)),
        Bench("rows_262144x128", [(262144, 128)], params=last, gpu_only=True),
        Bench("medium_4096x4096", [(4096, 4096)], params=last, gpu_only=True),
        Bench("medium_8192x8192", [(8192, 8192)], params=last, gpu_only=True),
        Bench("long_4x4M", [(4, 4 * M)], params=last, gpu_only=True),
        Bench("long_16x4M", [(16, 4 * M)], params=last, gpu_only=True),
        Bench("dim0_8192x8192", [(8192, 8192)], params=dim0, gpu_only=True),
        Bench("vocab_4096x151936", [(4096, 151936)], params=last, gpu_only=True),
        Bench("vocab_gpt2_4096x50257", [(4096, 50257)], params=last, gpu_only=True),
        Bench("large_16384x16384", [(16384, 16384)], params=last, gpu_only=True),
        Bench("odd_16384x12289", [(16384, 12289)], (F32, BF16), params=last, gpu_only=True),
    )


def along_dim_backward_benchmarks() -> tuple:
    """along_dim_benchmarks with grad and output of the same shape."""
    return tuple(Bench(b.name, [b.shapes[0]] * 2, b.dtypes, b.quick, b.params, b.layout, b.gpu_only)
                 for b in along_dim_benchmarks())
