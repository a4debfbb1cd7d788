#!/usr/bin/env bash
# The main job: install operator_runtime into .venv (scripts/setup.sh), then
# check and benchmark every operator on the best backend this machine can run:
#   python tests/run_ops.py --op all --mode all --backend <best>
# <best> is the first of nvidia, tilelang, cpu on which all four operators
# work (cpu on a machine without a GPU). Extra arguments go to run_ops.py and
# win over these defaults, e.g.  scripts/run.sh --backend cpu --op softmax
# Set OPRT_SKIP_SETUP=1 to skip the install step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ${OPRT_SKIP_SETUP:-0} == 1 ]]; then
  py=${OPRT_VENV:-$root/.venv}/bin/python
else
  py=$("$root/scripts/setup.sh" | tail -n 1)
fi
cd "$root"

backend_given=0
for arg in "$@"; do
  [[ $arg == --backend || $arg == --backend=* ]] && backend_given=1
done
defaults=(--op all --mode all)
if [[ $backend_given == 0 ]]; then
  # A backend counts only if every operator really runs on it: the NVIDIA
  # backend can be present and probe fine while a build still lacks kernels.
  best=$("$py" - <<'PY'
import sys
import torch
import operator_runtime as ort

def failure(backend):
    reason = ort.backend_unavailable_reason(backend)
    if reason is not None:
        return reason
    device = "cpu" if backend == "cpu" else "cuda"
    try:
        x = torch.ones(4, 8, device=device)
        ort.copy(x, backend=backend)
        ort.vector_add(x, x, backend=backend)
        ort.reduce_sum(x, backend=backend)
        ort.softmax(x, backend=backend)
    except Exception as error:  # unavailable backend, missing kernel, no device
        return str(error)
    return None

for backend in ("nvidia", "tilelang", "cpu"):
    why = failure(backend)
    if why is None:
        print(backend)
        break
    print(f"[run] skipping {backend}: {why}", file=sys.stderr)
else:
    sys.exit("[run] no backend can run the operators here")
PY
)
  echo "[run] backend: $best" >&2
  defaults+=(--backend "$best")
fi
exec "$py" tests/run_ops.py "${defaults[@]}" "$@"
