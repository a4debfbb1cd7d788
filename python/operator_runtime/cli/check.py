"""`python -m operator_runtime check --backend B`: every op's small cases from
its description, in every dtype, through all three forms (op, op_,
prepare_op(...).run()), each against torch's reference computed on float64
copies of the inputs, outs poisoned with NaN so an unwritten element fails."""

from __future__ import annotations

import sys

import torch

import operator_runtime as oprt
from operator_runtime import BackendUnavailableError
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import make_out, make_tensor
from operator_runtime_testing.op_bench import TOLERANCES, rel_error

from .bench import PROG, resolve_backend, selected_ops

MAX_NUMEL = 1 << 16  # "small": the check takes seconds, not minutes


def dtypes_for(device_type: str) -> tuple:
    extra = (torch.float64,) if device_type == "cpu" else ()
    return (torch.float32, torch.float16, torch.bfloat16) + extra


def small_cases(description) -> list:
    """The description's cases with non-empty inputs of at most MAX_NUMEL elements that plan."""
    cases = []
    for case in description.cases:
        numels = [torch.Size(s).numel() for s in case.shapes]
        if not numels or min(numels) == 0 or max(numels) > MAX_NUMEL:
            continue
        try:
            meta = [torch.empty(s, device="meta") for s in case.shapes]
            description.plan(None, *meta, *description.bound_params(case.params))
        except (TypeError, ValueError):
            continue
        cases.append(case)
    return cases


def check_case(description, case, dtype, backend, device) -> list:
    """Failure messages of one case in one dtype (empty: passed)."""
    name, params = description.name, case.params
    inputs = [make_tensor(s, dtype, device, kind) for s, kind in zip(case.shapes, case.layouts)]
    plan = description.plan(None, *inputs, *description.bound_params(params))
    out_shape = case.out_shape or plan.out_shape
    out_dtype = plan.out_dtype or dtype
    ref = description.reference(*[t.detach().to("cpu", torch.float64) for t in inputs], **params)
    ref = ref.expand(out_shape)
    torch_result = description.reference(*inputs, **params).expand(out_shape).cpu()
    limit = max(TOLERANCES[out_dtype], 2 * rel_error(torch_result, ref))

    def fresh_out():
        return make_out(out_shape, out_dtype, device, case.out_layout)

    def prepared(out):
        getattr(oprt, f"prepare_{name}")(out, *inputs, **params, backend=backend).run()
        return out

    forms = {}
    if case.out_shape is None:
        forms[name] = lambda: getattr(oprt, name)(*inputs, **params, backend=backend)
    forms[f"{name}_"] = lambda: getattr(oprt, f"{name}_")(fresh_out(), *inputs, **params, backend=backend)
    forms[f"prepare_{name}"] = lambda: prepared(fresh_out())
    failures = []
    for form, call in forms.items():
        where = f"{form} {case.name} {str(dtype).removeprefix('torch.')}"
        try:
            error = rel_error(call().cpu(), ref)
        except BackendUnavailableError:
            raise
        except Exception as exc:  # a crash is a failure of this case, not of the run
            failures.append(f"{where}: {type(exc).__name__}: {exc}".splitlines()[0][:200])
            continue
        if not error <= limit:  # also catches NaN
            failures.append(f"{where}: relative error {error:.3g} > {limit:.3g}")
    return failures


def main(args) -> int:
    ops = selected_ops(args.op)
    backend, device_type = resolve_backend(args.backend, ops)
    device = torch.device(device_type)
    failures, unavailable, checked = [], [], 0
    for op in ops:
        description = DESCRIPTIONS[op]
        try:
            for case in small_cases(description):
                for dtype in dtypes_for(device_type):
                    failures += check_case(description, case, dtype, backend, device)
                    checked += 1
        except BackendUnavailableError as error:
            unavailable.append(f"{op}: {error.reason}")
            continue
        print(f"[check] {op}: done", flush=True)
    print(f"[check] backend {backend}: {checked} case/dtype pairs, 3 forms each; {len(failures)} failure(s)")
    for line in failures:
        print(f"  FAIL {line}")
    for line in unavailable:
        print(f"  unavailable {line}")
    if failures:
        print(f"{PROG} check: FAILED", file=sys.stderr)
        return 1
    return 3 if unavailable else 0
