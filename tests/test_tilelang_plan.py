"""The TileLang backend's planning half, checked without a GPU.

Every kernel is replaced by a torch emulation of its contract (same
arguments, same segmenting of split reductions, the op's own torch
reference from its description for the values), and the planner's steps
run on CPU tensors: layout analysis, staging through the workspace, views
and the order of launches are then checked against torch on many layouts.
The ops are those with a kernel file (ops/<op>/tilelang/), found as the
backend finds them; an op built on a shared layer (elementwise, softmax
family) gets that layer's layout tests. The kernels themselves run in
tests/test_ops.py with --backend tilelang on a GPU;
tests/test_tilelang_kernels.py checks they all lower.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("tilelang")
from harness import make_inputs, spec_for, upcast  # noqa: E402
from operator_runtime._internal import tilelang_pieces  # noqa: E402
from operator_runtime._internal.tilelang_backend import TileLangBackend, plan_descriptor  # noqa: E402
from operator_runtime._internal.tilelang_elementwise import Binary, Unary  # noqa: E402
from operator_runtime._internal.tilelang_kernels import discovered_ops, kernel_file, load_kernels  # noqa: E402
from operator_runtime._internal.tilelang_planning import Planner  # noqa: E402
from operator_runtime._internal.tilelang_row_sum import (ROW_SUM_WARP_MAX, SEGMENT_THREADS, UNROLL,  # noqa: E402
                                                         RowSumFamily)
from operator_runtime._internal.tilelang_softmax import CLUSTER_ROWS, SoftmaxFamily  # noqa: E402
from operator_runtime.errors import BackendUnavailableError, OperatorRuntimeError  # noqa: E402
from operator_runtime.ops import DESCRIPTIONS  # noqa: E402
from operator_runtime_testing import make_generator, make_out  # noqa: E402

TILELANG_OPS = discovered_ops()


def layer_of(op):
    """The shared-layer instance an op's kernel file is built on (None: its own planner)."""
    return getattr(load_kernels(op).plan, "__self__", None)


def ops_on(layer_type) -> list:
    return [op for op in TILELANG_OPS if isinstance(layer_of(op), layer_type)]


def reference(name):
    return DESCRIPTIONS[name].reference


