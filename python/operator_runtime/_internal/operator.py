"""The engine behind every op's three Python forms.

An op module supplies an Operator: its name, a ``plan`` function that
validates the arguments and returns a Plan (inputs at the output's rank,
normalized params, output shape and dtype), and how its params reach C.
Operator.call serves ``op(...)`` and ``op_(out, ...)``; Operator.prepare
serves ``prepare_op(out, ...)``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ..backend import Backend, default_backend, parse_backend
from .backends import backend_impl
from .tensors import (require_dtype, require_no_partial_overlap, require_no_self_overlap, require_tensor)


@dataclass
class Plan:
    inputs: tuple            # tensors with out's shape (broadcast as stride-0 dims)
    params: tuple            # normalized, hashable parameters
    out_shape: tuple
    out_dtype: torch.dtype   # None: any supported dtype (copy_ converts)


class DescriptorCache:
    """A bounded LRU map key -> descriptor. Evicted descriptors are destroyed
    when the last reference (a call in flight may hold one) goes away."""

    def __init__(self, capacity: int = 512):
        self.capacity = capacity
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get_or_create(self, key, create: Callable):
        with self._lock:
            descriptor = self._entries.get(key)
            if descriptor is not None:
                self._entries.move_to_end(key)
                return descriptor
        descriptor = create()
        with self._lock:
            self._entries[key] = descriptor
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return descriptor

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


DESCRIPTOR_CACHE = DescriptorCache()


def _signature(t: torch.Tensor) -> tuple:
    return (t.dtype, tuple(t.shape), t.stride())


class Operator:
    def __init__(self, name: str, input_names: Sequence[str], plan: Callable, c_param_types=(),
                 c_params: Callable = lambda params: ()):
        self.name = name
        self.input_names = tuple(input_names)
        self._plan = plan
        self.c_param_types = tuple(c_param_types)
        self.c_params = c_params

    # -- shared validation -------------------------------------------------
    def _resolve(self, out, inputs, params, backend):
        for name, value in zip(self.input_names, inputs):
            require_tensor(self.name, name, value)
        if out is not None:
            require_tensor(self.name, "out", out)
        device = inputs[0].device
        for name, value in zip(self.input_names[1:], inputs[1:]):
            if value.device != device:
                raise ValueError(f"{self.name}: {name} is on {value.device} but {self.input_names[0]} is on {device}")
        if out is not None and out.device != device:
            raise ValueError(f"{self.name}: out is on {out.device} but {self.input_names[0]} is on {device}")
        selected = default_backend(device) if backend is None else parse_backend(backend)
        impl = backend_impl(selected)
        if device.type != impl.device_type:
            raise ValueError(f"{self.name}: the {impl.name} backend runs on {impl.device_type} tensors, "
                             f"but the tensors are on {device}")
        for name, value in zip(self.input_names, inputs):
            require_dtype(self.name, name, value, impl.dtypes, impl.name)
        if out is not None:
            require_dtype(self.name, "out", out, impl.dtypes, impl.name)
        plan = self._plan(out, *inputs, *params)
        if out is None:
            out = torch.empty(plan.out_shape, dtype=plan.out_dtype, device=device)
        else:
            self._check_out(out, plan)
        return impl, plan, out

    def _check_out(self, out: torch.Tensor, plan: Plan) -> None:
        if tuple(out.shape) != tuple(plan.out_shape):
            raise ValueError(f"{self.name}: out has shape {tuple(out.shape)}, expected {tuple(plan.out_shape)}")
        if plan.out_dtype is not None and out.dtype != plan.out_dtype:
            raise TypeError(f"{self.name}: out has dtype {out.dtype}, expected {plan.out_dtype}")
        require_no_self_overlap(self.name, out)
        for name, value in zip(self.input_names, plan.inputs):
            require_no_partial_overlap(self.name, out, name, value)

    def _key(self, impl, out, plan):
        return (self.name, impl.name, out.device, _signature(out),
                tuple(_signature(t) for t in plan.inputs), plan.params)

    # -- the three forms ----------------------------------------------------
    def call(self, out, inputs: tuple, params: tuple, backend):
        impl, plan, out = self._resolve(out, inputs, params, backend)
        if out.numel() == 0:
            return out
        descriptor = DESCRIPTOR_CACHE.get_or_create(
            self._key(impl, out, plan), lambda: impl.create(self, out, plan.inputs, plan.params))
        workspace = None
        if descriptor.workspace_size:
            workspace = torch.empty(descriptor.workspace_size, dtype=torch.uint8, device=out.device)
        descriptor.execute(out, plan.inputs, workspace, impl.stream(out.device))
        return out

    def prepare(self, out, inputs: tuple, params: tuple, backend) -> "PreparedOp":
        if out is None:
            raise TypeError(f"prepare_{self.name}: out is required")
        impl, plan, out = self._resolve(out, inputs, params, backend)
        descriptor = impl.create(self, out, plan.inputs, plan.params)
        return PreparedOp(self, impl, descriptor, out, plan)


class PreparedOp:
    """A descriptor bound to fixed shapes, strides, dtypes and params, with its
    workspace allocated once. ``run()`` executes on the prepared tensors;
    ``run(out, *inputs)`` on new tensors of identical layout."""

    def __init__(self, operator: Operator, impl, descriptor, out: torch.Tensor, plan: Plan):
        self._operator = operator
        self._impl = impl
        self._descriptor = descriptor
        self._out = out
        self._inputs = plan.inputs
        self._stride_zero = [tuple(s == 0 for s in t.stride()) for t in plan.inputs]
        self._signatures = (_signature(out),) + tuple(_signature(t) for t in plan.inputs)
        self._device = out.device
        self.workspace_size = descriptor.workspace_size
        self._workspace = (torch.empty(self.workspace_size, dtype=torch.uint8, device=out.device)
                           if self.workspace_size else None)

    @property
    def backend(self) -> str:
        return self._impl.name

    @property
    def variant(self) -> str:
        return self._descriptor.variant if self._descriptor is not None else "destroyed"

    @property
    def out(self) -> torch.Tensor:
        return self._out

    def run(self, out: torch.Tensor | None = None, *inputs: torch.Tensor) -> torch.Tensor:
        if self._descriptor is None:
            raise RuntimeError(f"prepared {self._operator.name} was destroyed")
        if out is None and not inputs:
            out, inputs = self._out, self._inputs
        else:
            out, inputs = self._rebind(out, inputs)
        if out.numel():
            self._descriptor.execute(out, inputs, self._workspace, self._impl.stream(self._device))
        return out

    def _rebind(self, out, inputs):
        op = self._operator
        if len(inputs) != len(self._inputs):
            raise ValueError(f"prepared {op.name}.run takes out and {len(self._inputs)} input(s), "
                             f"got {len(inputs)} input(s)")
        require_tensor(op.name, "out", out)
        for name, value in zip(op.input_names, inputs):
            require_tensor(op.name, name, value)
        # Inputs prepared with broadcasting are re-expanded the same way.
        expanded = []
        for value, prepared in zip(inputs, self._inputs):
            if value.shape != prepared.shape and value.dim() <= prepared.dim():
                try:
                    value = value.expand(prepared.shape)
                except RuntimeError:
                    pass
            expanded.append(value)
        names = ("out",) + op.input_names
        for name, value, signature in zip(names, [out] + expanded, self._signatures):
            if _signature(value) != signature or value.device != self._device:
                raise ValueError(f"prepared {op.name}.run: {name} has dtype {value.dtype}, shape "
                                 f"{tuple(value.shape)}, strides {value.stride()} on {value.device}; prepared "
                                 f"with dtype {signature[0]}, shape {signature[1]}, strides {signature[2]} "
                                 f"on {self._device}")
        for name, value in zip(op.input_names, expanded):
            require_no_partial_overlap(op.name, out, name, value)
        return out, tuple(expanded)

    def destroy(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        self._workspace = None
        if descriptor is not None:
            descriptor.destroy()

    def __enter__(self) -> "PreparedOp":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return (f"Prepared{self._operator.name}(backend={self.backend!r}, variant={self.variant!r}, "
                f"workspace_size={self.workspace_size})")
