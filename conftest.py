"""Backend selection, shared fixtures and the hypothesis profile, for the
generic tests in tests/ and each op's own tests in ops/<op>/.

    pytest                             every backend; unavailable ones are skipped with the reason
    pytest --backend cpu               only cpu (repeatable, or comma-separated; case-insensitive)
    CAMP_BUILD_DIR=build pytest --backend cpu   a CMake build from a plain checkout
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

# From a plain checkout (nothing pip-installed) the packages live in python/.
# An installed copy wins, so the tests exercise what was installed. A bare
# namespace package (e.g. a leftover folder holding only the .so) does not count.
_ROOT = Path(__file__).resolve().parent
_PYTHON_DIR = _ROOT / "python"


def _importable(package: str) -> bool:
    spec = importlib.util.find_spec(package)
    return spec is not None and spec.origin is not None


for _package in ("operator_runtime", "operator_runtime_testing"):
    if not _importable(_package) and str(_PYTHON_DIR) not in sys.path:
        sys.path.insert(0, str(_PYTHON_DIR))
# The shared test helpers (tests/harness.py) serve the ops' own tests too.
if str(_ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(_ROOT / "tests"))

import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import operator_runtime  # noqa: E402
from operator_runtime import Backend  # noqa: E402
from operator_runtime._internal import operator as engine  # noqa: E402
from operator_runtime._internal.library import tensor_access_api  # noqa: E402
from operator_runtime_testing import make_generator, seed_from_text  # noqa: E402

# One fixed profile: modest example counts keep the suite fast on 2 cores;
# derandomize=False explores new inputs each run, and print_blob prints the
# @reproduce_failure blob (and the seed) of any failure.
settings.register_profile(
    "operator_runtime",
    deadline=None,
    max_examples=100,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)
settings.load_profile("operator_runtime")

# Backends whose kernels are compiled into liboperator_runtime (C ABI tests).
C_BACKENDS = ("cpu", "nvidia", "metax")
DEVICE_TYPES = {"cpu": "cpu", "nvidia": "cuda", "tilelang": "cuda", "metax": "cuda"}


def pytest_addoption(parser):
    parser.addoption("--backend", action="append", default=[], metavar="NAME",
                     help="run only these backends (repeatable or comma-separated, case-insensitive; "
                          f"known: {', '.join(b.value for b in Backend)}). Default: all, unavailable ones skipped.")


    parser.addoption("--op", action="append", default=[], metavar="NAME",
                     help="run only the tests of these ops (repeatable or comma-separated): the generic tests "
                          "parametrized by op, and the op's own tests in ops/<op>/")


def pytest_collection_modifyitems(config, items):
    ops = {name.strip() for option in config.getoption("--op") for name in option.split(",") if name.strip()}
    if not ops:
        return
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        named = callspec.params.get("name") if callspec is not None else None
        own = Path(str(item.fspath)).resolve().parts
        in_op_folder = "ops" in own and own[own.index("ops") + 1] in ops
        (keep if named in ops or in_op_folder else drop).append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)


_HYPOTHESIS_SEED = pytest.StashKey[object]()


def pytest_configure(config):
    selected_backends(config)  # a bad --backend is a usage error, reported before collection
    # Random hypothesis inputs on every run, but from one printed seed, so any
    # run reproduces with --hypothesis-seed=N.
    seed = config.getoption("hypothesis_seed", None)
    if seed is None:
        from hypothesis import core

        seed = random.randrange(2**32)
        core.global_force_seed = seed
    config.stash[_HYPOTHESIS_SEED] = seed


def selected_backends(config) -> list[str]:
    names = []
    for option in config.getoption("--backend"):
        for name in option.split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in {b.value for b in Backend}:
                raise pytest.UsageError(f"--backend {name!r}: unknown backend (known: "
                                        f"{', '.join(b.value for b in Backend)})")
            if name not in names:
                names.append(name)
    return names or [b.value for b in Backend]


def backend_dtypes(name: str) -> tuple:
    """The dtypes `name` supports; the standard three when it cannot run here."""
    from operator_runtime._internal.backends import backend_impl
    from operator_runtime._internal.tensors import STANDARD_DTYPES

    if operator_runtime.backend_unavailable_reason(name) is not None:
        return STANDARD_DTYPES
    return backend_impl(Backend(name)).dtypes


def _dtype_id(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _backend_params(config, names, with_dtype: bool):
    params = []
    for name in names:
        reason = operator_runtime.backend_unavailable_reason(name)
        if reason is not None:
            skip = pytest.mark.skip(reason=f"backend {name} unavailable: {reason}")
            values = (name, torch.float32) if with_dtype else (name,)
            params.append(pytest.param(*values, marks=skip, id=name))
        elif with_dtype:
            params += [pytest.param(name, d, id=f"{name}-{_dtype_id(d)}") for d in backend_dtypes(name)]
        else:
            params.append(pytest.param(name, id=name))
    return params


def pytest_generate_tests(metafunc):
    names = selected_backends(metafunc.config)
    fixtures = metafunc.fixturenames
    if "c_backend" in fixtures:
        c_names = [n for n in names if n in C_BACKENDS]
        metafunc.parametrize("c_backend", _backend_params(metafunc.config, c_names, False), indirect=True)
    elif "backend" in fixtures:
        # With a `dtype` fixture, each backend comes with the dtypes it lists
        # (float64 on cpu only); an unavailable backend is one skipped test.
        if "dtype" in fixtures:
            metafunc.parametrize(("backend", "dtype"), _backend_params(metafunc.config, names, True),
                                 indirect=True)
        else:
            metafunc.parametrize("backend", _backend_params(metafunc.config, names, False), indirect=True)


@pytest.fixture
def backend(request) -> str:
    return request.param


@pytest.fixture
def c_backend(request) -> str:
    return request.param


@pytest.fixture
def dtype(request) -> torch.dtype:
    return request.param


@pytest.fixture
def device(request) -> torch.device:
    name = request.getfixturevalue("c_backend" if "c_backend" in request.fixturenames else "backend")
    return torch.device(DEVICE_TYPES[name])


@pytest.fixture
def dtypes(request) -> tuple:
    """Every dtype the selected backend supports."""
    return backend_dtypes(request.getfixturevalue("backend"))


@pytest.fixture(params=["native", "native-python-reads", "python"])
def engine_path(request, monkeypatch) -> str:
    """Runs the test on every fast path: fast_call.c reading tensors through
    the _tensor_access extension, fast_call.c reading them through Python
    (where that extension is not loaded), and fast_call.c's Python twin
    (what OPRT_FAST_CALL=0 gives); the descriptor cache starts empty."""
    if request.param == "python":
        monkeypatch.setattr(engine, "_NATIVE_CALL", None)
        monkeypatch.setattr(engine, "_NATIVE_RUN", None)
    elif engine._NATIVE_CALL is None:
        pytest.skip("the fast_call extension is not built or OPRT_FAST_CALL=0")
    reads = tensor_access_api()
    if request.param == "native" and reads is None:
        pytest.skip("the _tensor_access extension is not built, OPRT_TENSOR_ACCESS=0, or built for another torch")
    fast_call = engine._NATIVE_CALL.__self__ if request.param == "native-python-reads" else None  # (the module)
    if fast_call is not None:
        fast_call.set_tensor_access(None)
    engine.DESCRIPTOR_CACHE.clear()
    yield request.param
    engine.DESCRIPTOR_CACHE.clear()
    if fast_call is not None:
        fast_call.set_tensor_access(reads)


@pytest.fixture
def gen(request) -> torch.Generator:
    """A fresh CPU generator per test, seeded from the test's id (so a failure
    reproduces, and different tests see different data)."""
    seed = seed_from_text(request.node.nodeid)
    request.node.user_properties.append(("torch_seed", seed))
    return make_generator(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seeds = [v for k, v in item.user_properties if k == "torch_seed"]
        if seeds:
            report.sections.append(("torch generator", f"seed {seeds[0]} (crc32 of the node id)"))


def pytest_report_header(config):
    names = selected_backends(config)
    lines = []
    for name in names:
        reason = operator_runtime.backend_unavailable_reason(name)
        lines.append(f"  {name}: " + ("available" if reason is None else f"unavailable ({reason})"))
    seed = config.stash.get(_HYPOTHESIS_SEED, None)
    return (["operator_runtime backends:"] + lines
            + [f"hypothesis seed: {seed} (reproduce with --hypothesis-seed={seed})"])
