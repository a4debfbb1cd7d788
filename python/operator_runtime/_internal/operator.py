"""The engine behind every op's three Python forms.

An op module supplies an Operator: its name, a ``plan`` function that
validates the arguments and returns a Plan (inputs at the output's rank,
normalized params, output shape and dtype), and how its params reach C.
Operator.call serves ``op(...)`` and ``op_(out, ...)``; Operator.prepare
serves ``prepare_op(out, ...)``.

Two paths serve a call. The slow path (``_resolve``) validates every
argument, plans, and finds or creates the descriptor. When it succeeds it
records a ``_CallEntry`` under the call's signature: the backend argument,
the params as given (with their types, so ``1`` and ``True`` differ), each
input's dtype/shape/strides/device, and out's (or None). A later call with
the same signature is one dict lookup away from its descriptor: it only
allocates out (or checks that a given out does not partially overlap an
input: the one property that depends on data pointers, not on the
signature) and executes. Anything unusual (an argument that is not a
tensor, unhashable params) takes the slow path, which raises the usual
errors; a signature is recorded only after the slow path accepted it, so
the fast path never accepts what the slow path refuses.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import torch

from ..backend import default_backend, parse_backend
from ..description import OpDescription, Plan
from .backends import backend_impl
from .cuda import CUDA_GET_DEVICE, CUDA_RAW_STREAM, cuda_current_device
from .library import fast_call_module, tensor_access_api
from .torch_library import autograd_refusal, call_torch_op
from .workspaces import WORKSPACES
from .tensors import (_byte_span, require_dtype, require_no_partial_overlap, require_no_self_overlap,
                      require_tensor, resolve_lazy_sign)


class _Slot:
    """One cached descriptor, the call signatures whose fast-path entries use
    it, and whether a fast-path call used it since eviction last looked."""

    __slots__ = ("descriptor", "used", "calls")

    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.used = False
        self.calls: list = []


class DescriptorCache:
    """A bounded map key -> descriptor, least recently used evicted first,
    and the fast path's map call signature -> _CallEntry.

    Slow-path lookups move a descriptor to the recent end; fast-path hits
    only flag it (no lock, no hashing of the descriptor key), and eviction
    gives a flagged descriptor a second chance (moves it to the recent end,
    clearing the flag) before evicting the next oldest. Evicting a descriptor
    also drops the call entries that hold it, so at most `capacity`
    descriptors are kept alive by the cache; an evicted one is destroyed when
    the last reference (a call in flight may hold one) goes away. The call
    map is bounded too (oldest entry out first)."""

    def __init__(self, capacity: int = 512, call_capacity: int | None = None):
        self.capacity = capacity
        self.call_capacity = call_capacity or 4 * capacity
        self._entries: OrderedDict = OrderedDict()
        self.calls: dict = {}  # read without the lock (one dict lookup is atomic); written with it
        self._lock = threading.Lock()

    def get_or_create_slot(self, key, create: Callable) -> _Slot:
        with self._lock:
            slot = self._entries.get(key)
            if slot is not None and _alive(slot.descriptor):
                self._entries.move_to_end(key)
                return slot
        descriptor = create()
        with self._lock:
            slot = self._entries.get(key)
            if slot is not None and _alive(slot.descriptor):  # another thread made one meanwhile
                self._entries.move_to_end(key)
                return slot
            if slot is not None:
                self._drop_calls(slot)
            slot = self._entries[key] = _Slot(descriptor)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                old_key, old = self._entries.popitem(last=False)
                if old.used:
                    old.used = False
                    self._entries[old_key] = old
                else:
                    self._drop_calls(old)
        return slot

    def get_or_create(self, key, create: Callable):
        return self.get_or_create_slot(key, create).descriptor

    def add_call(self, call_key, slot: _Slot, entry) -> None:
        """Records a fast-path entry, if its descriptor is still cached."""
        with self._lock:
            if self._entries.get(entry.descriptor_key) is not slot or call_key in self.calls:
                return
            self.calls[call_key] = entry
            slot.calls.append(call_key)
            while len(self.calls) > self.call_capacity:
                old_key = next(iter(self.calls))
                old = self.calls.pop(old_key)
                try:
                    old.slot.calls.remove(old_key)
                except ValueError:
                    pass

    def drop_call(self, call_key) -> None:
        with self._lock:
            entry = self.calls.pop(call_key, None)
            if entry is not None:
                try:
                    entry.slot.calls.remove(call_key)
                except ValueError:
                    pass

    def _drop_calls(self, slot: _Slot) -> None:
        for call_key in slot.calls:
            self.calls.pop(call_key, None)
        slot.calls.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.calls.clear()


def _alive(descriptor) -> bool:
    alive = getattr(descriptor, "alive", None)
    return alive if alive is not None else not getattr(descriptor, "_destroyed", False)


_compiling = torch.compiler.is_dynamo_compiling  # dynamo folds it to True; eagerly a trivial call
_grad_enabled = torch.is_grad_enabled
_bump_version = torch._C._increment_version  # takes an iterable of tensors
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)  # what the fast path serves; subclasses go slow
_PLAIN_DISPATCH = torch.Tensor.__torch_dispatch__


def _needs_torch_op(out, inputs) -> bool:
    """Whether a call must go through the registered operator: a tensor
    subclass with its own __torch_dispatch__ (fake, functional tensors), an
    active dispatch mode (FakeTensorMode, make_fx), or a gradient to record."""
    tensors = inputs if out is None else (out, *inputs)
    for t in tensors:
        if type(t) not in _PLAIN_TENSORS and isinstance(t, torch.Tensor) and \
                type(t).__torch_dispatch__ is not _PLAIN_DISPATCH:
            return True
    if torch._C._len_torch_dispatch_stack():
        return True
    return _grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _signature(t: torch.Tensor) -> tuple:
    return (t.dtype, tuple(t.shape), t.stride())


class _CallEntry:
    """What a repeated call needs: the descriptor and how to run it."""

    __slots__ = ("slot", "descriptor_key", "impl", "descriptor", "out_shape", "out_dtype", "device",
                 "workspace_size", "cuda_index", "raw_stream", "spans", "out_span", "like", "c_execute",
                 "expand", "native")

    def __init__(self, slot, descriptor_key, impl, out, plan, inputs, given_out):
        self.slot = slot
        self.descriptor_key = descriptor_key
        self.impl = impl
        self.descriptor = slot.descriptor
        self.out_shape = tuple(out.shape)
        self.out_dtype = out.dtype
        self.device = out.device
        self.workspace_size = self.descriptor.workspace_size
        # The typed C function of a C descriptor, called inline by the fast path.
        self.c_execute = getattr(self.descriptor, "c_execute", None)
        # Per input, the plan's shape where the plan broadcast it (else None);
        # () when no input was broadcast.
        expand = tuple(None if tuple(t.shape) == tuple(p.shape) else tuple(p.shape)
                       for t, p in zip(inputs, plan.inputs))
        self.expand = expand if any(e is not None for e in expand) else ()
        self.cuda_index = out.device.index if impl.device_type == "cuda" else None
        # A C backend's stream is torch's current raw stream (one C call).
        self.raw_stream = getattr(impl, "raw_stream", None) if self.cuda_index is not None else None
        # A new out can be torch.empty_like(inputs[like]) (cheaper than
        # torch.empty) when that input has exactly out's dtype, shape,
        # strides and device: empty_like keeps a dense tensor's strides.
        self.like = None
        if not given_out:
            for index, t in enumerate(inputs):
                if _signature(t) == _signature(out) and t.device == out.device:  # out: torch.empty, dense
                    self.like = index
                    break
        # For a given out: each input's byte span relative to its data
        # pointer, and whether it has out's exact layout (in place allowed).
        self.spans = ()
        self.out_span = None
        if given_out:
            base = out.data_ptr()
            lo, hi = _byte_span(out)
            self.out_span = (lo - base, hi - base)
            spans = []
            for index, t in enumerate(plan.inputs):
                if t.numel():
                    lo, hi = _byte_span(t)
                    same = _signature(t) == _signature(out)
                    spans.append((index, lo - t.data_ptr(), hi - t.data_ptr(), same))
            self.spans = tuple(spans)
        # What fast_call.c needs to serve this entry in C: a C descriptor
        # without a workspace, on the CPU or with torch's raw-stream entry point.
        self.native = None if self.workspace_size else _native_record(
            self.descriptor, slot, self.like, self.cuda_index, self.out_span, self.spans, None, len(inputs))

    def new_out(self) -> torch.Tensor:
        return torch.empty(*self.out_shape, dtype=self.out_dtype, device=self.device) if self.out_shape else \
            torch.empty((), dtype=self.out_dtype, device=self.device)


def _native_record(descriptor, slot, like, cuda_index, out_span, spans, workspace, num_inputs):
    """What fast_call.c needs to launch a C descriptor (its run_record()
    reads the fields by position), or None where it cannot: no module, a
    descriptor that is not a C one, an input count it has no call for, or a
    torch without the raw-stream entry point."""
    if _NATIVE_RUN is None:
        return None
    address = getattr(descriptor, "execute_address", None)
    if (address is None or not 1 <= num_inputs <= _NATIVE_MAX_INPUTS
            or (cuda_index is not None and CUDA_RAW_STREAM is None)):
        return None
    return (descriptor, address, slot, -1 if like is None else like, -1 if cuda_index is None else cuda_index,
            out_span, spans, 0 if workspace is None else workspace.data_ptr(),
            0 if workspace is None else workspace.numel())


def _version_of(t: torch.Tensor) -> int | None:
    """t's version counter; None for an inference tensor, which has none
    (a prepared op then compares its shape and strides on every run)."""
    return None if t.is_inference() else t._version


def _param_types(params: tuple) -> tuple:
    types = tuple(map(type, params))
    if tuple in types:
        types += tuple(tuple(map(type, p)) for p in params if type(p) is tuple)
    return types


def _call_workspace(device, stream, nbytes: int, cuda: bool):
    return WORKSPACES.get(device, stream, nbytes, cuda) if nbytes else None


def _launch(impl, cuda_index, descriptor, out, inputs, workspace, device) -> None:
    """Executes on the tensors' stream; on CUDA, with their device current
    (the legacy default stream does not name its device)."""
    if cuda_index is None:
        descriptor.execute(out, inputs, workspace, None)
        return
    stream = impl.stream(device)
    if cuda_current_device() == cuda_index:
        descriptor.execute(out, inputs, workspace, stream)
    else:
        with torch.cuda.device(cuda_index):
            descriptor.execute(out, inputs, workspace, stream)


class Operator:
    """The engine of one op: validation and planning from its description,
    the descriptor cache, and the three call forms."""

    def __init__(self, description: OpDescription):
        self.description = description
        self.name = description.name
        self.input_names = tuple(description.inputs)
        self._plan = description.plan
        self._c_params = description.c_params

    def c_params(self, params: tuple) -> tuple:
        """The C arguments after the tensor views, from the normalized params."""
        return tuple(self._c_params(*params))

    # -- shared validation -------------------------------------------------
    def _resolve(self, out, inputs, params, backend, prepared: bool = False):
        """Validates and plans; inputs with torch's negative or conjugate bit
        are read through a resolved copy (refused when prepared)."""
        for name, value in zip(self.input_names, inputs):
            require_tensor(self.name, name, value)
        inputs = tuple(resolve_lazy_sign(self.name, name, value, copy=not prepared)
                       for name, value in zip(self.input_names, inputs))
        if out is not None:
            require_tensor(self.name, "out", out)
            resolve_lazy_sign(self.name, "out", out, copy=False)
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
    def _call_key(self, out, inputs, params, backend) -> tuple:
        """The call's signature (see the module docstring): the same tuple
        call() builds inline. Raises for arguments it cannot describe (not
        tensors, unhashable params)."""
        key = (self, backend, params, _param_types(params) if params else ())
        for t in inputs:
            key += (t.dtype, t.shape, t.stride(), t.device)
        if out is None:
            return key
        return key + (out.dtype, out.shape, out.stride(), out.device)

    def call(self, out, inputs: tuple, params: tuple, backend):
        # The fast path, kept flat: every line here is paid by every call.
        if _compiling():  # dynamo traces the registered operator instead
            return self._torch_op_call(out, inputs, params, backend)
        if _NATIVE_CALL is not None:  # the steps below, in C, for entries with a native record
            key = _NATIVE_CALL(self, out, inputs, params, backend)
            if type(key) is not tuple:
                if key is not None:
                    return key  # the output: the call ran
                return self._call_slow(out, inputs, params, backend, None)
            entry = _CALLS.get(key)
        else:
            try:
                if params:
                    types = tuple(map(type, params))
                    if tuple in types:
                        types = _param_types(params)
                else:
                    types = ()
                if len(inputs) == 1:
                    a, = inputs
                    if out is None:
                        key = (self, backend, params, types, a.dtype, a.shape, a.stride(), a.device)
                    else:
                        key = (self, backend, params, types, a.dtype, a.shape, a.stride(), a.device,
                               out.dtype, out.shape, out.stride(), out.device)
                elif len(inputs) == 2:
                    a, b = inputs
                    if out is None:
                        key = (self, backend, params, types, a.dtype, a.shape, a.stride(), a.device,
                               b.dtype, b.shape, b.stride(), b.device)
                    else:
                        key = (self, backend, params, types, a.dtype, a.shape, a.stride(), a.device,
                               b.dtype, b.shape, b.stride(), b.device, out.dtype, out.shape, out.stride(),
                               out.device)
                else:
                    key = self._call_key(out, inputs, params, backend)
                entry = _CALLS.get(key)
            except Exception:  # the slow path says what is wrong with the arguments
                key = entry = None
        if entry is None:
            return self._call_slow(out, inputs, params, backend, key)
        # A tensor with torch's negative bit has a plain tensor's signature;
        # the slow path resolves or refuses it. (A conjugate bit comes only
        # with complex dtypes, which no entry has.)
        for t in inputs:
            if t.is_neg() or type(t) not in _PLAIN_TENSORS or (t.requires_grad and _grad_enabled()):
                return self._call_slow(out, inputs, params, backend, key)
        if out is None:
            like = entry.like
            if like is not None and type(inputs[like]) is torch.Tensor:  # a subclass may override empty_like
                out = torch.empty_like(inputs[like])
            else:
                out = entry.new_out()
        else:
            if out.is_neg() or type(out) not in _PLAIN_TENSORS or (out.requires_grad and _grad_enabled()):
                return self._call_slow(out, inputs, params, backend, key)
            out_ptr = out.data_ptr()
            o0, o1 = entry.out_span
            o0 += out_ptr
            o1 += out_ptr
            for index, lo, hi, same in entry.spans:
                ptr = inputs[index].data_ptr()
                if ptr + lo < o1 and o0 < ptr + hi and not (same and ptr == out_ptr):
                    return self._call_slow(out, inputs, params, backend, None)  # raises the overlap error
        descriptor = entry.descriptor
        execute = entry.c_execute
        if execute is not None:
            if descriptor._handle is None:  # destroyed behind the cache's back: make a new one
                DESCRIPTOR_CACHE.drop_call(key)
                return self._call_slow(out, inputs, params, backend, key)
        else:
            if not _alive(descriptor):
                DESCRIPTOR_CACHE.drop_call(key)
                return self._call_slow(out, inputs, params, backend, key)
            if entry.expand:  # a Python descriptor may read shapes: give it the plan's (broadcast) views
                inputs = tuple(t if shape is None else t.expand(shape) for t, shape in zip(inputs, entry.expand))
        entry.slot.used = True
        cuda_index = entry.cuda_index
        if cuda_index is None:
            stream = None
        else:
            raw_stream = entry.raw_stream
            stream = raw_stream(cuda_index) if raw_stream is not None else entry.impl.stream(entry.device)
            if cuda_current_device() != cuda_index:
                workspace = _call_workspace(entry.device, stream, entry.workspace_size, True)
                _launch(entry.impl, cuda_index, descriptor, out, inputs, workspace, entry.device)
                if entry.out_span is not None:
                    _bump_version((out,))
                return out
        if execute is None or entry.workspace_size:
            workspace = _call_workspace(entry.device, stream, entry.workspace_size, cuda_index is not None)
            descriptor.execute(out, inputs, workspace, stream)
        else:
            # A C descriptor without workspace: only data pointers cross (an
            # expanded view shares its tensor's).
            execute(None, 0, out, inputs, stream)
        if entry.out_span is not None:  # a given out: autograd must see the write
            _bump_version((out,))
        return out

    def _torch_op_call(self, out, inputs, params, backend):
        """The call through the registered operator, which picks the
        backend from the device as backend=None does."""
        if backend is not None and inputs and isinstance(inputs[0], torch.Tensor) and \
                parse_backend(backend) != default_backend(inputs[0].device):
            raise NotImplementedError(f"{self.name}: under torch.compile, fake tensors, dispatch modes or "
                                      f"autograd the backend follows the tensors' device; got backend={backend!r}")
        return call_torch_op(self.name, out, inputs, params)

    def _call_slow(self, out, inputs: tuple, params: tuple, backend, call_key):
        given_out = out is not None
        if _needs_torch_op(out, inputs):
            return self._torch_op_call(out, inputs, params, backend)
        impl, plan, out = self._resolve(out, inputs, params, backend)
        # A fast-path entry needs the plan's inputs to be the caller's
        # tensors, at most expanded (same data pointers).
        direct = len(plan.inputs) == len(inputs) and all(
            p.data_ptr() == t.data_ptr() for p, t in zip(plan.inputs, inputs))
        if out.numel() == 0:  # nothing to run (and nothing recorded: empty outputs are rare)
            return out
        descriptor_key = self._key(impl, out, plan)
        slot = DESCRIPTOR_CACHE.get_or_create_slot(
            descriptor_key, lambda: impl.create(self, out, plan.inputs, plan.params))
        descriptor = slot.descriptor
        cuda_index = out.device.index if impl.device_type == "cuda" else None
        workspace = None
        if descriptor.workspace_size:
            cuda = cuda_index is not None
            stream = impl.stream(out.device) if cuda else None
            workspace = WORKSPACES.get(out.device, stream, descriptor.workspace_size, cuda)
        _launch(impl, cuda_index, descriptor, out, plan.inputs, workspace, out.device)
        if given_out:  # autograd must see the write
            _bump_version((out,))
        if call_key is not None and direct:
            entry = _CallEntry(slot, descriptor_key, impl, out, plan, inputs, given_out)
            DESCRIPTOR_CACHE.add_call(call_key, slot, entry)
        return out

    @staticmethod
    def missing_out(form: str):
        """op_(None, ...) would silently be op(...)."""
        raise TypeError(f"{form}: out is required (a torch.Tensor), got None")

    def prepare(self, out, inputs: tuple, params: tuple, backend) -> "PreparedOp":
        if out is None:
            self.missing_out(f"prepare_{self.name}")
        impl, plan, out = self._resolve(out, inputs, params, backend, prepared=True)
        descriptor = impl.create(self, out, plan.inputs, plan.params)
        return PreparedOp(self, impl, descriptor, out, plan, inputs)


DESCRIPTOR_CACHE = DescriptorCache()
_CALLS = DESCRIPTOR_CACHE.calls  # the same dict object for the cache's whole life (clear() empties it)


def _native_functions():
    """fast_call.c's call() and run(), bound to this cache and torch's entry
    points, and the most inputs it launches; (None, None, 0) without the module."""
    module = fast_call_module()
    if module is None:
        return None, None, 0
    module.configure(_CALLS, torch.Tensor, torch.empty_like, CUDA_RAW_STREAM, CUDA_GET_DEVICE, torch.nn.Parameter,
                     _grad_enabled, _bump_version)
    module.set_tensor_access(tensor_access_api())
    return module.call, module.run, module.MAX_INPUTS


_NATIVE_CALL, _NATIVE_RUN, _NATIVE_MAX_INPUTS = _native_functions()


class PreparedOp:
    """A descriptor bound to fixed shapes, strides, dtypes and params, with its
    workspace allocated once. ``run()`` executes on the prepared tensors;
    ``run(out, *inputs)`` on new tensors of identical layout.

    ``run()`` checks every call that the prepared tensors still have the
    data pointers, shapes and strides they had (``set_``, ``resize_`` or
    ``.data =`` may change them): new data pointers are re-bound (overlap
    checked again), a new layout is refused. Concurrent runs are safe: a run
    that finds the prepared workspace in use takes its thread's own."""

    def __init__(self, operator: Operator, impl, descriptor, out: torch.Tensor, plan: Plan, given: tuple):
        self._operator = operator
        self._impl = impl
        self._descriptor = descriptor
        self._out = out
        self._given = tuple(given)  # the caller's inputs (the plan's may be broadcast views of them)
        self._inputs = plan.inputs
        self._stride_zero = [tuple(s == 0 for s in t.stride()) for t in plan.inputs]
        self._signatures = (_signature(out),) + tuple(_signature(t) for t in plan.inputs)
        self._device = out.device
        self._cuda_index = out.device.index if impl.device_type == "cuda" else None
        self._empty = out.numel() == 0
        self._state = self._bound_state(out, plan.inputs)
        self.workspace_size = descriptor.workspace_size
        self._workspace = (torch.empty(self.workspace_size, dtype=torch.uint8, device=out.device)
                           if self.workspace_size else None)
        # Held by the run using the prepared workspace (CPU: while it runs; CUDA: while it launches).
        self._claim = threading.Lock() if self.workspace_size else None
        # run() on CPU calls a C descriptor's raw entry point (workspace pointer precomputed).
        self._c_execute = getattr(descriptor, "c_execute", None) if self._cuda_index is None else None
        self._ws = ((self._workspace.data_ptr(), self._workspace.numel()) if self._workspace is not None
                    else (None, 0))
        self._native = None if self._empty else _native_record(
            descriptor, None, None, self._cuda_index, None, (), self._workspace, len(self._inputs))

    def _bound_state(self, out, inputs) -> tuple:
        """What run() compares (fast_call.c reads it by position): whether the
        launch may take the recorded pointers (each input of the plan starts
        where the caller's does), then [tensor, data pointer, version, shape,
        strides] of out and of each caller's input (a list: a run updates the
        version of what it wrote, see _wrote). A tensor is unchanged when
        its data pointer is, and its version counter or else its shape and
        strides: every in-place op that changes a layout (set_, resize_,
        as_strided_, transpose_, ...) bumps the counter. ``.data =`` keeps it,
        but a new storage brings a new data pointer; only a new layout over
        the same memory (``.data = t.view(...)``) passes, and it stays within
        the memory the descriptor's layout was checked against."""
        bound = (out,) + self._given
        direct = len(inputs) == len(self._given) and all(
            p.data_ptr() == g.data_ptr() for p, g in zip(inputs, self._given))
        return (direct,) + tuple([t, t.data_ptr(), _version_of(t), t.shape, t.stride()] for t in bound)

    def _wrote(self, out, state) -> None:
        """After a write into out: its version counter bumped (autograd sees
        the write), and the bound state told, so the next run still takes
        the version check's short way."""
        _bump_version((out,))
        if state is not None:
            for item in self._state[1:]:
                if item[0] is out and item[2] is not None:
                    item[2] = out._version

    def _refuse_autograd(self, out, inputs) -> None:
        error = autograd_refusal(f"prepared {self._operator.name}.run", out, inputs)
        if error is not None:
            raise error

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
        descriptor = self._descriptor
        if descriptor is None:
            raise RuntimeError(f"prepared {self._operator.name} was destroyed")
        if out is None and not inputs:
            state = self._state
            out, inputs = self._out, self._inputs
        else:
            state = None
            out, inputs = self._rebind(out, inputs)
        if self._empty:
            return out
        claim = self._claim
        if claim is not None and not claim.acquire(False):
            return self._run_contended(out, inputs, state)
        try:
            native = self._native
            if native is not None:
                ran = _NATIVE_RUN(native, out, inputs, state)
                if ran is not None:
                    return ran
            self._refuse_autograd(out, inputs)
            if state is not None and self._moved(state):
                out, inputs = self._rebind_moved()
            execute = self._c_execute
            if execute is not None:
                if descriptor._handle is None:
                    raise RuntimeError(f"prepared {self._operator.name}: its descriptor was destroyed")
                ws_ptr, ws_size = self._ws
                execute(ws_ptr, ws_size, out, inputs, None)
            elif self._cuda_index is None:
                descriptor.execute(out, inputs, self._workspace, None)
            else:
                _launch(self._impl, self._cuda_index, descriptor, out, inputs, self._workspace, self._device)
            self._wrote(out, state)
            return out
        finally:
            if claim is not None:
                claim.release()

    def _run_contended(self, out, inputs, state):
        """Another run holds the prepared workspace: this one takes its
        thread's own (per device and stream, as op() calls do)."""
        self._refuse_autograd(out, inputs)
        if state is not None and self._moved(state):
            out, inputs = self._rebind_moved()
        cuda = self._cuda_index is not None
        stream = self._impl.stream(self._device) if cuda else None
        workspace = _call_workspace(self._device, stream, self.workspace_size, cuda)
        _launch(self._impl, self._cuda_index, self._descriptor, out, inputs, workspace, self._device)
        self._wrote(out, state)
        return out

    @staticmethod
    def _moved(state) -> bool:
        """Whether a prepared tensor changed (see _bound_state)."""
        for t, ptr, version, shape, stride in state[1:]:
            if t.data_ptr() != ptr or (version is None or t._version != version) and \
                    (t.shape != shape or t.stride() != stride):
                return True
        return False

    def _rebind_moved(self):
        """The prepared tensors after one of them changed since prepare: bound
        again where only data pointers moved; a new layout is refused."""
        op = self._operator
        try:
            out, inputs = self._rebind(self._out, self._given)
        except ValueError as error:
            raise ValueError(f"prepared {op.name}.run: a tensor it was prepared with changed since prepare "
                             f"(set_, resize_, .data = ...); prepare again. {error}") from None
        self._inputs = inputs
        self._state = self._bound_state(out, inputs)
        return out, inputs

    def _rebind(self, out, inputs):
        op = self._operator
        if len(inputs) != len(self._inputs):
            raise ValueError(f"prepared {op.name}.run takes out and {len(self._inputs)} input(s), "
                             f"got {len(inputs)} input(s)")
        require_tensor(op.name, "out", out)
        resolve_lazy_sign(op.name, "out", out, copy=False)
        for name, value in zip(op.input_names, inputs):
            require_tensor(op.name, name, value)
            resolve_lazy_sign(op.name, name, value, copy=False)
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
        self._workspace = self._native = None
        if descriptor is not None:
            descriptor.destroy()

    def __enter__(self) -> "PreparedOp":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return (f"Prepared{self._operator.name}(backend={self.backend!r}, variant={self.variant!r}, "
                f"workspace_size={self.workspace_size})")
