"""Operators found by convention: every module of operator_runtime.ops that
defines DESCRIPTION is an op, and gets its three public functions here."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import torch

from ..backend import Backend
from ..description import REQUIRED, OpDescription
from .operator import Operator, PreparedOp


def discover(package: str, path) -> dict[str, OpDescription]:
    """name -> description for every module of `package` that has a DESCRIPTION."""
    found = {}
    for module_info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{module_info.name}")
        description = getattr(module, "DESCRIPTION", None)
        if isinstance(description, OpDescription):
            if description.name != module_info.name:
                raise ImportError(f"{package}.{module_info.name} describes '{description.name}': the module "
                                  "must carry the op's name")
            found[description.name] = description
    return found


_BACKEND_DOC = ("backend: None follows the tensors' device (CPU tensors: cpu, CUDA tensors: nvidia); else a "
                "name (cpu, nvidia, tilelang, metax; any case) or a Backend member. Positional after the "
                "params, as in the seed project's API.")


def _docstring(description: OpDescription, form: str) -> str:
    """What a public form does, then one line per argument."""
    name, summary = description.name, description.summary
    head = {"op": f"A new tensor: {summary}.",
            "op_": f"Writes {summary} into ``out`` and returns ``out``.",
            "prepare": f"A PreparedOp running ``{name}_(out, ...)``: ``.run()`` repeats it on the same "
                       "tensors, ``.destroy()`` (or leaving a ``with`` block) frees it."}[form]
    lines = [head, "", "Arguments:"]
    if form != "op":
        lines.append("    out: the tensor written (its shape and dtype must be the result's)")
    lines += [f"    {n}: an input tensor" for n in description.inputs]
    for param in description.params:
        default = "" if param.default is REQUIRED else f" (default {param.default!r})"
        lines.append(f"    {param.name}: {param.doc or param.name}{default}")
    lines.append(f"    {_BACKEND_DOC}")
    return "\n".join(lines)


def public_forms(description: OpDescription) -> dict:
    """op(inputs..., params..., backend=None), op_(out, ...) and
    prepare_op(out, ...), written out as plain annotated functions (exact
    signatures, nothing bound per call) around the op's Operator.

    ``backend`` follows the params, positional as in the seed project; where
    a param was added after the seed (``Param.after_seed``), a str or Backend
    in the first such place is the seed's positional backend, and that param
    and the later ones keep their defaults."""
    name = description.name
    namespace = {"_op": Operator(description), "_Tensor": torch.Tensor, "_PreparedOp": PreparedOp,
                 "_BackendArg": str | Backend | None}
    params = []
    for index, param in enumerate(description.params):
        namespace[f"_type{index}"] = param.annotation or (Any if param.default is REQUIRED else type(param.default))
        if param.default is REQUIRED:
            params.append(f"{param.name}: _type{index}")
        else:
            namespace[f"_default{index}"] = param.default
            params.append(f"{param.name}: _type{index} = _default{index}")
    arguments = ", ".join([*(f"{n}: _Tensor" for n in description.inputs), *params])
    inputs = "".join(f"{n}, " for n in description.inputs)
    values = "".join(f"{p.name}, " for p in description.params)
    seed = _seed_backend_lines(description)
    source = (
        f"def {name}({arguments}, backend: _BackendArg = None) -> _Tensor:\n{seed}"
        f"    return _op.call(None, ({inputs}), ({values}), backend)\n"
        f"def {name}_(out: _Tensor, {arguments}, backend: _BackendArg = None) -> _Tensor:\n{seed}"
        f"    if out is None:\n"
        f"        _op.missing_out('{name}_')\n"
        f"    return _op.call(out, ({inputs}), ({values}), backend)\n"
        f"def prepare_{name}(out: _Tensor, {arguments}, backend: _BackendArg = None) -> _PreparedOp:\n{seed}"
        f"    return _op.prepare(out, ({inputs}), ({values}), backend)\n")
    # dont_inherit: this module's `from __future__ import annotations` would leave them as strings
    exec(compile(source, f"<operator_runtime.ops.{name}>", "exec", dont_inherit=True), namespace)
    forms = {name: namespace[name], f"{name}_": namespace[f"{name}_"], f"prepare_{name}": namespace[f"prepare_{name}"]}
    for form, function in zip(("op", "op_", "prepare"), forms.values()):
        function.__doc__ = _docstring(description, form)
        function.__module__ = f"operator_runtime.ops.{name}"
        function.operator = namespace["_op"]
    return forms


def _seed_backend_lines(description: OpDescription) -> str:
    """The lines that read a str or Backend in the first after-seed param's
    place as the backend (both are str); empty where no param is after-seed."""
    later = [(index, p) for index, p in enumerate(description.params) if p.after_seed]
    if not later:
        return ""
    first = later[0][1].name
    names = ", ".join(p.name for _, p in later)
    defaults = ", ".join(f"_default{index}" for index, _ in later)
    return (f"    if backend is None and isinstance({first}, str):\n"
            f"        backend, ({names},) = {first}, ({defaults},)\n")
