"""The operators: one module per op, each holding its DESCRIPTION (see
operator_runtime.description). Every op found here gets three public
functions, op(...), op_(out, ...) and prepare_op(out, ...), and two
torch.library operators, torch.ops.operator_runtime.op and op_out."""

import sys

from .._internal.registry import discover, public_forms
from .._internal.torch_library import register

DESCRIPTIONS = discover(__name__, __path__)

__all__ = []
for _description in DESCRIPTIONS.values():
    _forms = public_forms(_description)
    register(_description, _forms, sys.modules[__name__])  # backward formulas call this package's functions
    globals().update(_forms)
    __all__ += list(_forms)
del _description, _forms
