#!/usr/bin/env bash
# The main job: install operator_runtime into .venv (scripts/setup.sh), then
# check and benchmark every operator on the best backend this machine can run:
#   python tests/run_ops.py --op all --mode all --backend best
# best is the first of nvidia, tilelang, cpu on which every operator really
# runs (run_ops.py tries a tiny call of each; cpu on a machine without a GPU).
# Extra arguments go to run_ops.py and win over these defaults, e.g.
#   scripts/run.sh --backend cpu --op softmax
# Set OPRT_SKIP_SETUP=1 to skip the install step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$("$root/scripts/setup.sh" | tail -n 1)  # installs, or with OPRT_SKIP_SETUP=1 only names the venv's python
cd "$root"
exec "$py" tests/run_ops.py --op all --mode all --backend best "$@"
