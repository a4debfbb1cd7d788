"""The NVIDIA copy plans (conversions, memcpy, transposes), checked without
a GPU: creating a descriptor makes no CUDA call, so the variant each layout
gets is testable wherever the library was built with CUDA. Whether each
variant computes the right values is checked on a GPU (test_copy_nvidia.py)."""

from __future__ import annotations

import pytest

from cuda_helpers import BF16_CODE as BF16, F16_CODE as F16, F32_CODE as F32, planned_variant

FLAT = {"ELEMENTWISE_FLAT": 1}  # flat wherever it applies
NO_FLAT = {"ELEMENTWISE_FLAT": 0}
ODD = {"COPY_ODD_KERNEL": 1}  # (planned)
ODD_MEMCPY = {"COPY_ODD_KERNEL": 0}

# (name, shape, input strides, out dtype, input dtype, OPRT_TUNE_* values, variant)
CASES = [
    ("copy-memcpy", (1 << 20,), [(1,)], F32, F32, {}, "memcpy"),
    ("copy-convert", (1 << 20,), [(1,)], F16, F32, {}, "dense"),
    # bytes not whole 16-byte words: the dense kernel unless told
    ("copy-odd-bytes", (100003,), [(1,)], F32, F32, {}, "dense"),
    ("copy-odd-bytes-16bit", (100003,), [(1,)], BF16, BF16, {}, "dense"),
    ("copy-odd-bytes-told-memcpy", (100003,), [(1,)], F32, F32, ODD_MEMCPY, "memcpy"),
    ("copy-whole-words-told", (100000,), [(1,)], F32, F32, ODD, "memcpy"),
    # flat where float32 rows cannot be whole 16-byte vectors (4 elements), rows otherwise (16-bit: rows)
    ("copy-sliced-rows", (300, 1000), [(1024, 1)], F32, F32, {}, "rows"),
    ("copy-sliced-rows-flat", (300, 1000), [(1024, 1)], F32, F32, FLAT, "flat"),
    ("copy-sliced-rows-odd", (300, 1001), [(1024, 1)], F32, F32, {}, "flat"),
    ("copy-broadcast-row", (700, 512), [(0, 1)], F16, F16, {}, "rows"),
    ("copy-broadcast-row-odd", (700, 513), [(0, 1)], F16, F16, {}, "rows"),
    ("copy-broadcast-row-odd-f32", (700, 513), [(0, 1)], F32, F32, {}, "flat"),
    ("copy-broadcast-row-odd-told-rows", (700, 513), [(0, 1)], F16, F16, NO_FLAT, "rows"),
    ("copy-broadcast-row-convert", (700, 516), [(0, 1)], F32, BF16, {}, "rows"),  # 8-element vectors
    ("copy-broadcast-column-flat", (700, 5), [(1, 0)], F32, BF16, FLAT, "flat"),
    ("copy-transpose-vec", (1024, 768), [(1, 1024)], BF16, BF16, {}, "transpose_vec"),
    ("copy-transpose-vec-flat", (1024, 768), [(1, 1024)], BF16, BF16, FLAT, "transpose_vec"),
    # out rows not whole vectors: transpose_vec_shift (src side whole vectors), never across dtypes;
    # COPY_TRANSPOSE_VEC=2 tells transpose_tiled (the plan before)
    ("copy-transpose-odd", (1000, 777), [(1, 1000)], F32, F32, {}, "transpose_vec_shift"),
    ("copy-transpose-odd-16bit", (1000, 777), [(1, 1000)], BF16, BF16, {}, "transpose_vec_shift"),
    ("copy-transpose-odd-told-tiled", (1000, 777), [(1, 1000)], BF16, BF16, {"COPY_TRANSPOSE_VEC": 2},
     "transpose_tiled"),
    ("copy-transpose-odd-shift-convert", (1000, 777), [(1, 1000)], F32, BF16, {}, "transpose_tiled"),
    ("copy-transpose-vec-not-shifted", (1024, 768), [(1, 1024)], F32, F32, {}, "transpose_vec"),
    ("copy-transpose-odd-src", (1001, 776), [(1, 1001)], F32, F32, {}, "transpose_tiled"),
    ("copy-every-other", (64, 50, 30), [(3000, 60, 2)], F32, F32, FLAT, "strided"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_planned_variant(case, monkeypatch):
    name, shape, input_strides, out_dtype, in_dtype, tune, expected = case
    assert planned_variant("copy", shape, input_strides, out_dtype, in_dtype, tune, monkeypatch) == expected, name
