#!/usr/bin/env bash
# Nsight Compute on one benchmark case: is a kernel memory-, issue- or
# latency-bound? Prints one block per kernel launch of our backend with the
# sections that answer it, from a short run_ops.py bench of that case.
#
#   scripts/ncu_case.sh OP CASE DTYPE [BACKEND] [KERNEL_REGEX]
#   scripts/ncu_case.sh softmax medium_8192x8192 float16
#   scripts/ncu_case.sh reduce_sum dim0_8192x8192 bfloat16 tilelang 'sum_columns'
#
# BACKEND defaults to nvidia; KERNEL_REGEX to our kernels (the nvidia ones
# live in namespace oprt; pass a regex for TileLang's, e.g. 'softmax_|sum_').
# Needs ncu on PATH (the H200 image has it) and the library built. Clocks are
# left alone (--clock-control none). Its H200 output for the split softmax:
# docs/data/nvidia-h200-2026-12-02e-ncu-softmax-split-bf16.txt.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
op=$1 case=$2 dtype=$3 backend=${4:-nvidia} kernels=${5:-}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
filter=(--kernel-name-base demangled)
if [[ -n $kernels ]]; then
  filter+=(--kernel-name "regex:$kernels")
elif [[ $backend == nvidia ]]; then
  filter+=(--kernel-name "regex:oprt::")
fi
# ncu's built-in sections (stable names across versions): time and % of peak
# (SpeedOfLight), grid and registers (LaunchStats), occupancy, issue rate
# (SchedulerStats), stall reasons (WarpStateStats), bytes per level and
# sectors per request (MemoryWorkloadAnalysis; split stores show there).
sections=()
for name in SpeedOfLight LaunchStats Occupancy SchedulerStats WarpStateStats MemoryWorkloadAnalysis; do
  sections+=(--section "$name")
done
exec ncu --clock-control none --launch-skip 2 --launch-count 3 "${filter[@]}" "${sections[@]}" \
  python3 tests/run_ops.py --op "$op" --backend "$backend" --mode bench --case "$case" --dtype "$dtype" \
  --min-time 0.001 --host-calls 0
