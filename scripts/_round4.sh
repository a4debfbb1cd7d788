#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
CMAKE_ARGS=-DCAMP_ENABLE_NVIDIA=OFF python3 -m pip install -q --no-build-isolation --no-deps -e . > $OUT/pip.log 2>&1
fc=$(python3 -c "import operator_runtime._internal._fast_call as m; print(m.__file__)")
cp "$fc" .devlib/
export CAMP_BUILD_DIR=$PWD/.devlib
timeout 200 python3 -m pytest tests/ --backend nvidia -n 16 -q -p no:cacheprovider > $OUT/suite.log 2>&1; echo "suite rc $?"; grep -E "^FAILED|AssertionError: " $OUT/suite.log | head; tail -1 $OUT/suite.log
for t in memcheck racecheck initcheck; do
  OPRT_HOST_REFERENCE=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $t --error-exitcode 1 python3 -m pytest tests/test_cuda_backends.py --backend nvidia -q -p no:cacheprovider -k "test_variant and sum-columns" > $OUT/san_$t.log 2>&1; echo "$t rc $?"; tail -2 $OUT/san_$t.log
done
python3 scripts/nvidia_ab.py --only reduce_sum --configs planned no_column_cluster column_cluster_all_tx16 --cases dim0_ > $OUT/ab.txt 2>&1
python3 tests/run_ops.py --op reduce_sum --backend nvidia --mode bench --case dim0 --min-time 0.03 --host-calls 0 --torch-compile --json $OUT/bench-dim0.json > $OUT/bench-dim0.txt 2>&1
grep -v "^#" $OUT/ab.txt | tail -30 | cut -c1-100
grep -E "dim0|ceiling" $OUT/bench-dim0.txt | cut -c1-160
