"""Test cases shared by the op tests (and the benchmarks).

Each op module (copy, vector_add, reduce_sum, softmax) exposes
correctness_cases() -> [Case], api_error_cases() -> [ApiErrorCase] and
benchmark_cases().
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch


@dataclass
class Case:
    """One correctness case; the test iterates it over dtypes and backends.

    shapes/layouts: one logical shape and layout kind (see
    operator_runtime_testing.layouts) per input; params: keyword arguments of
    the op (dim, keepdim); out_shape: copy_ only, an out that src broadcasts to.
    """

    name: str
    shapes: tuple
    layouts: tuple = None
    params: dict = field(default_factory=dict)
    out_layout: str = "contiguous"
    out_shape: tuple | None = None

    def __post_init__(self):
        if self.layouts is None:
            self.layouts = ("contiguous",) * len(self.shapes)
        assert len(self.layouts) == len(self.shapes), self.name


@dataclass
class ApiErrorCase:
    """A call the runtime must refuse with `error` whose message contains
    `fragment`. `make(device)` builds the arguments; `call(backend, *args)`
    makes the call. It unpacks as (name, callable(backend, device), error,
    fragment); test_api also uses make/call to check that the refused call
    left every tensor untouched."""

    name: str
    make: Callable[[torch.device], tuple]
    call: Callable[..., Any]
    error: type
    fragment: str

    def __call__(self, backend, device):
        return self.call(backend, *self.make(device))

    def __iter__(self):
        return iter((self.name, self, self.error, self.fragment))


def unary_case(name, shape, layout="contiguous", out_layout="contiguous", **params) -> Case:
    """A Case of a one-input op (reduce_sum, softmax): params are the op's keywords."""
    return Case(name, [shape], [layout], params=params, out_layout=out_layout)


def call_forms(op: str) -> tuple:
    """The op's three forms as (backend, *args) callables, as ApiErrorCase
    calls them: op(*args), op_(out, *args), prepare_op(out, *args)."""
    import operator_runtime as oprt

    plain, out_variant, prepare = getattr(oprt, op), getattr(oprt, f"{op}_"), getattr(oprt, f"prepare_{op}")

    def call(backend, *args):
        return plain(*args, backend=backend)

    def call_(backend, *args):
        return out_variant(*args, backend=backend)

    def call_prepare(backend, *args):
        return prepare(*args, backend=backend)

    return call, call_, call_prepare


def randn(*shape, device, dtype=torch.float32, seed=0):
    """Deterministic random data for the error cases (never zeros)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float32).to(dtype).to(device)
