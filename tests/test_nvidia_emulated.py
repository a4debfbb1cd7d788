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
of the PTX ones, and builds each harness in tests/emulation/ (every
*_harness.cc) with the real sources under AddressSanitizer and
UndefinedBehaviorSanitizer. A harness runs an NVIDIA layer or an op's plans,
launches and kernels (through its C entry points) on every layout and
variant it covers, against a reference computed in the harness, and
declares in its header comment what it is built with and what must have
run:

    // emulate sources: <paths under ops/ besides the common runtime>
    // emulate column: <which whitespace-separated column of an output line names the variant>
    // emulate numbered: <words whose trailing count is dropped, e.g. cluster16 -> cluster>
    // emulate variants: <every variant that must have run> (repeatable)

test_harness_emulated builds and runs each harness that declares its
variants; the set of variants it printed must be the declared one.

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
COMMON_SOURCES = ("common/runtime.cc", "common/handle_table.cc", "common/tensor.cc", "common/layout.cc",
                  "common/nvidia/nvidia_runtime.cu")
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
            if "common" not in path.parts or "softmax_family" in path.parts:  # sm_90 kernels: the emulated GPU is one
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


HARNESSES = sorted(EMULATION.glob("*_harness.cc"))
_DECLARATION = re.compile(r"^//\s*emulate (sources|column|numbered|variants):(.*)$", re.M)


def harness_declaration(path: Path) -> dict | None:
    """What a harness declares in its `// emulate <key>: ...` lines (None:
    no variants declared): sources, column, numbered, variants."""
    found = {"sources": [], "column": [], "numbered": [], "variants": []}
    for key, value in _DECLARATION.findall(path.read_text()):
        found[key] += value.split()
    if not found["variants"]:
        return None
    return {"sources": tuple(found["sources"]), "column": int(found["column"][-1]) if found["column"] else 2,
            "numbered": tuple(found["numbered"]), "variants": set(found["variants"])}


def test_harness_declarations():
    """Each declared source exists; each numbered word is in a variant."""
    for path in HARNESSES:
        declared = harness_declaration(path)
        if declared is None:
            continue
        for source in declared["sources"]:
            assert (ROOT / "ops" / source).is_file(), f"{path.name}: no ops/{source}"
        for word in declared["numbered"]:
            assert any(word in v for v in declared["variants"]), f"{path.name}: no variant is numbered {word}"


def _harness_params():
    params = []
    for path in HARNESSES:
        name = path.stem.removesuffix("_harness")
        if harness_declaration(path) is None:
            params.append(pytest.param(path, id=name, marks=pytest.mark.skip(
                reason=f"{path.name} declares no `// emulate variants:` line: nothing to check its run against")))
        else:
            params.append(pytest.param(path, id=name))
    return params


@pytest.mark.parametrize("harness", _harness_params())
def test_harness_emulated(emulated_ops, harness):
    declared = harness_declaration(harness)
    output = build_and_run(emulated_ops, harness.name, declared["sources"])
    numbered = "|".join(map(re.escape, declared["numbered"]))
    variants = set()
    for line in output.splitlines()[:-1]:
        variant = line.split()[declared["column"]]
        variants.add(re.sub(rf"({numbered})\d+$", r"\1", variant) if numbered else variant)
    expected = declared["variants"]
    assert variants == expected, (f"{harness.name}: never ran {sorted(expected - variants)}; "
                                  f"ran undeclared {sorted(variants - expected)}")  # every variant ran
