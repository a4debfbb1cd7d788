"""The NVIDIA backend's copy and vector_add plans, checked without a GPU.

Creating their descriptors makes no CUDA call, so the variant each layout
gets is testable wherever the library was built with CUDA (CI builds it so,
on a machine with no GPU): these tests pin the planner's rules and its
OPRT_TUNE_* switches. Whether each variant computes the right values is
checked on a GPU (tests/test_cuda_backends.py, test_variant). reduce_sum and
softmax plan from the device's properties, so their plans are checked
there too.
"""

from __future__ import annotations

import pytest
import torch

from operator_runtime._internal.library import library
from operator_runtime._internal.tensors import DTYPE_CODES
from test_c_abi import Functions, create, view

F32, F16, BF16 = (DTYPE_CODES[t] for t in (torch.float32, torch.float16, torch.bfloat16))
FLAT = {"ELEMENTWISE_FLAT": 1}  # flat wherever it applies
NO_FLAT = {"ELEMENTWISE_FLAT": 0}
ODD = {"COPY_ODD_KERNEL": 1}  # (planned)
ODD_MEMCPY = {"COPY_ODD_KERNEL": 0}


def _planned_variant(op, shape, input_strides, out_dtype, in_dtype, out_strides=None):
    try:
        fns = Functions(op, "nvidia")
    except AttributeError:
        pytest.skip("the library was built without the NVIDIA backend")
    out = view(shape, out_strides, out_dtype)  # (no data: create never reads it)
    status, handle = create(fns, out, [view(shape, strides, in_dtype) for strides in input_strides], [])
    assert status == 0, library().oprt_last_error().decode()
    try:
        return library().oprt_descriptor_variant(handle).decode()
    finally:
        assert fns.destroy(handle) == 0


