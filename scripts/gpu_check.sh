#!/usr/bin/env bash
# Checks the NVIDIA backend on a CUDA machine and leaves logs and JSON in
# OUTDIR. Needs no network: python3 with a CUDA torch, nvcc, cmake, ninja,
# scikit-build-core, pytest, hypothesis and compute-sanitizer installed:
#
#   scripts/gpu_check.sh OUTDIR [phase...]
#
# Every call first builds (scripts/setup.sh into a venv that also sees the
# machine python's packages, so nothing is downloaded; pip install
# --no-build-isolation --no-deps -e . with
# CMAKE_ARGS="-DCAMP_ENABLE_NVIDIA=ON -DCMAKE_CUDA_ARCHITECTURES=90"), as the
# tree may have changed since the last call; an unchanged tree on a machine
# that kept build/ rebuilds in seconds. Then the phases, in the order given
# (default: build test cuda sanitize bench); each fits in 10 minutes alone:
#
#   build     only the build                                      -> build.log
#   test      python -m pytest tests ops --backend nvidia -q
#               --junitxml=OUTDIR/junit.xml                       -> test.log, junit.xml
#   cuda      python -m pytest tests/test_cuda_backends.py ops/*/nvidia --backend nvidia -rA
#               (the GPU-only tests alone: the generic ones over every
#               discovered op, and each NVIDIA layer's variant tests) -> cuda.log
#   sanitize  for X in memcheck racecheck initcheck:
#               OPRT_HOST_REFERENCE=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool X
#               --error-exitcode 1 python -m pytest ops/*/nvidia
#               -k test_variant --backend nvidia -q -p no:cacheprovider
#             (every kernel variant in three dtypes; without torch's caching
#             allocator each tensor is its own cudaMalloc, so memcheck sees
#             out-of-bounds accesses between tensors; OPRT_HOST_REFERENCE=1
#             computes the references on the CPU, because torch's own CUDA
#             reduce kernel trips racecheck and initcheck)        -> sanitize.log
#   bench     python tests/run_ops.py --op all --backend nvidia --mode bench
#               --json OUTDIR/bench.json --torch-compile          -> bench.log, bench.json
#   bench:OP  the same for some ops only (bench:A bench:B in one call: one
#             run, one bench.json). torch.compile compiles every case anew,
#             so all the ops will not fit in 10 minutes: give one or two
#             ops per call (bench.json is rewritten after every
#             row, so a run cut short still leaves its rows; "complete" in
#             its meta says whether it finished). Each row is timed
#             with a clean and a dirty L2 (twice the time of one);
#             OPRT_BENCH_ARGS="--condition clean" times one,
#             OPRT_BENCH_ARGS="--cross-check" adds the do_bench comparison
#
# The build phase also calls every op that operator_runtime.ops.DESCRIPTIONS
# discovers once on a small case of its description: an op the backend has
# no kernel for is listed, not counted as a failure.
#
# The last lines printed are a summary table (also OUTDIR/summary.txt, written
# after every phase, so a call cut short still leaves it). OUTDIR holds at
# most 8 files, all at its top level.
#
# Settings (environment):
#   OPRT_BACKEND         backend to check (default nvidia; tilelang works alike)
#   OPRT_TEST_ARGS       extra pytest arguments for test and cuda (e.g. "-x -k graph")
#   OPRT_SANITIZE_TESTS  pytest arguments for sanitize (default above)
#   OPRT_SANITIZE_TOOLS  default "memcheck racecheck initcheck"
#   OPRT_BENCH_ARGS      extra run_ops.py arguments (e.g. "--quick" or "--min-time 0.1")
#   OPRT_VENV            the venv (default .venv); CMAKE_ARGS overrides the build flags
#   OPRT_NO_VENV=1       no venv: python3 -m pip install --no-build-isolation --no-deps -e .
#                        with the machine's python (`python3 -m pip`: a bare `pip` may
#                        belong to another python)
# Exit status: 0 when every phase passed, else 1 (2: bad arguments).
set -uo pipefail

usage() { sed -n '2,/^# Settings/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
out=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "gpu_check: cannot create $1" >&2; exit 2; }
shift
phases=("$@")
[[ ${#phases[@]} -gt 0 ]] || phases=(build test cuda sanitize bench)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

backend=${OPRT_BACKEND:-nvidia}
bench_ops=()
for phase in "${phases[@]}"; do
  case $phase in
    build | test | cuda | sanitize) ;;
    bench) bench_ops+=(all) ;;
    bench:*) bench_ops+=("${phase#bench:}") ;;
    *) echo "gpu_check: unknown phase '$phase' (build test cuda sanitize bench bench:OP)" >&2; exit 2 ;;
  esac
done

