"""Operators found by convention: every module of operator_runtime.ops that
defines DESCRIPTION is an op, and gets its three public functions here."""

from __future__ import annotations

import importlib
import pkgutil

from ..description import REQUIRED, OpDescription
from .operator import Operator


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


def public_forms(description: OpDescription) -> dict:
    """op(inputs..., params..., *, backend=None), op_(out, ...) and
    prepare_op(out, ...), written out as plain functions (exact signatures,
    nothing bound per call) around the op's Operator."""
    name = description.name
    namespace = {"_op": Operator(description)}
    params = []
    for index, param in enumerate(description.params):
        if param.default is REQUIRED:
            params.append(param.name)
        else:
            namespace[f"_default{index}"] = param.default
            params.append(f"{param.name}=_default{index}")
    arguments = ", ".join([*description.inputs, *params])
    inputs = "".join(f"{n}, " for n in description.inputs)
    values = "".join(f"{p.name}, " for p in description.params)
    source = (
        f"def {name}({arguments}, *, backend=None):\n"
        f"    return _op.call(None, ({inputs}), ({values}), backend)\n"
        f"def {name}_(out, {arguments}, *, backend=None):\n"
        f"    if out is None:\n"
        f"        _op.missing_out('{name}_')\n"
        f"    return _op.call(out, ({inputs}), ({values}), backend)\n"
        f"def prepare_{name}(out, {arguments}, *, backend=None):\n"
        f"    return _op.prepare(out, ({inputs}), ({values}), backend)\n")
    exec(compile(source, f"<operator_runtime.ops.{name}>", "exec"), namespace)
    forms = {name: namespace[name], f"{name}_": namespace[f"{name}_"], f"prepare_{name}": namespace[f"prepare_{name}"]}
    summary = description.summary
    forms[name].__doc__ = f"A new tensor: {summary}."
    forms[f"{name}_"].__doc__ = f"Writes {summary} into ``out``; returns ``out``."
    forms[f"prepare_{name}"].__doc__ = f"A PreparedOp running ``{name}_(out, ...)``; ``.run()`` repeats it."
    for function in forms.values():
        function.__module__ = f"operator_runtime.ops.{name}"
        function.operator = namespace["_op"]
    return forms
