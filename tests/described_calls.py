"""Small calls of every discovered op, built from its OpDescription, for the
generic tests (test_api, test_execution, test_fast_path): nothing here names
an op. A call's inputs, params and out come from one of the description's
own cases; its reference and its accuracy check from the description
(through harness.spec_for)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

import operator_runtime as oprt
from harness import spec_for, upcast
from operator_runtime.description import REQUIRED, Case, OpDescription
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import make_out, make_tensor

OP_NAMES = tuple(DESCRIPTIONS)


def forms(name: str):
    """(op, op_, prepare_op) of a discovered op."""
    return getattr(oprt, name), getattr(oprt, f"{name}_"), getattr(oprt, f"prepare_{name}")


def operator(name: str):
    """The op's engine (operator_runtime._internal.operator.Operator)."""
    return getattr(oprt, name).operator


def planned_out_shape(description: OpDescription, shapes, params: dict, out_shape=None) -> tuple:
    """The out shape of a call on inputs of `shapes` (planned on meta tensors)."""
    if out_shape is not None:
        return tuple(out_shape)
    inputs = [torch.empty(s, device="meta") for s in shapes]
    return tuple(description.plan(None, *inputs, *description.bound_params(params)).out_shape)


def _plans(description: OpDescription, case: Case) -> bool:
    try:
        planned_out_shape(description, case.shapes, case.params, case.out_shape)
    except (TypeError, ValueError):
        return False
    return True


def _numel(shape) -> int:
    return torch.Size(shape).numel()


@functools.lru_cache(maxsize=None)
def small_case(name: str) -> Case:
    """A small case of op `name` for the API tests: no input or out empty or
    0-d, at most 3 dims, out given by the plan. Preferred: a non-contiguous
    input or out, inputs of different shapes (broadcasting), an out of 2+ dims."""
    description = DESCRIPTIONS[name]
    best, best_score = None, None
    for case in description.cases:
        if case.out_shape is not None or not _plans(description, case):
            continue
        out = planned_out_shape(description, case.shapes, case.params)
        if not all(1 <= len(s) <= 3 and 2 <= _numel(s) <= 4096 for s in case.shapes) or _numel(out) < 2:
            continue
        score = (any(k != "contiguous" for k in (*case.layouts, case.out_layout)),
                 len(set(map(tuple, case.shapes))) > 1, len(out) >= 2)
        if best_score is None or score > best_score:
            best, best_score = case, score
    assert best is not None, f"{name}: no case is small, non-empty and at least 1-d"
    return best


@functools.lru_cache(maxsize=None)
def batch_case(name: str) -> Case:
    """The smallest non-empty case whose inputs share a rank: a leading dim
    of any size n can be put in front of every input (see batched())."""
    description = DESCRIPTIONS[name]
    cases = [c for c in description.cases
             if c.out_shape is None and len({len(s) for s in c.shapes}) == 1 and all(_numel(s) for s in c.shapes)
             and len(c.shapes[0]) < 8 and _plans(description, c)]
    assert cases, f"{name}: no case of inputs of one rank"
    return min(cases, key=lambda c: sum(_numel(s) for s in c.shapes))


def batched(name: str, n: int, device, dtype=torch.float32, storage=None):
    """(inputs, params) of batch_case(name) with a leading dim of size n;
    storage: {} to share buffers between calls (views [:n] of one tensor per input)."""
    case = batch_case(name)
    inputs = []
    for k, shape in enumerate(case.shapes):
        key = (k, dtype, str(device))
        if storage is None or key not in storage or storage[key].shape[0] < n:
            buffer = torch.ones((max(n, 1),) + tuple(shape), dtype=dtype, device=device)
            if storage is not None:
                storage[key] = buffer
        else:
            buffer = storage[key]
        inputs.append(buffer[:n])
    return inputs, dict(case.params)