def _row_segments(N, S, step):
    seg = -(-(-(-N // S)) // step) * step
    return [(s * seg, min(N, (s + 1) * seg)) for s in range(S)]


# -- kernel emulations ---------------------------------------------------------------------------

def _elementwise_value(op, tensors, out_dtype):
    """fn of the inputs, as the kernels compute it: in op.compute, rounded once."""
    if op.compute is not None:
        tensors = [t.to(getattr(torch, op.compute)) for t in tensors]
    return reference(op.name)(*tensors).to(out_dtype)


def _vector_contract(key, args, vec, *tensors, whole=None):
    if vec > 1:
        assert all(t.data_ptr() % 16 == 0 for t in tensors), f"{key}{args}: unaligned vectorized call"
        assert whole is None or whole % vec == 0, f"{key}{args}: length {whole} not whole vectors"


def elementwise_fake(name, args):
    op = args[0]
    if name == "contiguous":
        def run(*tensors):
            *ins, out = tensors
            _vector_contract(name, args, args[3], *tensors)
            out.copy_(_elementwise_value(op, ins, out.dtype))
        return run
    if name == "row_bias":
        vec, bias_first = args[2], args[3]

        def run(a, b, out):
            _vector_contract(name, args, vec, a, b, out, whole=a.shape[1])
            pair = [b[None, :].expand_as(a), a] if bias_first else [a, b[None, :].expand_as(a)]
            out.copy_(_elementwise_value(op, pair, out.dtype))
        return run
    if name == "transpose":
        return lambda src, dst: dst.copy_(_elementwise_value(op, [src.transpose(1, 2)], dst.dtype))
    if name == "strided":
        return lambda src, dst: dst.copy_(_elementwise_value(op, [src], dst.dtype))
    raise AssertionError(f"no fake for elementwise {name}")


def _column_stats(x):
    """(max, sum of exp(x - max)) over dim 1 of a float64 tensor."""
    m = x.max(1).values
    return m, torch.exp(x - m.unsqueeze(1)).sum(1)


def _merged(ms, ss, dim):
    m = ms.max(dim).values
    return m, (ss * torch.exp(ms - m.unsqueeze(dim))).sum(dim)


def row_sum_fake(name, args):
    """The two-input kernels over dim 1 of [M, N] (vectorized: aligned bases,
    rows of any length); the split pair through float32 segment sums of
    term(a, b) in the workspace."""
    fam, vec = args[0], (args[3] if name in ("row_sum_block_rows", "row_sum_held_rows")
                         else args[2] if len(args) > 2 else 1)
    assert isinstance(fam, RowSumFamily)

    def whole_rows(a, b, out):
        assert name != "row_sum_warp_rows" or a.shape[1] <= ROW_SUM_WARP_MAX
        _vector_contract(name, args, vec, a, b, out)
        out.copy_(reference(fam.name)(a.double(), b.double(), 1).to(out.dtype))

    def partials(a, b, sums):
        _vector_contract(name, args, vec, a, b)
        assert sums.dtype == torch.float32 and sums.is_contiguous()
        terms = fam.term(a.double(), b.double())
        for s, (lo, hi) in enumerate(_row_segments(a.shape[1], sums.shape[1], SEGMENT_THREADS * vec * UNROLL)):
            sums[:, s] = terms[:, lo:hi].sum(1).float()

    def apply(a, b, sums, out):
        terms = fam.term(a.double(), b.double()).sum(1)
        torch.testing.assert_close(sums.double().sum(1), terms, rtol=1e-5, atol=1e-5)  # the partials' segments add up
        whole_rows(a, b, out)

    def column_sums(a, b, sums):
        _vector_contract(name, args, vec, a, b, whole=a.shape[2])
        assert sums.dtype == torch.float32 and sums.is_contiguous() and sums.shape[::2] == a.shape[::2]
        terms = fam.term(a.double(), b.double())
        for s, (lo, hi) in enumerate(_row_segments(a.shape[1], sums.shape[1], 1)):
            sums[:, s] = terms[:, lo:hi].sum(1).float()

    def column_apply(a, b, sums, out):
        _vector_contract(name, args, vec, a, b, out, whole=a.shape[2])
        terms = fam.term(a.double(), b.double()).sum(1)
        torch.testing.assert_close(sums.double().sum(1), terms, rtol=1e-5, atol=1e-5)
        out.copy_(reference(fam.name)(a.double(), b.double(), 1).to(out.dtype))

    return {"row_sum_partials": partials, "row_sum_apply": apply, "row_sum_column_sums": column_sums,
            "row_sum_column_apply": column_apply}.get(name, whole_rows)


def softmax_fake(name, args):
    if name.startswith("row_sum_"):
        return row_sum_fake(name, args)
    fam = args[0] if args and isinstance(args[0], SoftmaxFamily) else None

    def apply(src, out):
        out.copy_(reference(fam.name)(src.double(), 1).to(out.dtype))

    if name in ("warp_rows", "group_rows", "block_rows"):
        def run(src, out):
            n = src.shape[1]
            if name == "group_rows":
                vec = 16 // src.element_size()
                _vector_contract(name, args, vec, src, out, whole=n)
            if name == "block_rows":
                threads, per_thread, vec = args[2:5]
                flat = len(args) > 5 and args[5]
                assert threads * per_thread >= n, f"{name}{args}: rows of {n}"
                assert not flat or n >= 2 * vec, f"{name}{args}: flat rows of {n}"
                _vector_contract(name, args, vec, src, out, whole=None if flat else n)
            apply(src, out)
        return run
    if name in ("split_stats", "column_stats"):
        def stats_of(src, stats):
            columns = name == "column_stats"
            x = src.double() if columns else src.double().unsqueeze(2)  # [B, R, C]: stats over R
            S = stats.shape[2]
            R = x.shape[1]
            bounds = ([(s * -(-R // S), min(R, (s + 1) * -(-R // S))) for s in range(S)] if columns
                      else _row_segments(R, S, 512 * args[1] * 2))
            for s, (a, b) in enumerate(bounds):
                target = (slice(None), s) if not columns else (slice(None), s, slice(None))
                if b <= a:
                    stats[(0, *target)], stats[(1, *target)] = -math.inf, 0
                    continue
                m, total = _column_stats(x[:, a:b])
                stats[(0, *target)] = (m if columns else m[:, 0]).float()
                stats[(1, *target)] = (total if columns else total[:, 0]).float()
        return stats_of
    if name == "column_combine":
        def combine(stats):  # segment 0 = the merged pair; the other segments left as they were
            m, total = _merged(stats[0].double(), stats[1].double(), 1)
            stats[0, :, 0, :], stats[1, :, 0, :] = m.float(), total.float()
        return combine
    if name in ("split_apply", "column_apply"):
        merged = name == "column_apply" and len(args) > 4 and args[4]

        def run(src, stats, out):  # the merged statistics must be the columns' (rows') own
            x = src.double() if name == "column_apply" else src.double().unsqueeze(2)
            if merged:  # reads segment 0 only
                m, total = stats[0, :, 0].double(), stats[1, :, 0].double()
            else:  # every segment's pair, [2, rows or B, S(, C)]
                m, total = _merged(stats[0].double(), stats[1].double(), 1)
            m = m if name == "column_apply" else m.unsqueeze(1)
            total = total if name == "column_apply" else total.unsqueeze(1)
            true_m, true_total = _column_stats(x)
            torch.testing.assert_close(m, true_m, rtol=1e-6, atol=0, equal_nan=True)
            torch.testing.assert_close(total, true_total, rtol=1e-5, atol=0, equal_nan=True)
            apply(src, out)
        return run
    if name == "column_cluster":
        def run(src, out):  # the kernel's preconditions, then the op down R
            vec = 16 // src.element_size()
            assert src.shape[2] % vec == 0 and src.shape[1] <= CLUSTER_ROWS * args[2], f"{name}{args}"
            _vector_contract(name, args, vec, src, out)
            apply(src, out)
        return run
    raise AssertionError(f"no fake for softmax family {name}")


def reduce_sum_fake(name, args):
    if name in ("group_rows", "warp_rows"):
        def run(src, out):
            if name == "group_rows":
                _vector_contract(name, args, 16 // src.element_size(), src, whole=src.shape[1])
            out.copy_(src.double().sum(1).to(out.dtype))
        return run
    if name == "rows":
        vec, unroll, finish = (tuple(args[2:]) + (2, False))[:3]
        step = 256 * vec * unroll

        def run(src, out):
            S = out.shape[1]
            for s, (a, b) in enumerate(_row_segments(src.shape[1], S, step)):
                out[:, s] = src[:, a:b].double().sum(1).to(out.dtype) if b > a else 0

        def finished(src, partials, counters, out):  # the row's last block adds the partials
            assert partials.dtype == torch.float32 and counters.dtype == torch.int32
            assert counters.shape == (src.shape[0],) and not counters.any(), "counters must be 0 on entry"
            run(src, partials)
            out.copy_(partials.double().sum(1).to(out.dtype))
        return finished if finish else run
    if name == "columns":
        def run(src, out):
            B, R, C = src.shape
            S = out.shape[1]
            seg = -(-R // S)
            for s in range(S):
                a, b = s * seg, min(R, (s + 1) * seg)
                out[:, s, :] = src[:, a:b, :].double().sum(1).to(out.dtype) if b > a else 0
        return run
    if name == "scale_sums":
        def run(sums, out, scale):
            assert sums.dtype == torch.float32 and sums.is_contiguous() and isinstance(scale, float)
            out.copy_((sums.double() * scale).float().to(out.dtype))
        return run
    raise AssertionError(f"no fake for reduce_sum {name}")


FAKES = {"tilelang_elementwise": elementwise_fake, "tilelang_softmax": softmax_fake, "tilelang_row_sum": softmax_fake,
         "reduce_sum": reduce_sum_fake}


class FakeTable:
    """Stands in for the KernelTable: checks each kernel a plan names exists
    where tilelang_compile finds it and takes these arguments, then
    returns its emulation."""

    def __init__(self):
        self.used = []

    def get(self, factory, args):
        module = sys.modules[factory.__module__]
        assert getattr(module, factory.__name__) is factory, f"{factory} is not a module-level factory"
        inspect.signature(factory).bind(*args)
        self.used.append((factory, args))
        return FAKES[factory.__module__.rsplit(".", 1)[-1]](factory.__name__, args)


def run_plan(op, out, inputs, params=()):
    descriptor = load_kernels(op).plan(Planner(FakeTable()), out, list(inputs), tuple(params))
    workspace = torch.empty(descriptor.workspace_size, dtype=torch.uint8) if descriptor.workspace_size else None
    descriptor.execute(out, list(inputs), workspace, None)
    return descriptor


def layout(shape, kind, dtype, gen):
    """A tensor of `shape` in one of several layouts (values from gen)."""
    if kind == "transposed" and len(shape) >= 2:
        return torch.randn(shape[::-1], generator=gen).to(dtype).permute(*range(len(shape) - 1, -1, -1))
    if kind == "sliced":
        big = torch.randn([s * 2 for s in shape], generator=gen).to(dtype)
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if kind == "offset":
        return torch.randn(math.prod(shape) + 1, generator=gen).to(dtype)[1:].view(shape)
    return torch.randn(shape, generator=gen).to(dtype)


KINDS = ["contiguous", "transposed", "sliced", "offset"]


# -- every op with a kernel file, on its description's own cases --------------------------------

DESCRIBED = [(op, case) for op in TILELANG_OPS if op in DESCRIPTIONS for case in DESCRIPTIONS[op].cases]


@pytest.mark.parametrize("op,case", DESCRIBED, ids=[f"{o}-{c.name}" for o, c in DESCRIBED])
def test_description_cases_plan(op, case):
    description = DESCRIPTIONS[op]
    gen = make_generator(7)
    params = description.bound_params(case.params)
    for dtype in (torch.float32, torch.bfloat16):
        inputs = make_inputs(case, dtype, "cpu", gen)
        out_shape = case.out_shape or description.plan(None, *inputs, *params).out_shape
        out = make_out(out_shape, dtype, "cpu", case.out_layout, gen)
        plan = description.plan(out, *inputs, *params)
        d = run_plan(op, out, plan.inputs, plan.params)
        expected = description.reference(*upcast(inputs), **case.params)
        spec_for(op).check(out, expected.expand(out_shape), inputs, case.params,
                                     f"{op} {case.name} {dtype} -> {d.variant}")


IN_PLACE = [op for op in TILELANG_OPS if op in DESCRIPTIONS and DESCRIPTIONS[op].in_place]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", IN_PLACE)
def test_in_place_plans(op, kind):
    """out is each input itself (same storage, shape and strides)."""
    description = DESCRIPTIONS[op]
    gen = make_generator(8)
    params = description.bound_params({})
    for which in range(len(description.inputs)):
        inputs = [layout((7, 33), kind, torch.float32, gen) for _ in description.inputs]
        originals = [t.clone() for t in inputs]
        expected = description.reference(*upcast(inputs))
        plan = description.plan(inputs[which], *inputs, *params)
        d = run_plan(op, inputs[which], plan.inputs, plan.params)
        spec_for(op).check(inputs[which], expected, originals, {}, f"{op} into input {which}: {d.variant}")


# -- the elementwise layer --------------------------------------------------------------------

SHAPES = [(), (1,), (37,), (4, 33), (3, 7, 4), (2, 3, 4, 5), (1, 9, 1), (5, 1), (9, 2000), (3, 70001),
          (2, 1, 2, 3, 1, 2, 2, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", ops_on(Unary))
def test_unary_plans(op, shape, kind):
    gen = make_generator(1)
    pairs = [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16)]
    if layer_of(op).converts:
        pairs += [(torch.float32, torch.bfloat16), (torch.float16, torch.float32)]
    for sd, dd in pairs:
        src = layout(shape, kind, sd, gen)
        expected = _elementwise_value(layer_of(op), [src], dd)
        for out_kind in ("contiguous", "transposed", "sliced"):
            out = layout(shape, out_kind, dd, gen).fill_(float("nan"))
            d = run_plan(op, out, (src,))
            assert torch.equal(out, expected), (d.variant, sd, dd, out_kind)


@pytest.mark.parametrize("op", ops_on(Unary))
def test_unary_variants(op):
    gen = make_generator(2)
    x = torch.randn(64, 48, generator=gen)
    assert run_plan(op, torch.empty(64, 48), (x,)).variant == "contiguous"
    assert run_plan(op, torch.empty(48, 64), (x.t(),)).variant == "transpose"
    assert run_plan(op, torch.empty(64, 48).t(), (x.t(),)).variant == "contiguous"
    out = torch.empty(4, 64, 48)
    assert run_plan(op, out, (x.expand(4, 64, 48),)).variant == "strided"
    assert torch.equal(out, _elementwise_value(layer_of(op), [x.expand(4, 64, 48)], out.dtype))


BINARY_SHAPES = [((37,), (37,)), ((4, 33), (33,)), ((4, 33), (4, 1)), ((4, 33), (1, 33)), ((3, 1, 5), (1, 4, 5)),
                 ((), ()), ((2000, 48), (48,)), ((48,), (2000, 48)), ((6, 7, 5), (6, 7, 5))]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("kinds", [(a, b) for a in ("contiguous", "transposed", "offset")
                                   for b in ("contiguous", "transposed", "offset")])
@pytest.mark.parametrize("op", ops_on(Binary))
def test_binary_plans(op, shapes, kinds):
    gen = make_generator(3)
    for dtype in (torch.float32, torch.bfloat16):
        a = layout(shapes[0], kinds[0], dtype, gen)
        b = layout(shapes[1], kinds[1], dtype, gen)
        shape = torch.broadcast_shapes(a.shape, b.shape)
        expected = _elementwise_value(layer_of(op), [a.expand(shape), b.expand(shape)], dtype)
        for out_kind in ("contiguous", "sliced", "transposed"):
            out = layout(shape, out_kind, dtype, gen)
            d = run_plan(op, out, (a.expand(shape), b.expand(shape)))
            assert torch.equal(out, expected), d.variant


@pytest.mark.parametrize("op", ops_on(Binary))
def test_binary_variants(op):
    x, bias = torch.randn(64, 48), torch.randn(48)
    assert run_plan(op, torch.empty(64, 48), (x, bias.expand(64, 48))).variant == "row_bias"
    out = torch.empty(64, 48)
    assert run_plan(op, out, (bias.expand(64, 48), x)).variant == "row_bias"  # operand order kept
    assert torch.equal(out, _elementwise_value(layer_of(op), [bias.expand(64, 48), x], out.dtype))
    assert run_plan(op, torch.empty(64, 48), (x, x)).variant == "contiguous"
    assert run_plan(op, torch.empty(64, 48), (x.t().contiguous().t(), x)).variant == "contiguous+staged"


# -- reduce_sum -----------------------------------------------------------------------------------

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


BROADCAST_CASES = [  # (shape, strides, dims): reduced dims of stride 0, alone or beside real ones
    ((2 ** 36 // 3, 3), (0, 1), (0,)),           # columns of one broadcast row: no staged copy
    ((2 ** 20, 3), (0, 1), (0, 1)),               # a scalar: a broadcast and a real reduced dim
    ((5, 2 ** 30), (1, 0), (1,)),                 # rows of one broadcast value each
    ((7, 2 ** 20, 40), (40, 0, 1), (1,)),         # columns over batches
    ((2 ** 20, 6, 40), (0, 40, 1), (0, 1)),       # a broadcast and a real reduced dim: columns
    ((3, 2 ** 20, 50), (50, 0, 1), (1, 2)),       # ... rows
    ((4, 2 ** 20, 5, 3), (3, 0, 12, 1), (1, 2)),  # staged (kept dims not coalescable in out's order)
]


@pytest.mark.parametrize("shape,strides,dims", BROADCAST_CASES, ids=str)
def test_reduce_sum_broadcast_plans(shape, strides, dims):
    """Broadcast reduced dims are dropped and the sums scaled by their size:
    the workspace holds only the real elements' sums (never a staged copy of
    the broadcast ones) and the result is the exact sum, rounded once."""
    gen = make_generator(6)
    real = [s if st else 1 for s, st in zip(shape, strides)]
    src = torch.randn(real, generator=gen).as_strided(shape, strides)
    for keepdim in (False, True):
        out = _out_for(src, dims, keepdim, "sliced", gen)
        d = run_plan("reduce_sum", out, (src,), (dims, keepdim))
        count = math.prod(shape[k] for k in dims if strides[k] == 0)
        expected = src.as_strided(real, strides).double().sum(dims, keepdim=keepdim) * count
        if not keepdim:
            expected = expected.reshape(out.shape)
        assert d.workspace_size < 2 ** 20, (d.variant, d.workspace_size)
        torch.testing.assert_close(out.double(), expected.float().double(), rtol=2 ** -22, atol=0, msg=d.variant)


# -- the softmax family ---------------------------------------------------------------------------

SOFTMAX_CASES = [((4, 33), 1), ((5, 6), 0), ((3, 7, 4), 1), ((2, 3, 4, 5), 1), ((37,), 0), ((5, 1), 1), ((), 0),
                 ((1, 9, 1), 1), ((3, 20001), 1), ((20000, 7), 1), ((2000, 33), 0), ((2, 40000), 1),
                 ((64, 5000), 1), ((6, 7, 5), 0), ((3, 300, 2), 1),
                 ((7, 2049), 1), ((3, 4095), 1),  # block rows not whole vectors long (flat; 4095 fills 512 x 8)
                 ((600, 2112), 0), ((3000, 1056), 0)]  # column_cluster1, column_cluster4 (contiguous)


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", ops_on(SoftmaxFamily))
def test_softmax_family_plans(op, case, kind):
    shape, dim = case
    gen = make_generator(5)
    src = layout(shape, kind, torch.float32, gen)
    expected = reference(op)(src.double(), dim)
    for out_kind in ("contiguous", "sliced", "transposed"):
        out = layout(shape, out_kind, torch.float32, gen).fill_(float("nan"))
        d = run_plan(op, out, (src,), (dim,))
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-6, msg=d.variant)
    x = src.clone() if kind == "contiguous" else src
    expected = reference(op)(x.double(), dim)
    run_plan(op, x, (x,), (dim,))
    torch.testing.assert_close(x.double(), expected, rtol=1e-5, atol=1e-6)


ROW_SUM_CASES = [(((4, 33), 1), "row_sum_warp_rows"), (((64, 5000), 1), "row_sum_held_rows512"),
                 (((64, 5001), 1), "row_sum_held_rows512"), (((600, 2000), 1), "row_sum_held_rows256"),
                 (((600, 9000), 1), "row_sum_held_rows1024"), (((300, 20000), 1), "row_sum_block_rows1024"),
                 (((300, 20001), 1), "row_sum_block_rows1024"), (((2, 40000), 1), r"row_sum_split\d+"),
                 (((3, 40001), 1), r"row_sum_split\d+"), (((2 ** 20,), 0), r"row_sum_split\d+"),
                 (((5, 6), 0), r"row_sum_columns\d+"), (((3000, 4), 0), r"row_sum_columns\d+"),
                 (((40000, 3), 0), r"row_sum_columns\d+"), (((3, 50, 64), 1), r"row_sum_columns\d+"),
                 (((2, 300, 7, 5), 1), r"row_sum_columns\d+")]


@pytest.mark.parametrize("case,expected", ROW_SUM_CASES, ids=[str(c[0]) for c in ROW_SUM_CASES])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", ops_on(RowSumFamily))
def test_row_sum_family_plans(op, case, expected, kind):
    """Every row form (a warp, a block, segments of few long rows) on every
    layout, into out of three layouts and into each input."""
    shape, dim = case
    gen = make_generator(6)
    a, b = layout(shape, kind, torch.float32, gen), layout(shape, kind, torch.float32, gen)
    want = reference(op)(a.double(), b.double(), dim)
    for out_kind in ("contiguous", "sliced", "transposed"):
        out = layout(shape, out_kind, torch.float32, gen).fill_(float("nan"))
        d = run_plan(op, out, (a, b), (dim,))
        torch.testing.assert_close(out.double(), want, rtol=1e-5, atol=1e-6, msg=d.variant)
        if kind == out_kind == "contiguous":
            assert re.fullmatch(expected, d.variant), d.variant
    for which in (0, 1):
        x = [a.clone(), b.clone()]
        run_plan(op, x[which], x, (dim,))
        torch.testing.assert_close(x[which].double(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,dtype,expected", [
    ((600, 2112), torch.float32, "column_cluster1"),     # 132 tiles of 16 columns: a block per SM
    ((3000, 1056), torch.float32, "column_cluster4"),    # 66 tiles; 3000 rows need 3 blocks of 1024
    ((8192, 1024), torch.bfloat16, "column_cluster8"),
    ((8193, 1024), torch.bfloat16, "columns"),           # longer than 8 blocks hold
    ((600, 2110), torch.float32, "columns"),             # not whole vectors wide
    ((600, 64), torch.float32, "columns"),               # 4 tiles: too few blocks even at 8 per tile
])
@pytest.mark.parametrize("op", ops_on(SoftmaxFamily))
def test_softmax_family_column_cluster_plans(op, shape, dtype, expected):
    """Which column ops run as one read by a cluster (column_cluster_size);
    misaligned bases fall back to the two-pass kernels."""
    gen = make_generator(6)
    src = torch.randn(shape, generator=gen).to(dtype)
    want = reference(op)(src.double(), 0)
    out = torch.full_like(src, float("nan"))
    d = run_plan(op, out, (src,), (0,))
    assert d.variant.rstrip("0123456789") == expected.rstrip("0123456789") and d.variant.startswith(expected)
    torch.testing.assert_close(out.double(), want, rtol=1e-2, atol=2e-2)
    if expected.startswith("column_cluster"):  # an unaligned base: the two-pass kernels, same result
        base = torch.empty(src.numel() + 1, dtype=dtype)
        unaligned = base[1:].view(shape).copy_(src)
        out.fill_(float("nan"))
        run_plan(op, out, (unaligned,), (0,))
        torch.testing.assert_close(out.double(), want, rtol=1e-2, atol=2e-2)


# -- discovery and layering --------------------------------------------------------------------------

def test_kernel_files_found_by_convention():
    folders = {p.parent.parent.name for p in Path(__file__).resolve().parents[1].glob("ops/*/tilelang/*_tilelang.py")}
    assert folders <= set(TILELANG_OPS)
    for op in TILELANG_OPS:
        path = kernel_file(op)
        assert path.parent.name == "tilelang" and path.parent.parent.name == op
        module = load_kernels(op)
        assert callable(module.plan) and module.variants(), op


def test_an_op_without_a_kernel_file_is_unavailable():
    with pytest.raises(BackendUnavailableError, match="no_such_op has no TileLang kernel"):
        load_kernels("no_such_op")

    class Op:
        name = "no_such_op"

    backend = object.__new__(TileLangBackend)  # create refuses before it needs a GPU
    with pytest.raises(BackendUnavailableError, match="has no TileLang kernel"):
        backend.create(Op(), torch.empty(3), [torch.empty(3)], ())


PACKAGE = Path(inspect.getfile(Planner)).resolve().parents[1]
TILELANG_MODULES = sorted(PACKAGE.glob("_internal/tilelang_*.py")) + [PACKAGE / "tilelang_authoring.py"]


def _imports(path: Path):
    """(modules imported at module level, modules imported inside a function or class) of a file."""
    top, nested = set(), set()

    def visit(node, inside):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = ({a.name for a in node.names} if isinstance(node, ast.Import)
                     else {"." * node.level + (node.module or "")})
            (nested if inside else top).update(names)
        inside = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(path.read_text()), False)
    return top, nested


def test_tilelang_modules_are_layered():
    """No import inside a function, and no cycle among the backend's modules."""
    graph = {}
    for path in TILELANG_MODULES:
        top, nested = _imports(path)
        assert not nested, f"{path.name} imports inside a function: {nested}"
        graph[path.stem] = {name.rsplit(".", 1)[-1] for name in top if "tilelang_" in name} - {path.stem}
    done, visiting = set(), []

    def visit(module):
        assert module not in visiting, f"import cycle: {' -> '.join(visiting + [module])}"
        if module in done:
            return
        visiting.append(module)
        for dependency in graph.get(module, ()):
            visit(dependency)
        visiting.pop()
        done.add(module)

    for module in graph:
        visit(module)


@pytest.mark.parametrize("op", TILELANG_OPS)
def test_kernel_files_import_only_the_authoring_module(op):
    top, nested = _imports(kernel_file(op))
    ours = {name for name in top | nested if name.startswith("operator_runtime") or name.startswith(".")}
    assert ours <= {"operator_runtime.tilelang_authoring"}, ours


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
    descriptor = plan_descriptor(FakeTable(), op, out, list(inputs), params)
    workspace = torch.empty(descriptor.workspace_size, dtype=torch.uint8) if descriptor.workspace_size else None
    descriptor.execute(out, list(inputs), workspace, None)
    return descriptor


@pytest.mark.parametrize("case", PIECE_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_large_problems_run_in_pieces(case, monkeypatch):
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


MEDIUM = [(op, case) for op, case in DESCRIBED if case.name.startswith("medium")]


@pytest.mark.parametrize("op,case", MEDIUM, ids=[f"{o}-{c.name}" for o, c in MEDIUM])
def test_described_medium_cases_run_in_pieces(op, case, monkeypatch):
    """Every op's medium cases with pieces of at most 1000 elements: cut as
    its kernel file allows, or refused where no cut fits (a row too long)."""
    monkeypatch.setattr(tilelang_pieces, "LIMIT", 1000)
    description = DESCRIPTIONS[op]
    gen = make_generator(9)
    params = description.bound_params(case.params)
    inputs = make_inputs(case, torch.float32, "cpu", gen)
    out_shape = case.out_shape or description.plan(None, *inputs, *params).out_shape
    out = make_out(out_shape, torch.float32, "cpu", case.out_layout, gen)
    plan = description.plan(out, *inputs, *params)
    try:
        d = run_sized(op, out, plan.inputs, plan.params)
    except OperatorRuntimeError as error:
        assert "pieces hold at most 1000 elements" in str(error)
        return
    assert "+pieces" in d.variant or "+partials" in d.variant, d.variant
    expected = description.reference(*upcast(inputs), **case.params)
    spec_for(op).check(out, expected.expand(out_shape), inputs, case.params, f"{op} {d.variant}")


def test_a_row_too_long_for_a_piece_is_refused(monkeypatch):
    monkeypatch.setattr(tilelang_pieces, "LIMIT", 1000)
    x = torch.randn(3, 2000)
    with pytest.raises(OperatorRuntimeError, match="pieces hold at most 1000 elements"):
        run_sized("softmax", torch.empty_like(x), [x], (1,))