# (name, op, shape, input strides, out dtype, input dtype, OPRT_TUNE_* values, variant)
CASES = [
    ("copy-memcpy", "copy", (1 << 20,), [(1,)], F32, F32, {}, "memcpy"),
    ("copy-convert", "copy", (1 << 20,), [(1,)], F16, F32, {}, "dense"),
    # bytes not whole 16-byte words: the dense kernel unless told
    ("copy-odd-bytes", "copy", (100003,), [(1,)], F32, F32, {}, "dense"),
    ("copy-odd-bytes-16bit", "copy", (100003,), [(1,)], BF16, BF16, {}, "dense"),
    ("copy-odd-bytes-told-memcpy", "copy", (100003,), [(1,)], F32, F32, ODD_MEMCPY, "memcpy"),
    ("copy-whole-words-told", "copy", (100000,), [(1,)], F32, F32, ODD, "memcpy"),
    # flat where float32 rows cannot be whole 16-byte vectors (4 elements), rows otherwise (16-bit: rows)
    ("copy-sliced-rows", "copy", (300, 1000), [(1024, 1)], F32, F32, {}, "rows"),
    ("copy-sliced-rows-flat", "copy", (300, 1000), [(1024, 1)], F32, F32, FLAT, "flat"),
    ("copy-sliced-rows-odd", "copy", (300, 1001), [(1024, 1)], F32, F32, {}, "flat"),
    ("copy-broadcast-row", "copy", (700, 512), [(0, 1)], F16, F16, {}, "rows"),
    ("copy-broadcast-row-odd", "copy", (700, 513), [(0, 1)], F16, F16, {}, "rows"),
    ("copy-broadcast-row-odd-f32", "copy", (700, 513), [(0, 1)], F32, F32, {}, "flat"),
    ("copy-broadcast-row-odd-told-rows", "copy", (700, 513), [(0, 1)], F16, F16, NO_FLAT, "rows"),
    ("copy-broadcast-row-convert", "copy", (700, 516), [(0, 1)], F32, BF16, {}, "rows"),  # 8-element vectors
    ("copy-broadcast-column-flat", "copy", (700, 5), [(1, 0)], F32, BF16, FLAT, "flat"),
    ("copy-transpose-vec", "copy", (1024, 768), [(1, 1024)], BF16, BF16, {}, "transpose_vec"),
    ("copy-transpose-vec-flat", "copy", (1024, 768), [(1, 1024)], BF16, BF16, FLAT, "transpose_vec"),
    # out rows not whole vectors: transpose_vec_shift (src side whole vectors), never across dtypes;
    # COPY_TRANSPOSE_VEC=2 tells transpose_tiled (the plan before)
    ("copy-transpose-odd", "copy", (1000, 777), [(1, 1000)], F32, F32, {}, "transpose_vec_shift"),
    ("copy-transpose-odd-16bit", "copy", (1000, 777), [(1, 1000)], BF16, BF16, {}, "transpose_vec_shift"),
    ("copy-transpose-odd-told-tiled", "copy", (1000, 777), [(1, 1000)], BF16, BF16, {"COPY_TRANSPOSE_VEC": 2},
     "transpose_tiled"),
    ("copy-transpose-odd-shift-convert", "copy", (1000, 777), [(1, 1000)], F32, BF16, {}, "transpose_tiled"),
    ("copy-transpose-vec-not-shifted", "copy", (1024, 768), [(1, 1024)], F32, F32, {}, "transpose_vec"),
    ("copy-transpose-odd-src", "copy", (1001, 776), [(1, 1001)], F32, F32, {}, "transpose_tiled"),
    ("copy-every-other", "copy", (64, 50, 30), [(3000, 60, 2)], F32, F32, FLAT, "strided"),
    ("add-dense", "vector_add", (1 << 20,), [(1,), (1,)], F32, F32, {}, "dense"),
    ("add-scalar", "vector_add", (4096,), [(1,), (0,)], BF16, BF16, FLAT, "dense"),
    ("add-bias", "vector_add", (512, 1000), [(1000, 1), (0, 1)], F32, F32, {}, "rows"),
    ("add-bias-16bit", "vector_add", (512, 1024), [(1024, 1), (0, 1)], BF16, BF16, {}, "rows"),
    ("add-bias-16bit-odd", "vector_add", (512, 1004), [(1004, 1), (0, 1)], BF16, BF16, {}, "rows"),
    ("add-bias-flat", "vector_add", (512, 1000), [(1000, 1), (0, 1)], F32, F32, FLAT, "flat"),
    ("add-bias-odd", "vector_add", (512, 2053), [(2053, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-bias-odd-told-rows", "vector_add", (512, 2053), [(2053, 1), (0, 1)], F32, F32, NO_FLAT, "rows"),
    ("add-column", "vector_add", (300, 1024), [(1024, 1), (1, 0)], BF16, BF16, {}, "rows"),
    ("add-column-odd-16bit", "vector_add", (300, 1001), [(1001, 1), (1, 0)], BF16, BF16, {}, "rows"),
    ("add-column-flat", "vector_add", (300, 1001), [(1001, 1), (1, 0)], F32, F32, {}, "flat"),
    # rows under 64 elements: flat, also below a vector (strided when told)
    ("add-short-rows", "vector_add", (4099, 3), [(3, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-short-rows-told-strided-f32", "vector_add", (4099, 3), [(3, 1), (0, 1)], F32, F32, NO_FLAT, "strided"),
    ("add-short-rows-one-vector", "vector_add", (4099, 4), [(4, 1), (0, 1)], F32, F32, {}, "flat"),
    ("add-short-rows-16bit", "vector_add", (4099, 7), [(7, 1), (0, 1)], F16, F16, {}, "flat"),
    ("add-short-rows-transposed", "vector_add", (4099, 3), [(1, 4099), (0, 1)], F32, F32, {}, "strided"),
    ("add-short-rows-column", "vector_add", (4099, 3), [(3, 1), (1, 0)], F32, F32, {}, "flat"),
    ("add-short-rows-column-told-strided", "vector_add", (4099, 3), [(3, 1), (1, 0)], F32, F32, NO_FLAT, "strided"),
    # (a 3-D input needs the calculator per element: strided)
    ("add-short-rows-3d-column", "vector_add", (5, 300, 3), [(900, 3, 1), (600, 1, 0)], F32, F32, {}, "strided"),
    ("add-short-rows-column-one-vector", "vector_add", (4099, 4), [(4, 1), (1, 0)], F32, F32, {}, "flat"),
    ("add-short-rows-16", "vector_add", (1 << 16, 16), [(16, 1), (0, 1)], BF16, BF16, {}, "flat"),
    ("add-short-rows-told-strided", "vector_add", (1 << 16, 16), [(16, 1), (0, 1)], BF16, BF16, NO_FLAT,
     "strided"),
    ("add-3d-flat", "vector_add", (6, 70, 33), [(2310, 33, 1), (0, 1, 0)], F16, F16, FLAT, "flat"),
    ("add-transposed-flat", "vector_add", (300, 1000), [(1, 300), (1000, 1)], F32, F32, FLAT, "strided"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_planned_variant(case, monkeypatch):
    name, op, shape, input_strides, out_dtype, in_dtype, tune, expected = case
    for key in ("ELEMENTWISE_FLAT", "COPY_ODD_KERNEL", "COPY_TRANSPOSE_VEC"):
        monkeypatch.delenv("OPRT_TUNE_" + key, raising=False)
    for key, value in tune.items():
        monkeypatch.setenv("OPRT_TUNE_" + key, str(value))  # read by the descriptor's create
    assert _planned_variant(op, shape, input_strides, out_dtype, in_dtype) == expected, name


def test_flat_needs_a_contiguous_out(monkeypatch):
    """out's rows 24 elements apart: `rows`, told or not."""
    monkeypatch.setenv("OPRT_TUNE_ELEMENTWISE_FLAT", "1")
    variant = _planned_variant("vector_add", (300, 1000), [(1000, 1), (0, 1)], F32, F32, out_strides=(1024, 1))
    assert variant == "rows"