# -- environment -----------------------------------------------------------------
export CMAKE_ARGS=${CMAKE_ARGS:-"-DCAMP_ENABLE_NVIDIA=ON -DCMAKE_CUDA_ARCHITECTURES=90"}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1   # offline: fail at once rather than wait on the network
export PYTHONDONTWRITEBYTECODE=1
unset CAMP_BUILD_DIR
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
[[ -z ${CUDACXX:-} ]] && command -v nvcc >/dev/null && export CUDACXX=$(command -v nvcc)
[[ -d /usr/local/cuda ]] && export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
rows=()   # "phase|status|seconds|details"
failed=0
summary() {
  {
    echo "== gpu_check summary ($backend; logs in $out)"
    printf '%-10s %-6s %7s  %s\n' phase status seconds details
    local row
    for row in "${rows[@]}"; do
      IFS='|' read -r p s t d <<<"$row"
      printf '%-10s %-6s %7s  %s\n' "$p" "$s" "$t" "$d"
    done
  } >"$out/summary.txt"
}
record() {  # record phase status seconds details
  rows+=("$1|$2|$3|$4")
  [[ $2 == ok ]] || failed=1
  summary
}

# -- build (every call) ------------------------------------------------------------
py=
build() {
  local t log=$out/build.log status=0
  t=$(now)
  {
    echo "== $(date -u +%FT%TZ) on $(hostname)"
    nvidia-smi -L 2>&1 || true
    nvcc --version 2>&1 | tail -n 2 || true
    python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
                                         "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 || true
    echo "CMAKE_ARGS=$CMAKE_ARGS"
  } >"$log"
  if [[ ${OPRT_NO_VENV:-0} == 1 ]]; then  # the machine's python as is
    py=$(command -v python3)
    "$py" -m pip install --no-build-isolation --no-deps -e . >>"$log" 2>&1 || status=$?
  else
    py=$(scripts/setup.sh 2>>"$log" | tail -n 1) || status=$?
  fi
  if [[ $status == 0 && -x $py ]]; then
    "$py" - "$backend" >>"$log" 2>&1 <<'PY' || status=$?
import sys
import torch
import operator_runtime as oprt
from operator_runtime import BackendUnavailableError
from operator_runtime._internal.backends import backend_impl
from operator_runtime.ops import DESCRIPTIONS

backend = sys.argv[1]
reason = oprt.backend_unavailable_reason(backend)
print(f"backend {backend}: {'available' if reason is None else 'UNAVAILABLE: ' + reason}")
if reason is not None:
    sys.exit(1)
device = backend_impl(oprt.Backend(backend)).device_type
ran, missing, failed = [], [], []
for name, description in DESCRIPTIONS.items():
    # the first case of the description with every dim at least 2 long (else its first case)
    case = next((c for c in description.cases if all(len(s) and min(s) > 1 for s in c.shapes)),
                description.cases[0])
    inputs = [torch.randn(shape, device=device) for shape in case.shapes]
    try:
        getattr(oprt, name)(*inputs, **case.params, backend=backend)
        if device == "cuda":
            torch.cuda.synchronize()
        ran.append(name)
        print(f"  {name}: runs ({case.name})")
    except BackendUnavailableError as error:
        missing.append(name)
        print(f"  {name}: no kernel on {backend}: {error.reason}")
    except Exception as error:
        failed.append(name)
        print(f"  {name}: FAILS: {type(error).__name__}: {error}")
print(f"backend {backend}: {len(ran)} ops run"
      + (f"; FAIL: {' '.join(failed)}" if failed else "")
      + (f"; no kernel: {' '.join(missing)}" if missing else ""))
sys.exit(1 if failed else 0)
PY
  fi
  local details
  details=$(grep -E '^backend ' "$log" | tail -n 1)
  [[ $status == 0 ]] || details="${details:-setup failed} (see build.log)"
  record build "$([[ $status == 0 ]] && echo ok || echo FAIL)" "$(since "$t")" "${details:-?}"
  return "$status"
}

# -- phases --------------------------------------------------------------------------
junit_counts() {  # junit_counts FILE -> "N tests, F failed, E errors, S skipped"
  "$py" - "$1" <<'PY' 2>/dev/null || echo "no junit xml"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
get = lambda k: sum(int(s.get(k, 0)) for s in suites)
print(f"{get('tests')} tests, {get('failures')} failed, {get('errors')} errors, {get('skipped')} skipped")
PY
}

run_tests() {
  local t status=0
  t=$(now)
  # shellcheck disable=SC2086
  "$py" -m pytest tests ops --backend "$backend" -q -rfE --tb=short -p no:cacheprovider -o junit_family=xunit1 \
    --junitxml="$out/junit.xml" ${OPRT_TEST_ARGS:-} >"$out/test.log" 2>&1 || status=$?
  tail -n 15 "$out/test.log"
  record test "$([[ $status == 0 ]] && echo ok || echo FAIL)" "$(since "$t")" \
    "$(junit_counts "$out/junit.xml") (pytest exit $status)"
}

