"""Every discovered op as a torch.library operator, from its description:

    torch.ops.operator_runtime.<op>(inputs..., params...) -> Tensor
    torch.ops.operator_runtime.<op>_out(Tensor(a!) out, inputs..., params...) -> ()

with a fake implementation (shape and dtype from the op's plan, contiguous
like the real output), a kernel that runs the op's plain function (backend
chosen by device), and autograd: where the description states a backward
(``OpDescription.backward``), torch.library.register_autograd records the
functional op with it; otherwise, and for every out-variant (a write into
out is not recorded), an Autograd kernel refuses a call that autograd
would have to record (``autograd_refusal``) rather than detach it silently.

The plain functions come here (``call_torch_op``) while dynamo traces them,
and for fake or dispatch-subclass tensors, an active dispatch mode, or
inputs that need gradients (operator.py decides); eager calls keep their
fast path and never enter the dispatcher.
"""

from __future__ import annotations

import torch

from ..description import REQUIRED, GradContext
from .workspaces import WORKSPACES

NAMESPACE = "operator_runtime"
_LIBRARY = torch.library.Library(NAMESPACE, "DEF")
_SCHEMA_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}


def autograd_refusal(name: str, out, inputs, no_backward: str = "") -> RuntimeError | None:
    """The error for a call autograd would have to record but cannot (None:
    nothing to record). An out that is a leaf requiring grad is refused as
    torch's in-place ops refuse it; a write into out, or an op without a
    backward (``no_backward`` says why), is refused rather than silently
    detached."""
    if not torch.is_grad_enabled():
        return None
    if out is not None and out.requires_grad and out.is_leaf:
        return RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place "
                            "operation (out)")
    if not ((out is not None and out.requires_grad) or any(t.requires_grad for t in inputs)):
        return None
    if out is not None:
        return NotImplementedError(
            f"{name}: an argument requires grad, and autograd does not record a write into out; use the "
            "functional form (operator_runtime.<op>(...)) for gradients, or call it under torch.no_grad() "
            "(no gradient is dropped silently)")
    return NotImplementedError(
        f"{name}: an argument requires grad, and autograd has no backward for this op: "
        f"{no_backward or 'none is stated'}; "
        "call it under torch.no_grad() or pass .detach()ed tensors (no gradient is dropped silently)")


def torch_op(name: str, out_variant: bool):
    """The registered OpOverload of op ``name`` (or of its out-variant)."""
    return getattr(getattr(torch.ops, NAMESPACE), f"{name}_out" if out_variant else name).default


def call_torch_op(name: str, out, inputs: tuple, params: tuple):
    """The plain function's call, through the registered operator."""
    if out is None:
        return torch_op(name, False)(*inputs, *params)
    torch_op(name, True)(out, *inputs, *params)
    return out


def _schema_arguments(description) -> str:
    arguments = [f"Tensor {name}" for name in description.inputs]
    for param in description.params:
        kind = param.schema or _SCHEMA_TYPES.get(type(param.default))
        if kind is None:
            raise TypeError(f"{description.name}: parameter {param.name!r} needs Param(schema=...), "
                            "its default's type has no schema type")
        default = "" if param.default is REQUIRED else f"={param.default!r}"
        arguments.append(f"{kind} {param.name}{default}")
    return ", ".join(arguments)


def _runtime_params(params) -> tuple:
    # Schema lists (int[1]?) arrive as lists; the runtime keys calls by hashable params.
    return tuple(tuple(p) if type(p) is list else p for p in params)


def register(description, forms: dict, ops) -> None:
    """Defines and implements op and op_out from the description and the
    op's public forms (``forms[name]``, ``forms[name + "_"]``); ``ops``
    holds every op's public functions once discovery ends (the backward
    formulas compute with them)."""
    name = description.name
    count = len(description.inputs)
    arguments = _schema_arguments(description)
    _LIBRARY.define(f"{name}({arguments}) -> Tensor")
    _LIBRARY.define(f"{name}_out(Tensor(a!) out, {arguments}) -> ()")
    plain, plain_out, plan = forms[name], forms[f"{name}_"], description.plan

    def kernel(*args):
        with WORKSPACES.per_call():
            return plain(*args[:count], *_runtime_params(args[count:]))

    def out_kernel(out, *args):
        with WORKSPACES.per_call():
            plain_out(out, *args[:count], *_runtime_params(args[count:]))

    def fake(*args):
        inputs = args[:count]
        planned = plan(None, *inputs, *_runtime_params(args[count:]))
        dtype = planned.out_dtype if planned.out_dtype is not None else inputs[0].dtype
        return inputs[0].new_empty(planned.out_shape, dtype=dtype)  # contiguous, as the real op's

    def out_fake(out, *args):
        plan(out, *args[:count], *_runtime_params(args[count:]))  # validates as the real call does

    for op_name, implementation, fake_implementation, has_out in (
            (name, kernel, fake, False), (f"{name}_out", out_kernel, out_fake, True)):
        _LIBRARY.impl(op_name, implementation, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{op_name}", fake_implementation, lib=_LIBRARY)
        if has_out or description.backward is None:
            _LIBRARY.impl(op_name, _autograd_kernel(description, torch_op(name, has_out), has_out), "Autograd",
                          with_keyset=True)
        else:
            _register_backward(description, ops)


def _register_backward(description, ops) -> None:
    """The functional op's autograd from the description's Backward: the
    forward keeps the inputs it names (and its output, where it names
    "out"), every input's shape and dtype and the planned params; the
    formula gets them as a GradContext."""
    count, backward = len(description.inputs), description.backward
    saves_output = "out" in backward.saves
    saves = tuple(description.inputs.index(name) for name in backward.saves if name != "out")

    def setup_context(ctx, inputs, output):
        tensors = inputs[:count]
        ctx.save_for_backward(*(tensors[i] for i in saves), *((output,) if saves_output else ()))
        ctx.shapes = tuple(tuple(t.shape) for t in tensors)
        ctx.dtypes = tuple(t.dtype for t in tensors)
        ctx.params = description.plan(None, *tensors, *_runtime_params(inputs[count:])).params

    def formula(ctx, grad):
        saved = [None] * count
        for i, tensor in zip(saves, ctx.saved_tensors):
            saved[i] = tensor
        output = ctx.saved_tensors[-1] if saves_output else None
        grad_context = GradContext(tuple(saved), ctx.shapes, ctx.dtypes, ctx.params,
                                   tuple(ctx.needs_input_grad[:count]), ops, output)
        grads = tuple(backward.formula(grad_context, grad))
        return grads + (None,) * len(description.params)

    torch.library.register_autograd(f"{NAMESPACE}::{description.name}", formula, setup_context=setup_context,
                                    lib=_LIBRARY)


def _autograd_kernel(description, overload, has_out: bool):
    """Runs the op below autograd when no gradient is needed; otherwise
    raises autograd_refusal's error (an out-variant, or an op without a
    backward)."""
    name, count, reason = description.name, len(description.inputs), description.no_backward_reason
    after_autograd = torch._C._after_autograd_keyset

    def kernel(keyset, *args):
        out, inputs = (args[0], args[1:1 + count]) if has_out else (None, args[:count])
        error = autograd_refusal(f"{name}_out" if has_out else name, out, inputs, reason)
        if error is not None:
            raise error
        return overload.redispatch(keyset & after_autograd, *args)

    return kernel
