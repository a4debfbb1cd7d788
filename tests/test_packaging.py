"""What a release carries: the sdist holds exactly the tracked sources
(whatever build outputs and benchmark dumps lie in the tree), the license
and version are stated once, the runtime dependencies are the ones the
package imports, and the public functions are annotated and documented."""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import operator_runtime
import operator_runtime_testing

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "python/operator_runtime", ROOT / "python/operator_runtime_testing")

# What a developer's tree holds beside the sources: build folders (with
# ops/ and include/ inside), installed libraries, caches, benchmark dumps.
CLUTTER = (
    "build/cp311-cp311-linux_x86_64/CMakeFiles/operator_runtime.dir/ops/copy/cpu/copy_cpu.cc.o",
    "build/cp311-cp311-linux_x86_64/include/operator_runtime/operator_runtime.h",
    "build/ops/common/runtime.cc.o",
    "dist/operator_runtime-0.0.0.tar.gz",
    ".venv/bin/python",
    "bench-results/all.json",
    "bench.json",
    "results.csv",
    "roofline.png",
    "docs/bench-cpu.json",
    "ops/softmax/bench.csv",
    "python/operator_runtime/liboperator_runtime.so",
    "python/operator_runtime/__pycache__/backend.cpython-311.pyc",
    "python/operator_runtime/_internal/_fast_call.cpython-311-x86_64-linux-gnu.so",
)
BUILD_PRODUCTS = (".o", ".so", ".pyc", ".json", ".csv", ".png", ".tar.gz")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the sdist is compared with `git ls-files`)")
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [p for p in listed.splitlines() if (ROOT / p).is_file()]


def _sdist(tree: Path, out: Path) -> tuple[list[str], str]:
    """(member files without the top folder, PKG-INFO) of the sdist built from `tree`."""
    out.mkdir()
    # scikit-build-core's PEP 517 hook, as `python -m build --sdist` calls it.
    code = "import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))"
    name = subprocess.run([sys.executable, "-c", code, str(out)], cwd=tree, check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(out / name) as archive:
        members = sorted(m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile())
        info = archive.extractfile(f"{name.removesuffix('.tar.gz')}/PKG-INFO").read().decode()
    return members, info


def test_sdist_holds_exactly_the_tracked_sources(tmp_path):
    tracked = _tracked()
    clean, cluttered = tmp_path / "clean", tmp_path / "cluttered"
    for tree in (clean, cluttered):
        for path in tracked:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, tree / path)
    for path in CLUTTER:
        (cluttered / path).parent.mkdir(parents=True, exist_ok=True)
        (cluttered / path).write_text("not a source\n")

    from_clean, info = _sdist(clean, tmp_path / "sdist-clean")
    from_cluttered, _ = _sdist(cluttered, tmp_path / "sdist-cluttered")
    assert from_clean == from_cluttered
    assert from_clean == sorted([*tracked, "PKG-INFO"])
    assert not [m for m in from_clean if m.endswith(BUILD_PRODUCTS)]
    assert f"\nVersion: {operator_runtime.__version__}\n" in info


def test_license_and_version_are_stated_once():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    license_text = (ROOT / "LICENSE").read_text()
    assert project["license"] == {"text": "MIT"} and license_text.startswith("MIT License")
    assert "operator_runtime contributors" in license_text
    assert "version" not in project and "version" in project["dynamic"]
    try:
        installed = importlib.metadata.version("operator_runtime")
    except importlib.metadata.PackageNotFoundError:
        installed = operator_runtime.__version__  # run from a build folder, not installed
    assert installed == operator_runtime.__version__


def _imported_modules(package: Path) -> set[str]:
    names = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_runtime_dependencies_are_the_imported_ones():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    def names(requirements):
        return {r.split(">")[0].split("=")[0].split("[")[0].strip() for r in requirements}

    runtime = names(project["dependencies"])
    extras = {extra: names(reqs) for extra, reqs in project["optional-dependencies"].items()}
    imported = set().union(*(_imported_modules(p) for p in PACKAGES))
    third_party = imported - set(sys.stdlib_module_names) - {"operator_runtime", "operator_runtime_testing"}
    # An extra's package is imported only where that feature runs (tilelang:
    # the TileLang backend, matplotlib: bench --plot, triton: bench --cross-check);
    # pytest only by require_cuda.
    optional = extras["tilelang"] | extras["plot"] | extras["cross-check"] | {"pytest"}
    assert third_party - optional == runtime == {"torch"}
    assert "numpy" in extras["test"] and "numpy" not in imported


def test_packages_ship_py_typed():
    for package in (operator_runtime, operator_runtime_testing):
        assert (Path(package.__file__).parent / "py.typed").is_file(), package.__name__


def _public_functions():
    for name in operator_runtime.__all__:
        value = getattr(operator_runtime, name)
        if inspect.isfunction(value):
            yield name, value


@pytest.mark.parametrize("name, function", list(_public_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_public_functions_are_annotated_and_documented(name, function):
    signature = inspect.signature(function, eval_str=True)  # string annotations must name real types
    unannotated = [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not unannotated, f"{name}: parameters without annotations: {unannotated}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"
    doc = inspect.getdoc(function) or ""
    assert doc, f"{name} has no docstring"
    if getattr(function, "operator", None) is not None:
        # The generated op forms: real types in help() (not the private names
        # they are written with), and every argument described.
        assert str(inspect.signature(function)) == str(signature)
        assert "_Tensor" not in str(signature)
        missing = [p for p in signature.parameters if f"{p}:" not in doc]
        assert not missing, f"{name}: docstring does not describe {missing}"
