"""Concurrency: 8 threads running thousands of calls of every op at once
must give results bitwise equal to the same calls run on one thread.

- The Python API: out-of-place, op_ and per-thread prepared calls over more
  distinct shapes, dtypes and layouts than the descriptor cache holds (its
  capacity is shrunk where it has one, so descriptors are evicted and
  re-created while other threads are running them), and calls whose
  descriptor needs a workspace.
- The C ABI: descriptors created, run and destroyed on many threads at once,
  descriptors shared by every thread, and descriptors created on one thread
  and run and destroyed on another.

No op is named here."""

from __future__ import annotations

import ctypes
import queue
import random
import threading
from dataclasses import dataclass

import pytest
import torch

from described_calls import OP_NAMES, batched, cases_needing_workspace, forms, make_call, small_case
from operator_runtime import Backend
from operator_runtime._internal import operator as engine
from operator_runtime._internal.backends import backend_impl
from operator_runtime._internal.tensors import DTYPE_CODES
from operator_runtime.ops import DESCRIPTIONS
from operator_runtime_testing import assert_bitwise_equal, fresh_like, make_generator, poison
# The C call helpers stay in test_c_abi.py (shared from there).
from c_abi_calls import create, functions, last_error, planned, view

THREADS = 8
CALLS_PER_THREAD = 4000
CACHE_CAPACITY = 16          # far below the distinct calls below, so the cache keeps evicting
BATCH_SIZES = range(1, 9)    # leading dims: distinct shapes, hence distinct descriptors


