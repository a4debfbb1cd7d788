#!/usr/bin/env bash
# TileLang backend on a GPU host: build (CPU library is enough: the TileLang
# kernels are Python), run the test suite on the tilelang backend, the
# memory-baseline test and the benchmark, logging under OUTDIR.
#
#   scripts/tilelang_gpu_check.sh OUTDIR
#
# Needs tilelang==0.1.15 importable (without network access: install its
# wheels into a folder and put it on PYTHONPATH first). A TileLang cache
# folder .tlcache in the repo root (filled by
# `python -m operator_runtime._internal.tilelang_compile` on any machine)
# is used when present, so the GPU does not wait for nvcc.
# Settings: OPRT_SKIP_BUILD=1, OPRT_TEST_TIMEOUT (s, default 360),
# OPRT_PYTEST_ARGS (default "-q -x"), OPRT_MEMORY_TIMEOUT, OPRT_BENCH_TIMEOUT, OPRT_BENCH_ARGS.
set -uo pipefail
out=${1:?usage: scripts/tilelang_gpu_check.sh OUTDIR}
mkdir -p "$out"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[[ -d .tlcache ]] && export TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-$root/.tlcache}
status=0
if [[ ${OPRT_SKIP_BUILD:-0} != 1 ]]; then
  t=$(date +%s)
  CMAKE_ARGS=${CMAKE_ARGS:--DCAMP_ENABLE_NVIDIA=OFF} python3 -m pip install -q --no-build-isolation --no-deps -e . \
    >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t )) s"
fi
python3 - <<'PY' 2>&1 | tee "$out/env.log"
import torch, tilelang, operator_runtime as o
print("torch", torch.__version__, "tilelang", tilelang.__version__, torch.cuda.get_device_name())
print("available:", o.available_backends(), "| tilelang:", o.backend_unavailable_reason("tilelang") or "ok")
PY
t=$(date +%s)
# shellcheck disable=SC2086
timeout "${OPRT_TEST_TIMEOUT:-360}" python3 -m pytest tests/ --backend tilelang -p no:cacheprovider \
  ${OPRT_PYTEST_ARGS:--q -x} 2>&1 | tee "$out/tests.log" | tail -60
status=${PIPESTATUS[0]}
echo "tests: exit $status, $(( $(date +%s) - t )) s"
t=$(date +%s)
timeout "${OPRT_MEMORY_TIMEOUT:-300}" python3 -m pytest tests/test_tilelang_memory.py --backend tilelang -s -q -p no:cacheprovider 2>&1 \
  | tee "$out/memory.log" | tail -5
echo "memory: $(( $(date +%s) - t )) s"
# shellcheck disable=SC2086
timeout "${OPRT_BENCH_TIMEOUT:-300}" python3 tests/run_ops.py --op all --backend tilelang --mode bench \
  ${OPRT_BENCH_ARGS:-} 2>&1 | tee "$out/bench.log"
exit "$status"
