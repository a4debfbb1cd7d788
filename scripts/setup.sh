#!/usr/bin/env bash
# Creates (or reuses) a virtual environment and installs operator_runtime into
# it, editable, together with the test tools. scripts/run.sh, scripts/test.sh
# and .ci/run all install through this one script.
#
# Settings (environment variables):
#   OPRT_VENV           the venv folder (default: .venv at the repository root)
#   OPRT_VENV_ISOLATED  1: a venv without the interpreter's site-packages (CI
#                       does this). Default 0: the venv sees them, so a GPU
#                       host keeps the torch its python already has.
#   OPRT_TORCH          what to pip-install when torch is not importable
#                       (default torch==2.13.0, the CPU build)
#   OPRT_PYTHON         interpreter that creates the venv (default python3)
#   CMAKE_ARGS          read by scikit-build-core, e.g.
#                       CMAKE_ARGS="-DCAMP_ENABLE_NVIDIA=OFF" scripts/setup.sh
#   OPRT_SKIP_SETUP     1: install nothing, only print the venv's python
#                       (scripts/run.sh, scripts/test.sh honour it through here)
# Prints the venv's python on the last line of stdout.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${OPRT_VENV:-$root/.venv}
if [[ ${OPRT_SKIP_SETUP:-0} == 1 ]]; then
  echo "$venv/bin/python"
  exit 0
fi
torch_req=${OPRT_TORCH:-torch==2.13.0}
creator=${OPRT_PYTHON:-python3}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[setup] $*" >&2; }

t=$(now)
if [[ ! -x $venv/bin/python ]]; then
  venv_args=()
  [[ ${OPRT_VENV_ISOLATED:-0} == 1 ]] || venv_args+=(--system-site-packages)
  "$creator" -m venv "${venv_args[@]}" "$venv"
  if [[ ${OPRT_VENV_ISOLATED:-0} != 1 ]]; then
    # --system-site-packages exposes the base interpreter's packages only. When
    # the creator is itself a venv (a GPU host keeping torch in e.g.
    # /opt/torch/.venv), chain its site-packages too, after the new venv's own.
    parent_sites=$("$creator" -c 'import site, sys
if sys.prefix != sys.base_prefix:
    print("\n".join(site.getsitepackages()))')
    if [[ -n $parent_sites ]]; then
      purelib=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
      while IFS= read -r dir; do
        echo "import site; site.addsitedir('$dir')"
      done <<<"$parent_sites" >"$purelib/_oprt_parent_venv.pth"
      say "the venv also sees $(tr '\n' ' ' <<<"$parent_sites")"
    fi
  fi
  say "created venv $venv (${venv_args[*]:-isolated}) in $(since "$t") s"
fi
py=$venv/bin/python
pip_install() { "$py" -m pip install --quiet --progress-bar off "$@" >&2; }

# 1. torch first, and only when missing: installing the project later with
#    --no-deps keeps pip from swapping it for another (e.g. a CUDA) build.
t=$(now)
if "$py" -c 'import torch' 2>/dev/null; then
  say "torch $("$py" -c 'import torch; print(torch.__version__)') already importable, kept"
else
  say "installing $torch_req"
  pip_install "$torch_req"
  say "torch installed in $(since "$t") s"
fi

# 2. build and test tools (what the [test] and [plot] extras list, plus the build backend).
t=$(now)
tools=("scikit-build-core>=0.10" "pytest>=7" "hypothesis>=6" numpy matplotlib)
if ! cmake_version=$(cmake --version 2>/dev/null | awk 'NR == 1 { print $3 }') ||
   ! printf '3.24\n%s\n' "$cmake_version" | sort -V -C; then
  tools+=("cmake>=3.24")  # none on PATH, or older than CMakeLists.txt needs
fi
command -v ninja >/dev/null || tools+=(ninja)
pip_install "${tools[@]}"
say "build/test tools ready in $(since "$t") s"

# 3. the project: editable, so Python edits need no reinstall; C++/CUDA edits
#    need this script again (an unchanged tree rebuilds in a second or two).
t=$(now)
pip_install --no-build-isolation --no-deps -e "$root"
say "operator_runtime built and installed in $(since "$t") s${CMAKE_ARGS:+ (CMAKE_ARGS=$CMAKE_ARGS)}"
(cd "$root" && env -u CAMP_BUILD_DIR "$py" -c '
import operator_runtime as ort
from operator_runtime._internal.library import library_path
names = ", ".join(ort.available_backends())
print(f"[setup] library {library_path()}; backends usable here: {names}")' >&2)
echo "$py"