def run_threads(worker, count: int = THREADS, timeout: float = 300.0) -> None:
    """worker(index, errors) on `count` threads started together; fails with
    the first errors any of them recorded."""
    errors: list = []
    barrier = threading.Barrier(count)

    def body(index):
        try:
            barrier.wait()
            worker(index, errors)
        except BaseException as error:  # noqa: BLE001 - every failure is reported by the main thread
            errors.append(f"thread {index}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=body, args=(k,), daemon=True) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(t.is_alive() for t in threads), f"threads still running after {timeout} s (a deadlock?)"
    assert not errors, f"{len(errors)} failures, the first: " + "\n".join(errors[:5])


# -- the Python API ---------------------------------------------------------------------------

@dataclass
class Task:
    """One call: form "op", "op_" or "prepare"; `expected` is its result on one thread."""

    name: str
    form: str
    inputs: list
    params: dict
    out: torch.Tensor | None
    expected: torch.Tensor | None = None

    def run(self, backend, out=None):
        op, op_, _ = forms(self.name)
        if self.form == "op":
            return op(*self.inputs, **self.params, backend=backend)
        return op_(out, *self.inputs, **self.params, backend=backend)

    def describe(self) -> str:
        shapes = [tuple(t.shape) for t in self.inputs]
        return f"{self.name} {self.form} {self.inputs[0].dtype} {shapes} {self.params}"


def api_tasks(backend, dtypes, device) -> list:
    gen = make_generator(1234)
    tasks = []
    for name in OP_NAMES:
        for dtype in dtypes:
            for n in BATCH_SIZES:
                inputs, params = batched(name, n, device, dtype)
                inputs = [fresh_like(t, gen) for t in inputs]
                tasks.append(Task(name, "op", inputs, params, None))
            call = make_call(name, small_case(name), device, gen, dtype)  # non-contiguous inputs and out
            tasks.append(Task(name, "op_", call.inputs, call.params, call.out))
            tasks.append(Task(name, "prepare", call.inputs, call.params, call.out))
        for case in cases_needing_workspace(name, backend, device, make_generator(0), contiguous=True)[:2]:
            call = make_call(name, case, device, gen, contiguous=True)
            tasks += [Task(name, "op", call.inputs, call.params, None), Task(name, "op_", call.inputs, call.params,
                                                                            call.out)]
    for task in tasks:
        task.expected = task.run(backend, None if task.out is None else poison(fresh_like(task.out, gen))).clone()
    return tasks


@pytest.fixture
def thrashing_cache(monkeypatch):
    """A descriptor cache far smaller than the calls of the test."""
    cache = getattr(engine, "DESCRIPTOR_CACHE", None)
    if cache is not None and hasattr(cache, "capacity"):
        monkeypatch.setattr(cache, "capacity", CACHE_CAPACITY)
        if hasattr(cache, "call_capacity"):
            monkeypatch.setattr(cache, "call_capacity", 4 * CACHE_CAPACITY)
        cache.clear()
    yield
    if cache is not None and hasattr(cache, "clear"):
        cache.clear()


def test_api_calls_from_threads(backend, dtypes, device, thrashing_cache):
    tasks = api_tasks(backend, dtypes, device)
    assert len(tasks) > 4 * CACHE_CAPACITY

    def worker(index, errors):
        rng = random.Random(index)
        gen = make_generator(index)
        outs = {}      # per thread: its own out (and prepared op) for every task that has one
        prepared = {}
        try:
            for _ in range(CALLS_PER_THREAD):
                if errors:
                    return
                k = rng.randrange(len(tasks))
                task = tasks[k]
                if task.out is not None and k not in outs:
                    outs[k] = fresh_like(task.out, gen)
                    if task.form == "prepare":
                        _, _, prepare = forms(task.name)
                        prepared[k] = prepare(outs[k], *task.inputs, **task.params, backend=backend)
                if task.form == "prepare":
                    poison(outs[k])
                    result = prepared[k].run()
                else:
                    result = task.run(backend, None if task.out is None else poison(outs[k]))
                assert_bitwise_equal(result, task.expected, f"thread {index}: {task.describe()}")
        finally:
            for p in prepared.values():
                p.destroy()

    run_threads(worker)


# -- the C ABI --------------------------------------------------------------------------------

@dataclass
class CTask:
    """One C call of op `name` on contiguous tensors; `expected` from one thread."""

    name: str
    fns: object
    out_shape: tuple
    input_shapes: list
    c_params: list
    inputs: list
    expected: torch.Tensor | None = None

    def create(self):
        code = DTYPE_CODES[self.inputs[0].dtype]
        status, handle = create(self.fns, view(self.out_shape, dtype=code),
                                [view(s, dtype=code) for s in self.input_shapes], self.c_params)
        assert status == 0, f"{self.name}: create failed: {last_error()}"
        return handle

    def execute(self, handle) -> torch.Tensor:
        size = ctypes.c_size_t()
        assert self.fns.workspace(handle, ctypes.byref(size)) == 0, last_error()
        device = self.inputs[0].device
        workspace = torch.empty(size.value, dtype=torch.uint8, device=device) if size.value else None
        out = torch.full(self.out_shape, float("nan"), dtype=self.inputs[0].dtype, device=device)
        status = self.fns.execute(handle, None if workspace is None else workspace.data_ptr(), size.value,
                                  out.data_ptr(), *[t.data_ptr() for t in self.inputs], None)
        assert status == 0, f"{self.name}: execute failed: {last_error()}"
        return out


def c_tasks(c_backend, dtypes, device) -> list:
    gen = make_generator(99)
    tasks = []
    for name in OP_NAMES:
        fns = functions(name, c_backend)
        arity = len(DESCRIPTIONS[name].inputs)
        for dtype in dtypes:
            for shape in [(n, 37) for n in (1, 3, 64)] + [(0, 5), (2, 3, 5)]:
                out_shape, input_shapes, c_params = planned(name, [shape] * arity)
                inputs = [fresh_like(torch.empty(s, dtype=dtype, device=device), gen) for s in input_shapes]
                tasks.append(CTask(name, fns, out_shape, input_shapes, c_params, inputs))
    for task in tasks:
        handle = task.create()
        try:
            task.expected = task.execute(handle)
        finally:
            assert task.fns.destroy(handle) == 0, last_error()
    return tasks


def test_c_descriptors_from_threads(c_backend, device):
    tasks = c_tasks(c_backend, backend_impl(Backend(c_backend)).dtypes, device)
    shared = [task.create() for task in tasks]  # run by every thread at once
    handoff: queue.Queue = queue.Queue()        # created on one thread, run and destroyed on another

    def check(task, handle, index, how):
        assert_bitwise_equal(task.execute(handle), task.expected, f"thread {index}, {how} descriptor: {task.name}")

    def worker(index, errors):
        rng = random.Random(1000 + index)
        for step in range(CALLS_PER_THREAD // 2):
            if errors:
                return
            k = rng.randrange(len(tasks))
            task = tasks[k]
            check(task, shared[k], index, "shared")
            handle = task.create()
            try:
                check(task, handle, index, "own")
            finally:
                assert task.fns.destroy(handle) == 0, last_error()
            handoff.put((k, task.create()))
            try:
                k, handle = handoff.get(timeout=60)
            except queue.Empty:
                raise AssertionError("no descriptor was handed over") from None
            try:
                check(tasks[k], handle, index, "handed-over")
            finally:
                assert tasks[k].fns.destroy(handle) == 0, last_error()

    try:
        run_threads(worker)
    finally:
        for task, handle in zip(tasks, shared):
            assert task.fns.destroy(handle) == 0, last_error()
