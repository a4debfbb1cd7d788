"""The NVIDIA elementwise engine (copy, vector_add) run on the CPU.

ops/common/nvidia/elementwise.cuh holds the engine's planning, its launch
code and its four kernels (dense, rows, flat, strided). None of them uses a
barrier, a shuffle or shared memory, so running every thread of a grid in
turn computes what the GPU computes. This test copies the engine's headers
next to the CPU shims in tests/emulation/nvidia/, rewrites each
`kernel<<<grid, block, shared, stream>>>(args)` into
`emulate_launch(kernel, grid, block, shared, stream, args)`, builds
tests/emulation/elementwise_harness.cc with g++ under AddressSanitizer and
UndefinedBehaviorSanitizer, and runs it: every layout's result against
offsets_at(), every 16-byte access checked for alignment, every access
checked for bounds. It checks the kernels' index logic wherever a C++
compiler is at hand; a GPU still checks the real thing
(tests/test_cuda_backends.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMON = ROOT / "ops" / "common"
EMULATION = Path(__file__).resolve().parent / "emulation"
ENGINE = ("elementwise.cuh", "offset_calc.cuh", "vectors.cuh")  # the real sources under test


def rewrite_launches(source: str) -> str:
    """kernel<<<config>>>(args) -> emulate_launch(kernel, config, args). The
    kernel expression (a name with template arguments) is found by walking
    back from <<< over balanced angle brackets."""
    out, pos = [], 0
    for match in re.finditer(r"<<<(.*?)>>>\(", source, flags=re.S):
        start = match.start()
        depth, i = 0, start - 1
        while i >= 0:
            ch = source[i]
            if ch == ">":
                depth += 1
            elif ch == "<":
                depth -= 1
            elif depth == 0 and not (ch.isalnum() or ch in "_:"):
                break
            i -= 1
        kernel = source[i + 1:start]
        out.append(source[pos:i + 1])
        out.append(f"emulate_launch({kernel}, {match.group(1)}, ")
        pos = match.end()
    out.append(source[pos:])
    return "".join(out)


def test_rewrite_launches():
    src = "x;\n  k<A, B<C>, 2><<<grid, 128, 0, stream>>>(a, b);\n  f<<<g, t, 0, s>>>(c);"
    assert rewrite_launches(src) == ("x;\n  emulate_launch(k<A, B<C>, 2>, grid, 128, 0, stream, a, b);\n"
                                     "  emulate_launch(f, g, t, 0, s, c);")


def test_elementwise_engine_emulated(tmp_path):
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no g++ to build the emulation")
    shutil.copytree(COMMON, tmp_path / "common", ignore=shutil.ignore_patterns("nvidia", "cpu", "*.cc"))
    nvidia = tmp_path / "common" / "nvidia"
    shutil.copytree(EMULATION / "nvidia", nvidia)
    for name in ENGINE:
        source = (COMMON / "nvidia" / name).read_text()
        (nvidia / name).write_text(rewrite_launches(source))
    assert "<<<" not in (nvidia / "elementwise.cuh").read_text()
    harness = tmp_path / "common" / "elementwise_harness.cc"
    shutil.copy(EMULATION / "elementwise_harness.cc", harness)
    binary = tmp_path / "harness"
    build = subprocess.run([compiler, "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined",
                            "-fno-sanitize-recover=all", "-Wno-unknown-pragmas", f"-I{ROOT / 'include'}",
                            str(harness), "-o", str(binary)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.rstrip().endswith("ok"), \
        (result.stdout[-3000:] + result.stderr[-3000:])
    kinds = {line.split()[1] for line in result.stdout.splitlines()[:-1]}
    assert kinds == {"dense", "rows", "flat", "strided"}, kinds  # every kernel ran
