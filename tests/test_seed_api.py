"""Code written against the seed project's API (its Python package and its
C headers ops/<op>/nvidia/<op>_cuda.h) runs unchanged: the seed's calls,
with ``backend`` positional, the seed's helpers, and the seed's C create
signatures under the seed's names. The seed's own tests are not in this
repository; these are its calls, run on every backend here."""

from __future__ import annotations

import ctypes

import pytest
import torch

import operator_runtime as ort
from c_abi_calls import PTR, STATUS, expect, functions, view
from operator_runtime import Backend, normalize_backend
from operator_runtime._internal.library import TensorView, find_function
from operator_runtime._internal.tensors import tensor_view
from operator_runtime_testing import assert_close, require_cuda


def _x(device, rows=4, cols=33):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(7)).to(device)


def test_seed_calls_with_positional_backend(backend, device):
    x, y = _x(device), _x(device) * 2
    assert_close(ort.copy(x, backend), x, atol=0, rtol=0)
    assert_close(ort.vector_add(x, y, backend), x + y, atol=1e-6, rtol=1e-6)
    assert_close(ort.softmax(x, 1, backend), torch.softmax(x, 1), atol=1e-6, rtol=1e-5)
    assert_close(ort.reduce_sum(x, 1, backend), x.sum(1), atol=1e-5, rtol=1e-5)
    out = torch.empty(x.shape[0], device=device)
    assert ort.reduce_sum_(out, x, 1, backend) is out
    assert_close(out, x.sum(1), atol=1e-5, rtol=1e-5)
    out = torch.empty_like(x)
    assert ort.softmax_(out, x, 1, Backend(backend)) is out
    assert ort.copy_(out, y, backend) is out and torch.equal(out, y)
    assert ort.vector_add_(out, x, y, backend) is out
    with ort.prepare_softmax(out, x, 1, backend) as prepared:
        prepared.run()
    assert_close(out, torch.softmax(x, 1), atol=1e-6, rtol=1e-5)
    with ort.prepare_reduce_sum(torch.empty(x.shape[0], device=device), x, 1, backend) as prepared:
        prepared.run()
        assert_close(prepared.out, x.sum(1), atol=1e-5, rtol=1e-5)


def test_seed_defaults_match_on_2d(backend, device):
    # The seed's dim default was 1; on its 2-D tensors that is today's -1.
    x = _x(device)
    assert_close(ort.softmax(x, backend=backend), torch.softmax(x, 1), atol=1e-6, rtol=1e-5)
    assert_close(ort.reduce_sum(x, backend=backend), x.sum(1), atol=1e-5, rtol=1e-5)


def test_positional_keepdim_still_means_keepdim():
    x = _x("cpu")
    assert ort.reduce_sum(x, 1, True).shape == (4, 1)
    assert ort.reduce_sum(x, 1, False, "cpu").shape == (4,)
    with pytest.raises(TypeError, match="keepdim"):
        ort.reduce_sum(x, 1, "cpu", backend="cpu")  # a str in keepdim's place is the backend only alone
    with pytest.raises(ValueError, match="unknown backend"):
        ort.reduce_sum(x, 1, "cuda-ish")


def test_normalize_backend():
    assert normalize_backend("NVIDIA") is Backend.NVIDIA
    assert normalize_backend(Backend.TILELANG) is Backend.TILELANG
    assert normalize_backend("metax") == "metax"  # Backend is a str enum, as in the seed
    with pytest.raises(ValueError, match="unknown backend"):
        normalize_backend("cuda")


def test_require_cuda():
    if torch.cuda.is_available():
        assert require_cuda() is None
    else:
        with pytest.raises(pytest.skip.Exception, match="CUDA is required"):
            require_cuda()


def test_seed_assert_close():
    a = torch.tensor([1.0, 2.0])
    assert_close(a, a + 1e-4, atol=1e-3, rtol=0)
    with pytest.raises(AssertionError):
        assert_close(a, a + 1e-2, atol=1e-3, rtol=0)


# -- C: the seed's create signatures under the seed's names -----------------------

def _seed_create(op: str, backend: str, argtypes: list):
    function = find_function(f"oprt_create_{op}_descriptor_{backend}", [ctypes.POINTER(PTR)] + argtypes)
    if function is None:
        pytest.skip(f"this build has no {op} kernel on {backend}")
    return function


@pytest.mark.parametrize("op, reference", [("softmax", lambda x: torch.softmax(x, 1)),
                                           ("reduce_sum", lambda x: x.sum(1))])
def test_seed_c_create_takes_an_int64_axis(c_backend, device, op, reference):
    view_p = ctypes.POINTER(TensorView)
    create = _seed_create(op, c_backend, [view_p, view_p, ctypes.c_int64])
    fns = functions(op, c_backend)
    x = _x(device)
    expected = reference(x)
    out = torch.empty_like(expected)
    handle = PTR()
    out_view, src_view = tensor_view(out, with_data=False), tensor_view(x, with_data=False)
    status = create(ctypes.byref(handle), ctypes.byref(out_view), ctypes.byref(src_view), ctypes.c_int64(1))
    assert status == STATUS["OPRT_STATUS_SUCCESS"]
    size = ctypes.c_size_t()
    assert fns.workspace(handle.value, ctypes.byref(size)) == 0
    workspace = torch.empty(max(size.value, 1), dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
    assert fns.execute(handle.value, workspace.data_ptr(), size.value, out.data_ptr(), x.data_ptr(), stream) == 0
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    assert fns.destroy(handle.value) == 0
    assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # An axis past int32 is refused, not truncated to a valid one.
    status = create(ctypes.byref(handle), ctypes.byref(out_view), ctypes.byref(src_view),
                    ctypes.c_int64(2**32 + 1))
    expect(status, "OPRT_STATUS_INVALID_ARGUMENT", "dim")


@pytest.mark.parametrize("op, inputs", [("copy", 1), ("vector_add", 2)])
def test_seed_c_create_unchanged_ops(c_backend, op, inputs):
    view_p = ctypes.POINTER(TensorView)
    create = _seed_create(op, c_backend, [view_p] * (1 + inputs))
    views = [view((3, 5)) for _ in range(1 + inputs)]
    handle = PTR()
    assert create(ctypes.byref(handle), *[ctypes.byref(v) for v in views]) == STATUS["OPRT_STATUS_SUCCESS"]
    assert functions(op, c_backend).destroy(handle.value) == 0
