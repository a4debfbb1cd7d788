"""The TileLang backend's planning half, checked without a GPU.

Every kernel is replaced by a torch emulation of its contract (same
arguments, same segmenting of split reductions), and the planner's steps
run on CPU tensors: layout analysis, staging through the workspace, views
and the order of launches are then checked against torch on many layouts.
The kernels themselves run in tests/ops with --backend tilelang on a GPU;
tests/test_tilelang_kernels.py checks they all lower and compile.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

pytest.importorskip("tilelang")
tilelang_backend = pytest.importorskip("operator_runtime._internal.tilelang_backend")
from operator_runtime_testing import make_generator  # noqa: E402

F = tilelang_backend


def _dt(name):
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _row_segments(N, S, step):
    seg = -(-(-(-N // S)) // step) * step
    return [(s * seg, min(N, (s + 1) * seg)) for s in range(S)]


class FakeKernels:
    """Torch versions of the kernel contracts in ops/*/tilelang/*.py."""

    @staticmethod
    def make(op, factory, args):
        key = f"{op}.{factory}"
        if key == "copy.contiguous" or key == "copy.strided" or key == "copy.transpose":
            def run(src, dst):
                if key == "copy.transpose":
                    dst.copy_(src.transpose(1, 2))
                else:
                    dst.copy_(src)
            return run
        if key in ("vector_add.contiguous",):
            return lambda a, b, out: out.copy_((a.float() + b.float()).to(out.dtype))
        if key == "vector_add.row_bias":
            return lambda a, b, out: out.copy_((a.float() + b.float()[None, :]).to(out.dtype))
        if key in ("reduce_sum.group_rows", "softmax.group_rows"):
            vec = 16 // getattr(torch, args[0]).itemsize

            def contract(src, out):  # the vectorized kernels' preconditions
                assert src.shape[1] % vec == 0, f"{key}: row length {src.shape[1]} not a multiple of {vec}"
                assert src.data_ptr() % 16 == 0 and (key == "reduce_sum.group_rows" or out.data_ptr() % 16 == 0)
                if key == "reduce_sum.group_rows":
                    out.copy_(src.float().sum(1).to(out.dtype))
                else:
                    out.copy_(torch.softmax(src.float(), 1).to(out.dtype))
            return contract
        if key == "reduce_sum.warp_rows":
            return lambda src, out: out.copy_(src.float().sum(1).to(out.dtype))
        if key == "reduce_sum.rows":
            vec, unroll, finish = (tuple(args[2:]) + (2, False))[:3]
            step = 256 * vec * unroll

            def run(src, out):
                M, N = src.shape
                S = out.shape[1]
                for s, (a, b) in enumerate(_row_segments(N, S, step)):
                    out[:, s] = src[:, a:b].float().sum(1).to(out.dtype) if b > a else 0

            def finished(src, partials, counters, out):  # the row's last block adds the partials
                assert partials.dtype == torch.float32 and counters.dtype == torch.int32
                assert counters.shape == (src.shape[0],) and not counters.any(), "counters must be 0 on entry"
                run(src, partials)
                out.copy_(partials.sum(1).to(out.dtype))
            return finished if finish else run
        if key == "reduce_sum.columns":
            def run(src, out):
                B, R, C = src.shape
                S = out.shape[1]
                seg = -(-R // S)
                for s in range(S):
                    a, b = s * seg, min(R, (s + 1) * seg)
                    out[:, s, :] = src[:, a:b, :].float().sum(1).to(out.dtype) if b > a else 0
            return run
        if key == "softmax.block_rows":
            threads, per_thread, vec = args[1:4]
            flat = len(args) > 4 and args[4]

            def contract(src, out):  # rows fit; vectors need aligned bases, and whole vectors unless flat
                n = src.shape[1]
                assert threads * per_thread >= n, f"{key}{args}: rows of {n}"
                assert not flat or n >= 2 * vec, f"{key}{args}: flat rows of {n}"
                if vec > 1:
                    assert src.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0
                    assert flat or n % vec == 0, f"{key}{args}: rows of {n}"
                out.copy_(torch.softmax(src.float(), 1).to(out.dtype))
            return contract
        if key == "softmax.warp_rows":
            return lambda src, out: out.copy_(torch.softmax(src.float(), 1).to(out.dtype))
        if key == "softmax.split_stats":
            vec = args[1]
            step = 512 * vec * 2

            def run(src, stats):
                M, N = src.shape
                S = stats.shape[2]
                for s, (a, b) in enumerate(_row_segments(N, S, step)):
                    x = src[:, a:b].float()
                    if b > a:
                        m = x.max(1).values
                        stats[0, :, s] = m
                        stats[1, :, s] = torch.exp(x - m[:, None]).sum(1)
                    else:
                        stats[0, :, s] = -math.inf
                        stats[1, :, s] = 0
            return run
        if key == "softmax.split_apply":
            def run(src, stats, out):
                m = stats[0].max(1).values
                total = (stats[1] * torch.exp(stats[0] - m[:, None])).sum(1)
                out.copy_((torch.exp(src.float() - m[:, None]) / total[:, None]).to(out.dtype))
            return run
        if key == "softmax.column_stats":
            def run(src, stats):
                B, R, C = src.shape
                S = stats.shape[2]
                seg = -(-R // S)
                for s in range(S):
                    a, b = s * seg, min(R, (s + 1) * seg)
                    if b <= a:
                        stats[0, :, s, :] = -math.inf
                        stats[1, :, s, :] = 0
                        continue
                    x = src[:, a:b, :].float()
                    m = x.max(1).values
                    stats[0, :, s, :] = m
                    stats[1, :, s, :] = torch.exp(x - m[:, None, :]).sum(1)
            return run
        if key == "softmax.column_combine":
            def run(stats):  # segment 0 = the merged pair; the other segments left as they were
                m = stats[0].max(1).values
                total = (stats[1] * torch.exp(stats[0] - m[:, None, :])).sum(1)
                stats[0, :, 0, :] = m
                stats[1, :, 0, :] = total
            return run
        if key == "softmax.column_apply":
            merged = len(args) > 3 and args[3]

            def run(src, stats, out):
                if merged:  # reads segment 0 only: poison the others to prove it
                    stats = stats.clone()
                    stats[:, :, 1:, :] = math.nan
                    m, total = stats[0, :, 0, :], stats[1, :, 0, :]
                else:
                    m = stats[0].max(1).values
                    total = (stats[1] * torch.exp(stats[0] - m[:, None, :])).sum(1)
                out.copy_((torch.exp(src.float() - m[:, None, :]) / total[:, None, :]).to(out.dtype))
            return run
        if key == "softmax.column_cluster":
            mod = F.load_kernels("softmax")
            cap = mod.CLUSTER_ROWS * args[1]

            def run(src, out):  # the kernel's preconditions, then softmax down R
                vec = 16 // src.element_size()
                assert src.shape[2] % vec == 0 and src.shape[1] <= cap, f"{key}{args}: {tuple(src.shape)}"
                assert src.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0
                out.copy_(torch.softmax(src.double(), 1).to(out.dtype))
            return run
        raise AssertionError(f"no fake for {key}")


class FakeTable:
    def __init__(self):
        self.used = []

    def get(self, op, factory, args):
        # the factory must exist in the kernel file with this many arguments
        module = F.load_kernels(op)
        assert callable(getattr(module, factory)), (op, factory)
        self.used.append((op, factory, args))
        return FakeKernels.make(op, factory, args)


class FakeOp:
    def __init__(self, name):
        self.name = name


def run_plan(op, out, inputs, params):
    planner = F.Planner(FakeTable())
    descriptor = F.PLANNERS[op](planner, out, *inputs, *params)
    workspace = torch.empty(descriptor.workspace_size, dtype=torch.uint8) if descriptor.workspace_size else None
    descriptor.execute(out, inputs, workspace, None)
    return descriptor


def layout(shape, kind, dtype, gen):
    """A tensor of `shape` in one of several layouts (values from gen)."""
    if kind == "contiguous":
        return torch.randn(shape, generator=gen).to(dtype)
    if kind == "transposed" and len(shape) >= 2:
        return torch.randn(shape[::-1], generator=gen).to(dtype).permute(*range(len(shape) - 1, -1, -1))
    if kind == "sliced":
        big = torch.randn([s * 2 for s in shape], generator=gen).to(dtype)
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if kind == "offset":
        n = math.prod(shape)
        return torch.randn(n + 1, generator=gen).to(dtype)[1:].view(shape)
    return torch.randn(shape, generator=gen).to(dtype)


SHAPES = [(), (1,), (37,), (4, 33), (3, 7, 4), (2, 3, 4, 5), (1, 9, 1), (5, 1), (9, 2000), (3, 70001), (2, 1, 2, 3, 1, 2, 2, 3)]
KINDS = ["contiguous", "transposed", "sliced", "offset"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_copy_plans(shape, kind):
    gen = make_generator(1)
    for sd, dd in [(torch.float32, torch.float32), (torch.float32, torch.bfloat16), (torch.float16, torch.float32)]:
        src = layout(shape, kind, sd, gen)
        for out_kind in ("contiguous", "transposed", "sliced"):
            out = layout(shape, out_kind, dd, gen).fill_(float("nan"))
            d = run_plan("copy", out, (src,), ())
            assert torch.equal(out, src.to(dd)), (d.variant, sd, dd, out_kind)


def test_copy_variants():
    gen = make_generator(2)
    x = torch.randn(64, 48, generator=gen)
    assert run_plan("copy", torch.empty(64, 48), (x,), ()).variant == "contiguous"
    assert run_plan("copy", torch.empty(48, 64), (x.t(),), ()).variant == "transpose"
    assert run_plan("copy", torch.empty(64, 48).t(), (x.t(),), ()).variant == "contiguous"
    out = torch.empty(4, 64, 48)
    assert run_plan("copy", out, (x.expand(4, 64, 48),), ()).variant == "strided"
    assert torch.equal(out, x.expand(4, 64, 48))


@pytest.mark.parametrize("shapes", [((37,), (37,)), ((4, 33), (33,)), ((4, 33), (4, 1)), ((4, 33), (1, 33)),
                                    ((3, 1, 5), (1, 4, 5)), ((), ()), ((2000, 48), (48,)), ((6, 7, 5), (6, 7, 5))],
                         ids=str)
@pytest.mark.parametrize("kinds", list(itertools.product(["contiguous", "transposed", "offset"], repeat=2)))
def test_vector_add_plans(shapes, kinds):
    gen = make_generator(3)
    for dtype in (torch.float32, torch.bfloat16):
        a = layout(shapes[0], kinds[0], dtype, gen)
        b = layout(shapes[1], kinds[1], dtype, gen)
        shape = torch.broadcast_shapes(a.shape, b.shape)
        for out_kind in ("contiguous", "sliced", "transposed"):
            out = layout(shape, out_kind, dtype, gen)
            d = run_plan("vector_add", out, (a.expand(shape), b.expand(shape)), ())
            expected = (a.float() + b.float()).to(dtype)
            assert torch.equal(out, expected), d.variant


def test_vector_add_variants():
    x, bias = torch.randn(64, 48), torch.randn(48)
    assert run_plan("vector_add", torch.empty(64, 48), (x, bias.expand(64, 48)), ()).variant == "row_bias"
    assert run_plan("vector_add", torch.empty(64, 48), (bias.expand(64, 48), x), ()).variant == "row_bias"
    assert run_plan("vector_add", torch.empty(64, 48), (x, x), ()).variant == "contiguous"
    assert run_plan("vector_add", torch.empty(64, 48), (x.t().contiguous().t(), x), ()).variant == \
        "contiguous+staged"


def _out_for(src, dims, keepdim, kind, gen):
    if keepdim:
        shape = tuple(1 if d in dims else s for d, s in enumerate(src.shape))
    else:
        shape = tuple(s for d, s in enumerate(src.shape) if d not in dims)
    return layout(shape, kind, src.dtype, gen).fill_(float("nan"))


REDUCE_CASES = [((4, 37), (1,)), ((5, 6), (0,)), ((3, 7, 4), (1,)), ((3, 5, 4), (0, 2)), ((2, 3, 4, 5), (1, 3)),
                ((3, 4, 5), (0, 1, 2)), ((4, 1, 3), (1,)), ((3, 0), (1,)), ((0, 4), (0, 1)), ((), ()),
                ((37,), (0,)), ((2, 70001), (1,)), ((20000, 5), (1,)), ((2000, 33), (0,)), ((4, 100000), (1,)),
                ((3, 600, 7), (1,)), ((5, 2000), (1,)), ((300000,), (0,))]


@pytest.mark.parametrize("case", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce_sum_plans(case, kind, keepdim):
    shape, dims = case
    gen = make_generator(4)
    src = layout(shape, kind, torch.float32, gen)
    for out_kind in ("contiguous", "sliced"):
        out = _out_for(src, dims, keepdim, out_kind, gen)
        d = run_plan("reduce_sum", out, (src,), (dims, keepdim))
        expected = src.double().sum(dims, keepdim=keepdim) if dims else src.double()
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-3, msg=d.variant)


SOFTMAX_CASES = [((4, 33), 1), ((5, 6), 0), ((3, 7, 4), 1), ((2, 3, 4, 5), 1), ((37,), 0), ((5, 1), 1), ((), 0),
                 ((1, 9, 1), 1), ((3, 20001), 1), ((20000, 7), 1), ((2000, 33), 0), ((2, 40000), 1),
                 ((64, 5000), 1), ((6, 7, 5), 0), ((3, 300, 2), 1),
                 ((7, 2049), 1), ((3, 4095), 1),  # block rows not whole vectors long (flat; 4095 fills 512 x 8)
                 ((600, 2112), 0), ((3000, 1056), 0)]  # column_cluster1, column_cluster4 (contiguous)


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_softmax_plans(case, kind):
    shape, dim = case
    gen = make_generator(5)
    src = layout(shape, kind, torch.float32, gen)
    expected = torch.softmax(src.double(), dim)
    for out_kind in ("contiguous", "sliced", "transposed"):
        out = layout(shape, out_kind, torch.float32, gen).fill_(float("nan"))
        d = run_plan("softmax", out, (src,), (dim,))
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-6, msg=d.variant)
    x = src.clone() if kind == "contiguous" else src
    expected = torch.softmax(x.double(), dim)
    run_plan("softmax", x, (x,), (dim,))
    torch.testing.assert_close(x.double(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,dtype,expected", [
    ((600, 2112), torch.float32, "column_cluster1"),     # 132 tiles of 16 columns: a block per SM
    ((3000, 1056), torch.float32, "column_cluster4"),    # 66 tiles; 3000 rows need 3 blocks of 1024
    ((8192, 1024), torch.bfloat16, "column_cluster8"),
    ((8193, 1024), torch.bfloat16, "columns"),           # longer than 8 blocks hold
    ((600, 2110), torch.float32, "columns"),             # not whole vectors wide
    ((600, 64), torch.float32, "columns"),               # 4 tiles: too few blocks even at 8 per tile
])
def test_softmax_column_cluster_plans(shape, dtype, expected):
    """Which column softmaxes run as one read by a cluster: the rule of
    _column_cluster_size; misaligned bases fall back to the two-pass kernels."""
    gen = make_generator(6)
    src = torch.randn(shape, generator=gen).to(dtype)
    out = torch.full_like(src, float("nan"))
    d = run_plan("softmax", out, (src,), (0,))
    assert d.variant.rstrip("0123456789") == expected.rstrip("0123456789") and d.variant.startswith(expected)
    torch.testing.assert_close(out.double(), torch.softmax(src.double(), 0), rtol=1e-2, atol=1e-6)
    if expected.startswith("column_cluster"):  # an unaligned base: the two-pass kernels, same result
        base = torch.empty(src.numel() + 1, dtype=dtype)
        unaligned = base[1:].view(shape).copy_(src)
        out.fill_(float("nan"))
        run_plan("softmax", out, (unaligned,), (0,))
        torch.testing.assert_close(out.double(), torch.softmax(src.double(), 0), rtol=1e-2, atol=1e-6)


def test_kernel_files_found_by_convention():
    for op in F.OPS:
        path = F.kernel_file(op)
        assert path.parent.name == "tilelang" and path.parent.parent.name == op
        module = F.load_kernels(op)
        assert module.variants(), op


# -- problems past int32 indexing, planned in pieces (tilelang_pieces) ------------------------

PIECE_CASES = [  # (op, input shapes, params, kinds); LIMIT is patched to 1000 elements
    ("copy", [(5000,)], (), ["contiguous"]),
    ("copy", [(60, 70)], (), ["transposed"]),
    ("copy", [(3, 40, 30)], (), ["sliced"]),
    ("vector_add", [(50, 40), (40,)], (), ["contiguous", "contiguous"]),
    ("vector_add", [(2, 3000), (2, 3000)], (), ["offset", "transposed"]),
    ("softmax", [(30, 100)], (1,), ["contiguous"]),
    ("softmax", [(100, 30)], (0,), ["transposed"]),
    ("reduce_sum", [(5000,)], ((0,), False), ["contiguous"]),
    ("reduce_sum", [(4, 3000)], ((1,), False), ["contiguous"]),
    ("reduce_sum", [(4, 3000)], ((1,), True), ["transposed"]),
    ("reduce_sum", [(3000, 4)], ((0,), False), ["contiguous"]),
    ("reduce_sum", [(30, 40, 50)], ((0, 1, 2), False), ["sliced"]),
    ("reduce_sum", [(30, 40, 50)], ((0, 2), True), ["contiguous"]),
]


def run_sized(op, out, inputs, params):
    descriptor = F.plan_descriptor(FakeTable(), op, out, list(inputs), params)
    workspace = torch.empty(descriptor.workspace_size, dtype=torch.uint8) if descriptor.workspace_size else None
    descriptor.execute(out, list(inputs), workspace, None)
    return descriptor


@pytest.mark.parametrize("case", PIECE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_large_problems_run_in_pieces(case, monkeypatch):
    from operator_runtime._internal import tilelang_pieces
    monkeypatch.setattr(tilelang_pieces, "LIMIT", 1000)
    op, shapes, params, kinds = case
    gen = make_generator(6)
    inputs = [layout(s, k, torch.float32, gen) for s, k in zip(shapes, kinds)]
    if op == "vector_add":
        shape = torch.broadcast_shapes(*(t.shape for t in inputs))
        expected = inputs[0].double() + inputs[1].double()
        inputs = [t.expand(shape) for t in inputs]
    elif op == "copy":
        expected = inputs[0].double()
    elif op == "softmax":
        expected = torch.softmax(inputs[0].double(), params[0])
    else:
        expected = inputs[0].double().sum(params[0], keepdim=params[1])
    out = torch.full(expected.shape, float("nan"))
    d = run_sized(op, out, inputs, params)
    assert "+pieces" in d.variant or "+partials" in d.variant, d.variant
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4, msg=d.variant)


def test_a_row_too_long_for_a_piece_is_refused(monkeypatch):
    from operator_runtime._internal import tilelang_pieces
    monkeypatch.setattr(tilelang_pieces, "LIMIT", 1000)
    x = torch.randn(3, 2000)
    with pytest.raises(F.OperatorRuntimeError, match="pieces hold at most 1000 elements"):
        run_sized("softmax", torch.empty_like(x), [x], (1,))


def test_bench_reports_the_lowest_ratios(capsys):
    from operator_runtime._internal.tilelang_bench import print_targets
    print_targets([("copy", "64M", "float32", 0.96, 0.95), ("softmax", "long", "float32", 27.0, 0.899),
                   ("reduce_sum", "dim0", "bfloat16", 1.13, float("nan")), ("copy", "t", "float32", 0.5, 1.2)])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["lowest vs nvidia: 0.899x (softmax long float32); target >= 0.90: MISSED",
                     "lowest vs torch (reduce_sum, softmax): 1.130x (reduce_sum dim0 bfloat16); target >= 1.00: met"]
