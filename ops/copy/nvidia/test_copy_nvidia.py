"""copy's own NVIDIA kernels on a GPU (copy_nvidia.cu: the memcpy path,
dtype conversions, the transposes, odd byte counts): each variant at
moderate sizes (also the compute-sanitizer subset, `-k test_variant`), a
transposed and converted 8192^2, and more than 2**31 elements. What copy
shares with every elementwise op is tested in
ops/common/nvidia/test_elementwise_nvidia.py.

    python -m pytest ops/copy/nvidia/test_copy_nvidia.py --backend nvidia -q
"""

from __future__ import annotations

import pytest
import torch

import operator_runtime as oprt
from cuda_helpers import (NEEDS_CUDA, assert_variant, cuda_backend, dtype_params, equal_bits,  # noqa: F401
                          expected_variant, offset, randn, set_tune, variant_inputs)
from operator_runtime_testing import assert_bitwise_equal

pytestmark = NEEDS_CUDA

# Same-dtype copies whose bytes are not whole 16-byte words: the dense kernel (planned), or memcpy when told.
_ODD_COPY = {"nvidia_variant": "dense"}
_FLAT = {"tune": {"ELEMENTWISE_FLAT": 1}, "nvidia_variant": "flat"}

# (name, input shape, input layout, params, out dtype or None: the input's)
VARIANT_CASES = [
    ("copy-convert-dense", (1000, 1000), "contiguous", {}, torch.float32),
    # odd rows on both sides (1001 x 777): the scalar tiles; whole 16-byte vectors: transpose_vec, with
    # partial tiles (1000 x 776), batched (a dim outside the swapped pair), or a base one element
    # past a 16-byte boundary (planned transpose_vec, transpose_tiled runs)
    ("copy-transpose-tiled", (1001, 777), "transposed", {"nvidia_variant": "transpose_tiled"}, None),
    ("copy-transpose-vec", (1024, 768), "transposed", {"nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-vec-partial-tiles", (1000, 776), "transposed", {"nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-vec-batched", (3, 200, 136), "batch-transposed", {"nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-vec-unaligned-base", (1000, 776), "transposed-offset", {}, None),
    # out rows not whole vectors (777): transpose_vec_shift (16-byte src loads, shifted out stores)
    ("copy-transpose-vec-shift", (1000, 777), "transposed", {"nvidia_variant": "transpose_vec_shift"}, None),
    ("copy-transpose-vec-shift-batched", (3, 200, 137), "batch-transposed",
     {"nvidia_variant": "transpose_vec_shift"}, None),
    # out's base one element past a 16-byte boundary, rows whole vectors: planned transpose_vec, the shift runs
    ("copy-transpose-vec-out-offset", (1024, 768), "transposed",
     {"out_offset": True, "nvidia_variant": "transpose_vec"}, None),
    ("copy-transpose-odd-told-tiled", (1000, 777), "transposed",
     {"tune": {"COPY_TRANSPOSE_VEC": 2}, "nvidia_variant": "transpose_tiled"}, None),
    # a broadcast column converted to float32 through the flat kernel (told)
    ("copy-flat-column-convert", (700, 5), "expand-columns", _FLAT, torch.float32),
    # odd byte counts through the dense kernel (planned) instead of cudaMemcpyAsync (told)
    ("copy-odd-kernel", (100003,), "contiguous", _ODD_COPY, None),
    ("copy-odd-kernel-unaligned", (100003,), "offset", _ODD_COPY, None),
    ("copy-odd-memcpy-told", (100003,), "contiguous",
     {"tune": {"COPY_ODD_KERNEL": 0}, "nvidia_variant": "memcpy"}, None),
]


@pytest.mark.parametrize("dt", dtype_params())
@pytest.mark.parametrize("case", VARIANT_CASES, ids=[c[0] for c in VARIANT_CASES])
def test_variant(cuda_backend, case, dt, record_property, monkeypatch, request):
    """prepare_copy and copy() on layouts chosen to reach each of copy's own
    kernel variants (the variant is recorded in the junit XML); the
    sanitizer runs these. "tune" values are OPRT_TUNE_* overrides
    (ops/common/tuning.h) that reach variants the planner keeps for other
    shapes."""
    name, shape, layout, params, out_dtype = case
    set_tune(params.get("tune", {}), monkeypatch, request)
    (src,) = variant_inputs([shape], layout, dt)
    out = torch.full(src.shape, float("nan"), dtype=out_dtype or dt, device="cuda")
    if params.get("out_offset"):
        out = offset(out)
    with oprt.prepare_copy(out, src, backend=cuda_backend) as prepared:
        prepared.run()
        variant = prepared.variant
    equal_bits(out, src.to(out.dtype), name)
    equal_bits(oprt.copy(src, backend=cuda_backend), src.contiguous(), f"{name}: copy()")
    record_property("variant", variant)
    print(f"{name} {dt}: variant {variant}")
    assert_variant(cuda_backend, name, variant, expected_variant(params, dt))


@pytest.mark.parametrize("dt", dtype_params(torch.float32, torch.bfloat16))
def test_large_copy_transposed_converted(cuda_backend, dt):
    square = randn((8192, 8192), dt, 2)
    out = torch.empty(square.t().shape, dtype=torch.float16, device="cuda")
    oprt.copy_(out, square.t(), backend=cuda_backend)  # transposed and converted
    assert_bitwise_equal(out, square.t().to(torch.float16), "copy_ of a transposed 8192^2 into float16")


def test_copy_past_2_to_the_31(cuda_backend):
    """2**31 + 7 float16 elements (4 GiB a tensor): 32-bit indexing would
    wrap. Checked at the tail, around 2**31 and at random positions."""
    n = (1 << 31) + 7
    free, _ = torch.cuda.mem_get_info()
    if free < 9 * 2**30:
        pytest.skip(f"needs ~9 GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    src = torch.empty(n, dtype=torch.float16, device="cuda")
    src.normal_(generator=torch.Generator(device="cuda").manual_seed(9))
    src[-4096:] = torch.arange(4096, device="cuda", dtype=torch.float32).to(torch.float16)  # a known tail
    out = oprt.copy(src, backend=cuda_backend)
    assert out.shape == (n,) and out.dtype == torch.float16
    assert_bitwise_equal(out[-4096:], src[-4096:], "the last 4096 elements")
    assert_bitwise_equal(out[:4096], src[:4096], "the first 4096 elements")
    around = slice((1 << 31) - 4096, (1 << 31) + 7)
    assert_bitwise_equal(out[around], src[around], "around 2**31")
    picks = torch.randint(0, n, (1 << 20,), device="cuda", generator=torch.Generator(device="cuda").manual_seed(10))
    assert_bitwise_equal(out[picks], src[picks], "random positions")
    del out
    # a transposed copy of 2**31 elements (the tiled-transpose path): element
    # (i, j) of out is element (j, i) of the source view
    square = src[: n - 7].view(1 << 16, 1 << 15)
    out2 = torch.empty(1 << 15, 1 << 16, dtype=torch.float16, device="cuda")
    oprt.copy_(out2, square.t(), backend=cuda_backend)
    assert_bitwise_equal(out2[-1, -4096:], square[-4096:, -1], "transposed copy: the last row's tail")
    flat = picks % ((1 << 31) - 1)
    rows, cols = flat // (1 << 16), flat % (1 << 16)
    assert_bitwise_equal(out2[rows, cols], square[cols, rows], "transposed copy: random positions")
