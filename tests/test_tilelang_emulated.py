"""TileLang kernels run on the CPU, on the emulated GPU of
tests/emulation/include/emulated_gpu.h (the one the NVIDIA backend's
kernels run on in tests/test_nvidia_emulated.py).

TileLang lowers a kernel to CUDA C++ without a GPU; this test takes that
source, puts tests/emulation/tilelang/tilelang_shim.h in place of
TileLang's headers, rewrites the dynamic shared array into the emulator's
per-block storage and the kernel's local arrays 16-byte aligned (a 16-byte
access to them must be aligned there too), and builds it with a small main
under AddressSanitizer and UndefinedBehaviorSanitizer: a 16-byte access to
a misaligned address, an access past a tensor, a barrier some thread never
reaches or a signed index overflow fails the run. The kernels' outputs are
checked against float64 references. It covers the softmax family's
two-input kernels (tilelang_row_sum.py) over rows of every length (the
vectors counted from the tensor's start, a row's ends element by element),
rows held in registers, few long rows cut into segments, and the column
tiles; and the softmax family's block rows and split rows (whole vectors
and flat); a GPU still checks
the real thing (tests/test_ops.py on the tilelang backend).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

tilelang = pytest.importorskip("tilelang")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")

from operator_runtime._internal import tilelang_row_sum as row_sum  # noqa: E402
from operator_runtime._internal import tilelang_softmax as softmax  # noqa: E402
from operator_runtime._internal.tilelang_device import pass_configs, vector_width  # noqa: E402
from operator_runtime._internal.tilelang_kernels import load_kernels  # noqa: E402
from operator_runtime.ops import DESCRIPTIONS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EMULATION = ROOT / "tests" / "emulation"
FLAGS = ("-std=c++17", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-fno-strict-aliasing", "-Wno-unknown-pragmas")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
OPS = ("softmax_backward", "log_softmax_backward")


def family(op: str):
    """The op's family instance (the first argument of its kernels)."""
    return next(args[0] for _, factory, args in load_kernels(op).variants()
                if factory in (row_sum.row_sum_warp_rows, softmax.block_rows))


# -- the kernel's source, made a program of the emulated GPU ------------------------------------

def cuda_source(factory, args) -> str:
    """factory(*args) lowered to CUDA C++ for sm_90, as the runtime compiles it (no nvcc, no GPU)."""
    from tvm.target import Target
    target = Target({"kind": "cuda", "arch": "sm_90"})
    with tilelang.transform.PassContext(config=pass_configs(factory)), target:
        return tilelang.lower(factory(*args), target=target).kernel_source


