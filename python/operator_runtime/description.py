"""How an operator is described: once, in python/operator_runtime/ops/<op>.py.

A description holds everything the rest of the project needs to know about
an op: its arguments and parameters, how a call is validated and planned
(dtype rules, output shape), the torch function it must match, the bytes
and flops the benchmark counts, how tests judge its accuracy, and the
shapes its tests and benchmarks run. The public functions (``op``, ``op_``,
``prepare_op``), the generic tests, the benchmark and the scripts iterate
the discovered descriptions; nothing lists ops by hand.

The C side states the op's argument list in ops/<op>/<op>_api.h; the
library reports it per backend (``oprt_<op>_signature_<backend>``) and
``c_params`` turns the normalized params into those C arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

REQUIRED = object()  # a Param without a default


@dataclass(frozen=True)
class Param:
    """One scalar parameter after the tensor inputs (e.g. ``dim``).

    schema: its type in the op's torch.library schema (``int``, ``bool``,
    ``int[1]?``, ...); None takes it from the default's type. annotation:
    its type in the public functions' signatures (None: the default's
    type); doc: what it means, for their docstrings; after_seed: added
    after the seed project's API, whose functions took ``backend``
    positionally in its place, so a str or Backend given there is read as
    the backend (``reduce_sum(x, 1, "nvidia")``)."""

    name: str
    default: Any = REQUIRED
    schema: str | None = None
    annotation: Any = None
    doc: str = ""
    after_seed: bool = False


@dataclass
class Plan:
    """A validated call: inputs at out's rank (broadcast as stride-0 dims),
    normalized hashable params, and the output's shape and dtype (None: any
    supported dtype, copy_ converts)."""

    inputs: tuple
    params: tuple
    out_shape: tuple
    out_dtype: torch.dtype | None


@dataclass
class Case:
    """One correctness case; tests run it for every dtype and backend.

    shapes/layouts: one logical shape and layout kind (see
    operator_runtime_testing.layouts) per input; params: the op's keyword
    arguments; out_shape: an out that the result broadcasts to (copy_ only)."""

    name: str
    shapes: tuple
    layouts: tuple | None = None
    params: dict = field(default_factory=dict)
    out_layout: str = "contiguous"
    out_shape: tuple | None = None

    def __post_init__(self):
        if self.layouts is None:
            self.layouts = ("contiguous",) * len(self.shapes)
        assert len(self.layouts) == len(self.shapes), self.name


@dataclass
class ErrorCase:
    """A call the runtime must refuse with ``error`` whose message contains
    ``fragment``. ``make(device)`` builds the positional arguments (out
    first for the forms that take one); ``form`` is "op", "op_" or "prepare"."""

    name: str
    make: Callable[[torch.device], tuple]
    form: str
    error: type
    fragment: str


@dataclass
class Bench:
    """A benchmark shape, run once per dtype in ``dtypes``.

    quick: dtypes in the --quick subset; layout: "contiguous" or
    "transposed" (input 0 as the .t() of a contiguous tensor); gpu_only:
    too large for a CPU run."""

    name: str
    shapes: tuple
    dtypes: tuple = (torch.float32, torch.float16, torch.bfloat16)
    quick: tuple = ()
    params: dict = field(default_factory=dict)
    layout: str = "contiguous"
    gpu_only: bool = False


# How tests judge a result against the float64 reference:
#   exact        bit-exact after rounding the reference to out's dtype
#   elementwise  the dtype's rounding tolerance
#   reduction    a sum's tolerance, growing with the count of terms
#   normalized   softmax-like: relative error growing with sqrt(row length)
#   log          log-softmax-like: absolute error growing with sqrt(row length)
#   scaled       a few accumulation eps of the description's error_scale, per
#                element (a difference of large terms: softmax's gradients),
#                plus the dtype's rounding of the result
ACCURACY_KINDS = ("exact", "elementwise", "reduction", "normalized", "log", "scaled")


@dataclass
class GradContext:
    """What an op's backward sees of its forward call: the inputs it saved
    (``Backward.saves``; None for the others), every input's shape and
    dtype, the params as the runtime normalizes them, which inputs need a
    gradient, ``ops``: the runtime's public functions (``ops.mul``,
    ``ops.copy_``, ...), which the formula computes with, and the op's
    output where it saved that ("out" in ``Backward.saves``; else None)."""

    saved: tuple
    shapes: tuple
    dtypes: tuple
    params: tuple
    needs_input_grad: tuple
    ops: Any = None
    output: torch.Tensor | None = None


@dataclass(frozen=True)
class Backward:
    """An op's gradient, computed with the runtime's own ops.

    formula(ctx, grad_out) returns one gradient (or None) per input; saves:
    the names of the inputs whose values it reads (the others keep only
    their shape and dtype, so nothing else stays alive), and "out" where it
    reads the op's output (softmax's gradient is a function of its output,
    which torch saves too)."""

    formula: Callable
    saves: tuple = ()


@dataclass
class OpDescription:
    """One operator. ``plan(out, *inputs, *params)`` validates and returns
    a Plan (out is None for the out-of-place form). ``reference(*inputs,
    **params)`` is the torch function the op matches; ``torch_out(out,
    *inputs, **params)`` is torch eager writing into out (the benchmark's
    peer). ``c_params(*params)`` gives the C arguments after the views."""

    name: str
    summary: str
    inputs: tuple
    plan: Callable
    reference: Callable
    torch_out: Callable
    params: tuple = ()
    family: str = ""                 # the shared layer it instantiates: "elementwise", "along_dim", "reduction"
    c_params: Callable = lambda *params: ()
    in_place: bool = True            # out may be an input itself
    flops_per_element: int = 0
    flops_count: str = "out"         # "out" or "input": the elements flops scale with
    accuracy: str = "elementwise"
    error_scale: Callable | None = None   # (inputs, ref64, **params) -> what errors are measured against
    special_values: str | None = None     # "elementwise" or "rows": the special-value test that applies
    cases: tuple = ()
    error_cases: tuple = ()
    benchmarks: tuple = ()
    tiny: Bench | None = None        # the host-overhead case
    backward: Backward | None = None  # None: autograd refuses a call that needs a gradient
    no_backward_reason: str = ""      # why there is none, for that refusal

    def __post_init__(self):
        assert self.accuracy in ACCURACY_KINDS, (self.name, self.accuracy)
        assert self.flops_count in ("out", "input"), (self.name, self.flops_count)

    @property
    def param_names(self) -> tuple:
        return tuple(p.name for p in self.params)

    def bound_params(self, params: dict) -> tuple:
        """The params in order, defaults filled in, from keyword arguments."""
        values = []
        for p in self.params:
            if p.name in params:
                values.append(params[p.name])
            elif p.default is REQUIRED:
                raise TypeError(f"{self.name}: missing parameter {p.name!r}")
            else:
                values.append(p.default)
        return tuple(values)
