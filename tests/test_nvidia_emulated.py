"""The NVIDIA backend's kernels run on the CPU, on an emulated GPU.

tests/emulation/include/ holds stand-ins for <cuda_runtime.h>,
<cuda_fp16.h>, <cuda_bf16.h> and <cooperative_groups.h> over
emulated_gpu.h: a GPU of a few SMs whose launches run every thread of a
block (of a cluster, of a cooperative grid) as a fiber, switched at
barriers and warp shuffles, so kernels that cooperate through shared
memory run as written. This test copies ops/ to a scratch folder, rewrites
each `kernel<<<grid, block, shared, stream>>>(args)` into
`emulate_launch(kernel, grid, block, shared, stream, args)` and each
`__shared__` declaration into the emulator's per-block storage, takes an
op's `#if __CUDA_ARCH__ >= 900` kernels as compiled (it emulates sm_90),
puts the stand-ins of global_memory.cuh and bulk_copy.cuh (alignment-
checked 16-byte accesses, asynchronous copies into shared memory) in place
of the PTX ones, and builds each harness in tests/emulation/ with the real
sources under AddressSanitizer and UndefinedBehaviorSanitizer:

- elementwise_harness.cc: the elementwise engine (copy, vector_add) on
  every layout it plans for, against offsets_at();
- copy_add_harness.cc, reduce_sum_harness.cc, softmax_harness.cc: the
  ops' plans, launches and kernels through their C entry points, every
  variant (some reached through the plans' OPRT_TUNE_* knobs), in three
  dtypes, against float64, bitwise the same under three thread schedules.

It checks the kernels' index logic, their use of barriers and shared
memory and the plans wherever a C++ compiler is at hand; a GPU still checks
the real thing (tests/test_cuda_backends.py), so where the NVIDIA backend
has a GPU these tests skip unless OPRT_EMULATE=1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import operator_runtime

ROOT = Path(__file__).resolve().parent.parent
EMULATION = Path(__file__).resolve().parent / "emulation"
COMMON_SOURCES = ("common/runtime.cc", "common/tensor.cc", "common/layout.cc", "common/nvidia/nvidia_runtime.cu")
FLAGS = ("-std=c++17", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-Wno-unknown-pragmas")


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


_SHARED = re.compile(r"(extern\s+)?__shared__\s+(?:alignas\(\w+\)\s+)?([\w:]+(?:<[^;]*?>)?)\s+([^;]+);")


def rewrite_shared(source: str) -> str:
    """`__shared__ T a[N], b;` -> OPRT_EMULATED_SHARED(T, a, [N]); OPRT_EMULATED_SHARED(T, b, );
    `extern __shared__ T c[];` -> OPRT_EMULATED_DYNAMIC_SHARED(T, c);"""
    def declarations(match):
        extern, type_, declarators = match.groups()
        out = []
        for declarator in declarators.split(","):
            parts = re.fullmatch(r"\s*(\w+)\s*((?:\[[^\]]*\])*)\s*", declarator)
            assert parts, f"cannot rewrite the __shared__ declaration {match.group(0)!r}"
            name, dims = parts.groups()
            if extern:
                assert dims == "[]", match.group(0)
                out.append(f"OPRT_EMULATED_DYNAMIC_SHARED({type_}, {name});")
            else:
                out.append(f"OPRT_EMULATED_SHARED({type_}, {name}, {dims});")
        return " ".join(out)
    return _SHARED.sub(declarations, source)


def test_rewrite_launches():
    src = "x;\n  k<A, B<C>, 2><<<grid, 128, 0, stream>>>(a, b);\n  f<<<g, t, 0, s>>>(c);"
    assert rewrite_launches(src) == ("x;\n  emulate_launch(k<A, B<C>, 2>, grid, 128, 0, stream, a, b);\n"
                                     "  emulate_launch(f, g, t, 0, s, c);")


def test_rewrite_shared():
    src = ("  __shared__ float slots[kMaxWarps];\n  __shared__ float cluster_max, cluster_sum;\n"
           "  extern __shared__ Raw16 cache[];\n  __shared__ Out tile[kTile][kTile + 1];  // [c][r]")
    assert rewrite_shared(src) == (
        "  OPRT_EMULATED_SHARED(float, slots, [kMaxWarps]);\n"
        "  OPRT_EMULATED_SHARED(float, cluster_max, ); OPRT_EMULATED_SHARED(float, cluster_sum, );\n"
        "  OPRT_EMULATED_DYNAMIC_SHARED(Raw16, cache);\n"
        "  OPRT_EMULATED_SHARED(Out, tile, [kTile][kTile + 1]);  // [c][r]")


@pytest.fixture(scope="module")
def emulated_ops(tmp_path_factory):
    """ops/ with its NVIDIA sources rewritten for the emulated GPU."""
    if shutil.which("g++") is None:
        pytest.skip("no g++ to build the emulation")
    if os.environ.get("OPRT_EMULATE") != "1" and operator_runtime.backend_unavailable_reason("nvidia") is None:
        # ~10 CPU-minutes of sanitized builds and fibers that the GPU's own tests supersede
        # (they timed out a GPU run's parallel workers); OPRT_EMULATE=1 runs them anyway
        pytest.skip("a GPU runs the NVIDIA kernels here (tests/test_cuda_backends.py); OPRT_EMULATE=1 emulates too")
    ops = tmp_path_factory.mktemp("emulated") / "ops"
    shutil.copytree(ROOT / "ops", ops)
    for path in ops.rglob("*"):
        if path.suffix in (".cu", ".cuh") and "nvidia" in path.parts:
            source = rewrite_shared(rewrite_launches(path.read_text()))
            if "common" not in path.parts:  # an op's sm_90 kernels: the emulated GPU is one
                source = source.replace("#if __CUDA_ARCH__ >= 900", "#if 1  // (emulated sm_90)")
            path.write_text(source)
            code = re.sub(r"//[^\n]*", "", path.read_text())
            assert "<<<" not in code and "__shared__" not in code, path
    for stand_in in (EMULATION / "nvidia").iterdir():
        shutil.copy(stand_in, ops / "common" / "nvidia" / stand_in.name)
    return ops


def build_and_run(ops: Path, harness: str, sources) -> str:
    """Builds tests/emulation/<harness> with ops/<sources> (objects in
    parallel), runs it and returns its output, which must end in "ok"."""
    out = ops.parent / Path(harness).stem
    out.mkdir()
    includes = [f"-I{EMULATION / 'include'}", f"-I{ROOT / 'include'}", f"-I{ops}", f"-I{ops / 'common'}"]
    units = [EMULATION / harness] + [ops / s for s in (*COMMON_SOURCES, *sources)]

    def compile_unit(unit: Path):
        obj = out / (unit.name + ".o")
        language = ["-x", "c++"] if unit.suffix == ".cu" else []
        result = subprocess.run(["g++", *FLAGS, *includes, "-c", *language, str(unit), "-o", str(obj)],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"{unit.name}:\n{result.stderr[-4000:]}"
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_unit, sorted(units, key=lambda u: -u.stat().st_size)))
    binary = out / "harness"
    link = subprocess.run(["g++", *FLAGS, *map(str, objects), "-o", str(binary)], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr[-4000:]
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and result.stdout.rstrip().endswith("ok"), \
        (result.stdout[-3000:] + result.stderr[-6000:])
    return result.stdout


def test_elementwise_engine_emulated(emulated_ops):
    output = build_and_run(emulated_ops, "elementwise_harness.cc", ())
    kinds = {line.split()[1] for line in output.splitlines()[:-1]}
    assert kinds == {"dense", "rows", "flat", "strided"}, kinds  # every kernel ran


def test_copy_and_vector_add_emulated(emulated_ops):
    output = build_and_run(emulated_ops, "copy_add_harness.cc",
                           ("copy/nvidia/copy_nvidia.cu", "vector_add/nvidia/vector_add_nvidia.cu"))
    variants = {line.split()[2] for line in output.splitlines()[:-1]}
    assert variants == {"memcpy", "dense", "rows", "flat", "transpose_vec", "transpose_vec_shift", "transpose_tiled",
                        "strided"}, variants


def test_reduce_sum_emulated(emulated_ops):
    output = build_and_run(emulated_ops, "reduce_sum_harness.cc",
                           ("reduce_sum/reduce_sum_plan.cc", "reduce_sum/nvidia/reduce_sum_nvidia.cu"))
    variants = {re.sub(r"cluster\d+$", "cluster", line.split()[2]) for line in output.splitlines()[:-1]}
    assert variants == {
        "empty", "zeros", "rows", "rows_split", "rows_dense", "rows_dense_split", "rows_aligned", "rows_aligned_split",
        "rows_short", "strided",
        "strided_split", "columns", "columns_split", "columns_cluster", "columns_shifted", "columns_shifted_split",
        "columns_shifted_cluster", "columns_whole", "columns_whole_split", "columns_whole_cluster"}, variants


def test_softmax_emulated(emulated_ops):
    output = build_and_run(emulated_ops, "softmax_harness.cc",
                           ("softmax/softmax_plan.cc", "softmax/nvidia/softmax_nvidia.cu"))
    variants = {re.sub(r"(cluster|shared)\d+$", r"\1", line.split()[2]) for line in output.splitlines()[:-1]}
    assert variants == {
        "empty", "rows_warp", "rows_warp_dense", "rows_block", "rows_block_dense", "rows_stream", "rows_cluster",
        "rows_shared", "rows_twice", "rows_resident", "rows_resident_copies", "rows_split", "rows_split2",
        "columns", "columns_split", "columns_cluster", "strided"}, variants  # every variant ran
