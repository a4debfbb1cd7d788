#!/usr/bin/env bash
# The test suite: install operator_runtime into .venv (scripts/setup.sh), then
#   python -m pytest -q [extra arguments]   (testpaths: tests/ and ops/)
# Extra arguments go to pytest, e.g.  scripts/test.sh --backend cpu -x -k softmax
# Set OPRT_SKIP_SETUP=1 to skip the install step.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$("$root/scripts/setup.sh" | tail -n 1)  # installs, or with OPRT_SKIP_SETUP=1 only names the venv's python
cd "$root"

status=0
"$py" -m pytest -q "$@" || status=$?
if [[ $status == 5 ]]; then
  echo "[test] pytest collected no tests (exit code 5): treated as a failure" >&2
fi
exit "$status"