_SIGNATURE = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\)\s*\{')


def kernel_signature(source: str):
    """(kernel name, [(type, name)]) of the source's one kernel definition."""
    name, params = _SIGNATURE.search(source).groups()
    out = []
    for param in params.split(","):
        words = param.replace("*", " * ").split()
        out.append(("ptr" if "*" in words else "int", words[-1]))
    return name, out


def emulated_program(source: str) -> str:
    """The source with the shim for TileLang's headers, the emulator's
    shared memory, 16-byte aligned local arrays, and a main that launches
    the kernel: argv grid.x grid.y block.x shared-bytes, then per parameter
    a file (a tensor's bytes, read in and written back) or an integer."""
    body = source[source.index('extern "C"'):]
    body = re.sub(r"extern __shared__ __align__\(\d+\) (\w+) (\w+)\[\];", r"OPRT_EMULATED_DYNAMIC_SHARED(\1, \2);", body)
    assert "__shared__" not in body, "a shared declaration the rewrite does not know"
    body = re.sub(r"^(\s+)(\w+ \w+\[\d+\];)", r"\1alignas(16) \2", body, flags=re.M)
    name, params = kernel_signature(source)
    lines = ["int main(int argc, char** argv) {",
             f"  if (argc != {5 + len(params)}) return 3;",
             "  const dim3 grid(std::atoi(argv[1]), std::atoi(argv[2])), block(std::atoi(argv[3]));"]
    args = []
    for i, (kind, pname) in enumerate(params):
        if kind == "ptr":
            lines.append(f"  std::vector<char> b{i} = read_file(argv[{5 + i}]);")
            lines.append(f"  if (reinterpret_cast<uintptr_t>(b{i}.data()) % 16) return 4;")
            args.append(f"static_cast<void*>(b{i}.data())")
        else:
            args.append(f"std::atoi(argv[{5 + i}])")
    lines.append(f"  emulate_launch({name}, grid, block, std::atoi(argv[4]), nullptr, {', '.join(args)});")
    lines.append("  if (cudaGetLastError() != cudaSuccess) return 2;")
    for i, (kind, _) in enumerate(params):
        if kind == "ptr":
            lines.append(f"  write_file(argv[{5 + i}], b{i});")
    lines += ['  std::printf("ok\\n");', "  return 0;", "}"]
    return "\n".join(['#include "tilelang_shim.h"', "#include <cstdio>", "#include <cstdlib>", "#include <fstream>",
                      "#include <vector>", "",
                      "// a tensor's bytes in memory of exactly its size (an access past it is an error;",
                      "// 16-byte aligned, as operator new aligns)",
                      "static std::vector<char> read_file(const char* path) {",
                      "  std::ifstream f(path, std::ios::binary | std::ios::ate);",
                      "  std::vector<char> bytes(static_cast<size_t>(f.tellg()));",
                      "  f.seekg(0).read(bytes.data(), static_cast<long>(bytes.size()));",
                      "  return bytes;",
                      "}",
                      "static void write_file(const char* path, const std::vector<char>& bytes) {",
                      "  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));",
                      "}", "", body, "", *lines, ""])


class Kernel:
    """One TileLang kernel built for the emulated GPU; call(grid, threads,
    shared_bytes, tensors by parameter name, sizes by name) runs it (the
    tensors' bytes in and out through files)."""

    def __init__(self, factory, args, folder: Path):
        self.label = f"{factory.__name__}{args[1:]}"
        source = cuda_source(factory, args)
        self.name, self.params = kernel_signature(source)
        self.folder = folder
        self.folder.mkdir()
        program = self.folder / "kernel.cc"
        program.write_text(emulated_program(source))
        self.binary = self.folder / "kernel"
        includes = [f"-I{EMULATION / 'include'}", f"-I{EMULATION / 'tilelang'}"]
        built = subprocess.run(["g++", *FLAGS, *includes, str(program), "-o", str(self.binary)],
                               capture_output=True, text=True)
        assert built.returncode == 0, f"{self.label}:\n{built.stderr[-4000:]}"

    def __call__(self, grid, threads: int, shared: int, tensors: dict, sizes: dict):
        argv = [str(self.binary), str(grid[0]), str(grid[1]), str(threads), str(shared)]
        files = {}
        for kind, pname in self.params:
            key = pname.rstrip("1") if kind == "ptr" else pname  # a1, b1, out1: one-dim views of a, b, out
            if kind == "ptr":
                files[key] = self.folder / f"{key}.bin"
                files[key].write_bytes(tensors[key].contiguous().view(torch.uint8).numpy().tobytes())
                argv.append(str(files[key]))
            else:
                argv.append(str(sizes[key]))
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        assert ran.returncode == 0 and ran.stdout.strip() == "ok", f"{self.label}:\n{ran.stdout[-2000:]}{ran.stderr[-6000:]}"
        for key, path in files.items():
            t = tensors[key]
            t.view(-1).view(torch.uint8).copy_(torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Every kernel the cases below run, built in parallel once."""
    folder = tmp_path_factory.mktemp("tilelang_emulated")
    wanted = {}
    for op in OPS:
        fam = family(op)
        for dt in DTYPES:
            vec = vector_width(dt)
            for v in sorted({vec, 1}):
                wanted[(op, "block", dt, v)] = (row_sum.row_sum_block_rows, (fam, dt, 256, v))
                wanted[(op, "columns_sums", dt, v)] = (row_sum.row_sum_column_sums, (fam, dt, v))
                wanted[(op, "columns_apply", dt, v)] = (row_sum.row_sum_column_apply, (fam, dt, v))
            wanted[(op, "held", dt, vec)] = (row_sum.row_sum_held_rows, (fam, dt, 256, vec))
            wanted[(op, "partials", dt, vec)] = (row_sum.row_sum_partials, (fam, dt, vec))
            wanted[(op, "apply", dt, vec)] = (row_sum.row_sum_apply, (fam, dt, vec))
            wanted[(op, "warp", dt, 1)] = (row_sum.row_sum_warp_rows, (fam, dt))
    wanted = {k: v for k, v in wanted.items() if k[0] == "softmax_backward" or k[2] == "float32"}
    fam = family("softmax")
    for dt in ("float32", "bfloat16"):
        vec = vector_width(dt)
        for n in SOFTMAX_BLOCK_ROWS:
            threads, per_thread = block_row_class(dt, n)
            wanted[("softmax", "block", dt, n)] = (softmax.block_rows, (fam, dt, threads, per_thread, vec, n % vec > 0))
        wanted[("softmax", "split_stats", dt, vec)] = (softmax.split_stats, (dt, vec, 2, True))
        wanted[("softmax", "split_apply", dt, vec)] = (softmax.split_apply, (fam, dt, vec, 2, True))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = pool.map(lambda key: Kernel(*wanted[key], folder / "_".join(map(str, key))), wanted)
        return dict(zip(wanted, built))


SOFTMAX_BLOCK_ROWS = (2048, 3001)  # whole vectors; rows each starting elsewhere in one (flat)


def block_row_class(dt: str, n: int):
    """(threads, values a thread) of the softmax block rows the planner takes for rows of n."""
    return next((t, k) for t, k in softmax.BLOCK_ROW_CLASSES[dt] if t * k >= n)


def inputs(shape, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    b = (torch.rand(shape, generator=gen, dtype=torch.float64) * 0.9 + 0.05).to(dtype)
    return a, b


def check(op, out, a, b, dim, label):
    want = DESCRIPTIONS[op].reference(a.double(), b.double(), dim)
    scale = (a.double().abs() * b.double().abs()).sum(dim, keepdim=True) + a.double().abs()
    if op == "log_softmax_backward":
        scale = a.double().abs().sum(dim, keepdim=True) * b.double().exp() + a.double().abs()
    rounding = {torch.float32: 2 ** -24, torch.float16: 2 ** -11, torch.bfloat16: 2 ** -8}[out.dtype]
    error = ((out.double() - want).abs() - rounding * want.abs()) / scale
    assert torch.isfinite(out.double()).all(), f"{label}: non-finite outputs (an element never written?)"
    assert error.max().item() <= 1e-5, f"{label}: error {error.max().item():.3g} of the terms' size"


ROWS = [(5, 2048), (7, 3001), (3, 4095), (4, 1027)]  # whole vectors, and rows each starting elsewhere in one


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("shape", ROWS, ids=str)
def test_block_rows(kernels, op, dt, shape):
    """row_sum_block_rows: a block per row, 16-byte loads of whole vectors
    counted from the tensor's start (its scalar twin alongside)."""
    for vec in sorted({vector_width(dt), 1}):
        kernel = kernels.get((op, "block", dt, vec))
        if kernel is None:
            continue
        a, b = inputs(shape, DTYPES[dt], seed=shape[1] + vec)
        out = torch.full(shape, float("nan"), dtype=DTYPES[dt])
        kernel((shape[0], 1), 256, 4 * 32, {"a": a, "b": b, "out": out}, {"M": shape[0], "N": shape[1]})
        check(op, out, a, b, 1, f"{op} block rows {shape} {dt} vec {vec}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("shape", [(5, 1024), (7, 3001), (3, 4095), (4, 1027), (2, 2 * 256 * 4 * 8)], ids=str)
def test_held_rows(kernels, op, dt, shape):
    """row_sum_held_rows (256 threads): a row's up to 4 vectors a thread of
    each input held from the sum to the write, its ends element by element."""
    kernel = kernels.get((op, "held", dt, vector_width(dt)))
    if kernel is None:
        pytest.skip("float32 alone for this op")
    if -(-shape[1] // vector_width(dt)) > 256 * row_sum.HELD:
        pytest.skip("longer than 256 threads hold")
    a, b = inputs(shape, DTYPES[dt], seed=shape[1])
    out = torch.full(shape, float("nan"), dtype=DTYPES[dt])
    kernel((shape[0], 1), 256, 4 * 32, {"a": a, "b": b, "out": out}, {"M": shape[0], "N": shape[1]})
    check(op, out, a, b, 1, f"{op} held rows {shape} {dt}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("shape,S", [((2, 20000), 3), ((3, 20001), 4), ((1, 9001), 2)], ids=str)
def test_split_rows(kernels, op, dt, shape, S):
    """row_sum_partials + row_sum_apply: rows cut into S segments of whole
    rounds of vectors, segment 0 taking the row's ends."""
    kp, ka = kernels.get((op, "partials", dt, vector_width(dt))), kernels.get((op, "apply", dt, vector_width(dt)))
    if kp is None:
        pytest.skip("float32 alone for this op")
    M, N = shape
    a, b = inputs(shape, DTYPES[dt], seed=N + S)
    sums = torch.full((M, S), float("nan"), dtype=torch.float32)
    out = torch.full(shape, float("nan"), dtype=DTYPES[dt])
    sizes = {"M": M, "N": N, "S": S}
    kp((M, S), row_sum.SEGMENT_THREADS, 4 * 32, {"a": a, "b": b, "sums": sums}, sizes)
    ka((M, S), row_sum.SEGMENT_THREADS, 4 * 32, {"a": a, "b": b, "sums": sums, "out": out}, sizes)
    want = (a.double() if op == "log_softmax_backward" else a.double() * b.double()).sum(1)
    assert torch.allclose(sums.double().sum(1), want, rtol=1e-5, atol=1e-4), (sums, want)
    check(op, out, a, b, 1, f"{op} split {shape} S={S} {dt}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("shape,S", [((2, 70, 64), 3), ((1, 100, 40), 1), ((3, 33, 45), 2), ((1, 9, 300), 4)],
                         ids=str)
def test_column_tiles(kernels, op, dt, shape, S):
    """row_sum_column_sums + row_sum_column_apply over [B, R, C] down R: 16-byte
    vectors of columns where C is whole vectors (else the scalar twin), S
    segments of the rows, a column's sums added in one order."""
    B, R, C = shape
    vec = vector_width(dt) if C % vector_width(dt) == 0 else 1
    ks, ka = kernels.get((op, "columns_sums", dt, vec)), kernels.get((op, "columns_apply", dt, vec))
    if ks is None:
        pytest.skip("float32 alone for this op")
    a, b = inputs(shape, DTYPES[dt], seed=R + C + S)
    sums = torch.full((B, S, C), float("nan"), dtype=torch.float32)
    out = torch.full(shape, float("nan"), dtype=DTYPES[dt])
    grid = (B * math.ceil(C / (32 * vec)), S)
    shared = 4 * (row_sum.COLUMN_THREADS // 32) * 32 * vec
    sizes = {"B": B, "R": R, "C": C, "S": S}
    ks(grid, row_sum.COLUMN_THREADS, shared, {"a": a, "b": b, "sums": sums}, sizes)
    ka(grid, row_sum.COLUMN_THREADS, shared, {"a": a, "b": b, "sums": sums, "out": out}, sizes)
    check(op, out, a, b, 1, f"{op} columns {shape} S={S} {dt} vec {vec}")


@pytest.mark.parametrize("op", OPS)
def test_warp_rows(kernels, op):
    shape = (19, 300)
    a, b = inputs(shape, torch.float32, seed=3)
    out = torch.full(shape, float("nan"))
    kernels[(op, "warp", "float32", 1)]((math.ceil(shape[0] / 8), 1), 256, 4 * 32, {"a": a, "b": b, "out": out},
                                        {"M": shape[0], "N": shape[1]})
    check(op, out, a, b, 1, f"{op} warp rows")


def check_softmax(out, x, label):
    want = torch.softmax(x.double(), 1)
    rounding = {torch.float32: 2 ** -24, torch.bfloat16: 2 ** -8}[out.dtype]
    error = ((out.double() - want).abs() / (want.abs() * 8 * rounding + 1e-7)).max().item()
    assert torch.isfinite(out.double()).all(), f"{label}: non-finite outputs (an element never written?)"
    assert error <= 1.0, f"{label}: error {error:.3g} of the tolerance"


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("n", SOFTMAX_BLOCK_ROWS)
def test_softmax_block_rows(kernels, dt, n):
    """softmax's block rows held in registers; rows no multiple of a vector
    long in the flat form."""
    threads, _ = block_row_class(dt, n)
    x = inputs((6, n), DTYPES[dt], seed=n)[0] * 3
    out = torch.full(x.shape, float("nan"), dtype=DTYPES[dt])
    kernels[("softmax", "block", dt, n)]((6, 1), threads, 4 * 32, {"src": x, "out": out}, {"M": 6, "N": n})
    check_softmax(out, x, f"softmax block rows {n} {dt}")


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape,S", [((3, 20001), 4), ((2, 40000), 3)], ids=str)
def test_softmax_split_rows(kernels, dt, shape, S):
    """split_stats + split_apply (flat): S segments of a row's vectors
    counted from the tensor's start, segment 0 taking the row's ends."""
    M, N = shape
    vec = vector_width(dt)
    x = inputs(shape, DTYPES[dt], seed=N)[0] * 3
    stats = torch.full((2, M, S), float("nan"), dtype=torch.float32)
    out = torch.full(shape, float("nan"), dtype=DTYPES[dt])
    sizes = {"M": M, "N": N, "S": S}
    kernels[("softmax", "split_stats", dt, vec)]((M, S), softmax.SPLIT_THREADS, 4 * 32, {"src": x, "stats": stats},
                                                 sizes)
    kernels[("softmax", "split_apply", dt, vec)]((M, S), softmax.SPLIT_THREADS, 4 * 32,
                                                 {"src": x, "stats": stats, "out": out}, sizes)
    check_softmax(out, x, f"softmax split {shape} S={S} {dt}")