def shaped_params(name: str, shape) -> dict | None:
    """Params for op `name` on inputs all of `shape`: those of the first case
    whose inputs share one shape of that rank (None when no case fits)."""
    description = DESCRIPTIONS[name]
    for case in description.cases:
        if (case.out_shape is None and len(set(map(tuple, case.shapes))) == 1 and len(case.shapes[0]) == len(shape)
                and _plans(description, Case(case.name, [tuple(shape)] * len(case.shapes), params=case.params))):
            return dict(case.params)
    return None


def default_params(description: OpDescription, inputs) -> tuple:
    """The op's params in order: their defaults, or (where one has none) the
    params of the first case that plans on `inputs`."""
    if all(p.default is not REQUIRED for p in description.params):
        return description.bound_params({})
    for case in description.cases:
        try:
            params = description.bound_params(case.params)
            description.plan(None, *inputs, *params)
            return params
        except (TypeError, ValueError):
            continue
    raise AssertionError(f"{description.name}: no case gives params for inputs of shapes "
                         f"{[tuple(t.shape) for t in inputs]}")


@dataclass
class Call:
    """One call of op `name`: inputs, keyword params and an out (NaN, in the
    case's out layout) of the planned shape."""

    name: str
    inputs: list
    params: dict
    out: torch.Tensor

    @property
    def forms(self):
        return forms(self.name)

    def op(self, backend, inputs=None):
        return forms(self.name)[0](*(self.inputs if inputs is None else inputs), **self.params, backend=backend)

    def op_(self, out, backend, inputs=None):
        return forms(self.name)[1](out, *(self.inputs if inputs is None else inputs), **self.params, backend=backend)

    def prepare(self, backend, out=None):
        return forms(self.name)[2](self.out if out is None else out, *self.inputs, **self.params, backend=backend)

    def reference(self, inputs=None) -> torch.Tensor:
        """The float64 (CPU) reference of the op on `inputs` (default: the call's)."""
        return spec_for(self.name).reference(upcast(self.inputs if inputs is None else inputs), self.params)

    def check(self, actual, inputs=None, msg=""):
        """`actual` against the reference, judged by the description's accuracy."""
        inputs = self.inputs if inputs is None else inputs
        expected = self.reference(inputs)
        if tuple(expected.shape) != tuple(actual.shape):
            expected = expected.expand(actual.shape)
        spec_for(self.name).check(actual, expected, list(inputs), self.params, msg or self.name)


def make_call(name: str, case: Case, device, gen, dtype=torch.float32, contiguous: bool = False,
              shapes=None) -> Call:
    """The call of `case` (shapes, layouts, params, out layout); contiguous:
    every tensor contiguous; shapes: other input shapes (same params)."""
    shapes = case.shapes if shapes is None else shapes
    layouts = ["contiguous"] * len(shapes) if contiguous else case.layouts
    inputs = [make_tensor(s, dtype, device, k, gen) for s, k in zip(shapes, layouts)]
    out_shape = planned_out_shape(DESCRIPTIONS[name], shapes, case.params,
                                  case.out_shape if shapes is case.shapes else None)
    out = make_out(out_shape, dtype, device, "contiguous" if contiguous else case.out_layout, gen)
    return Call(name, inputs, dict(case.params), out)


def small_call(name: str, device, gen, dtype=torch.float32, contiguous: bool = False) -> Call:
    return make_call(name, small_case(name), device, gen, dtype, contiguous)


def cases_needing_workspace(name: str, backend, device, gen, contiguous: bool = False) -> list:
    """The op's own cases (out of the planned shape, non-empty) whose
    prepared form wants a workspace on backend, in description order."""
    found = []
    for case in DESCRIPTIONS[name].cases:
        if case.out_shape is not None:
            continue
        try:
            call = make_call(name, case, device, gen, contiguous=contiguous)
        except (TypeError, ValueError):
            continue
        if call.out.numel() == 0:
            continue
        with call.prepare(backend) as prepared:
            if prepared.workspace_size:
                found.append(case)
    return found