run_cuda_tests() {
  local t status=0
  t=$(now)
  # shellcheck disable=SC2086
  "$py" -m pytest tests/test_cuda_backends.py ops/*/nvidia --backend "$backend" -rA --tb=short -p no:cacheprovider \
    --durations=10 ${OPRT_TEST_ARGS:-} >"$out/cuda.log" 2>&1 || status=$?
  tail -n 25 "$out/cuda.log"
  local counts
  counts=$(grep -E '^=+ .*(passed|failed|error|skipped).* in ' "$out/cuda.log" | tail -n 1 | tr -d '=')
  record cuda "$([[ $status == 0 ]] && echo ok || echo FAIL)" "$(since "$t")" "${counts:-no result} (exit $status)"
}

run_sanitizer() {
  local t log=$out/sanitize.log results=() status_all=0 tool
  t=$(now)
  local tests=${OPRT_SANITIZE_TESTS:-"ops/*/nvidia -k test_variant"}
  if ! command -v compute-sanitizer >/dev/null; then
    for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
      [[ -x $candidate ]] && export PATH=$(dirname "$candidate"):$PATH && break
    done
  fi
  : >"$log"
  if ! command -v compute-sanitizer >/dev/null; then
    echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin)" | tee -a "$log"
    record sanitize FAIL "$(since "$t")" "compute-sanitizer not found"
    return
  fi
  for tool in ${OPRT_SANITIZE_TOOLS:-memcheck racecheck initcheck}; do
    local tt status=0
    tt=$(now)
    echo "== compute-sanitizer --tool $tool ($(date -u +%TZ))" >>"$log"
    # shellcheck disable=SC2086
    OPRT_HOST_REFERENCE=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
      compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 \
      "$py" -m pytest $tests --backend "$backend" -q -p no:cacheprovider >>"$log" 2>&1 || status=$?
    local verdict
    verdict=$(grep -E '(ERROR|RACECHECK|INITCHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
    echo "== $tool: exit $status in $(since "$tt") s: ${verdict:-no summary line}" >>"$log"
    results+=("$tool $([[ $status == 0 ]] && echo ok || echo "FAIL($status)") $(since "$tt")s")
    [[ $status == 0 ]] || status_all=1
  done
  grep -E '^== ' "$log"
  record sanitize "$([[ $status_all == 0 ]] && echo ok || echo FAIL)" "$(since "$t")" "$(IFS=';'; echo "${results[*]}")"
}

run_bench() {
  local t status=0
  t=$(now)
  local ops=("${bench_ops[@]}")
  for op in "${ops[@]}"; do [[ $op == all ]] && ops=(all) && break; done
  # shellcheck disable=SC2086
  "$py" tests/run_ops.py --op "${ops[@]}" --backend "$backend" --mode bench --json "$out/bench.json" \
    --torch-compile ${OPRT_BENCH_ARGS:-} >"$out/bench.log" 2>&1 || status=$?
  sed -n '/^\[summary\]/,$p' "$out/bench.log"
  local details
  details=$("$py" - "$out/bench.json" <<'PY' 2>/dev/null || echo "no bench.json"
import json
import sys
data = json.load(open(sys.argv[1]))
rows = data["results"]
states = {}
for r in rows:
    states[r["status"]] = states.get(r["status"], 0) + 1
parts = [f"{len(rows)} rows: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))]
for op, s in data["summary"].items():
    eager, compiled = s.get("median_speedup"), (s.get("compile_speedup") or {}).get("median")
    ceiling = (s.get("ceiling_fraction") or {}).get("median")
    host = data["meta"].get("host_overhead_us", {}).get(op, {})
    text = f"{op} vs torch {eager:.2f}x" if eager else f"{op} -"
    if compiled:
        text += f" vs compile {compiled:.2f}x"
    if ceiling:
        text += f" ceil {100 * ceiling:.0f}%"
    dirty = (s.get("dirty") or {}).get("speedup", {}).get("median")
    if dirty:
        text += f" (dirty L2: vs torch {dirty:.2f}x)"
    if host.get("call_ratio"):
        text += f" host {host['call_ratio']:.2f}x/{host['prepared_ratio']:.2f}x"
    parts.append(text)
print("; ".join(parts))
PY
)
  record bench "$([[ $status == 0 ]] && echo ok || echo FAIL)" "$(since "$t")" "$details (exit $status)"
}

# -- main ------------------------------------------------------------------------------
if build; then
  bench_done=0
  for phase in "${phases[@]}"; do
    case $phase in
      build) ;;
      test) run_tests ;;
      cuda) run_cuda_tests ;;
      sanitize) run_sanitizer ;;
      bench | bench:*) [[ $bench_done == 1 ]] || run_bench; bench_done=1 ;;
    esac
  done
else
  tail -n 30 "$out/build.log"
fi
echo
cat "$out/summary.txt"
exit "$failed"
