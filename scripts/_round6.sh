#!/usr/bin/env bash
set -u
export CMAKE_ARGS="-DCAMP_ENABLE_NVIDIA=ON -DCMAKE_CUDA_ARCHITECTURES=90"
s=$(date +%s)
(python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl1/*.whl > $OUT/whl1.log 2>&1; echo "whl1 rc $?" >> $OUT/whl1.log) &
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - s )) s"
timeout 100 python3 -m pytest tests/test_cuda_backends.py --backend nvidia -n 16 -q -p no:cacheprovider > $OUT/test.log 2>&1
echo "cuda tests rc $? $(( $(date +%s) - s )) s"; tail -1 $OUT/test.log; grep -E "^FAILED" $OUT/test.log | head
OPRT_HOST_REFERENCE=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 \
  python3 -m pytest tests/test_cuda_backends.py --backend nvidia -q -p no:cacheprovider \
  -k "rows_not_whole_vectors or (test_variant and softmax and (dense or stream))" > $OUT/memcheck.log 2>&1
echo "memcheck rc $? $(( $(date +%s) - s )) s"; tail -2 $OUT/memcheck.log
timeout 60 python3 scripts/nvidia_ab.py --only softmax --configs planned split split_tasks4 --cases long > $OUT/ab_long.log 2>&1
timeout 60 python3 scripts/nvidia_ab.py --only softmax --configs planned split_tasks32 split_tasks64 --cases vocab > $OUT/ab_vocab.log 2>&1
echo "ab $(( $(date +%s) - s )) s"
timeout 60 python3 tests/run_ops.py --op softmax --backend nvidia --mode bench --min-time 0.03 --host-calls 0 \
  --json $OUT/softmax.json > $OUT/softmax.txt 2>&1
echo "bench rc $? $(( $(date +%s) - s )) s"
wait; tail -1 $OUT/whl1.log
tail -n +3 $OUT/ab_long.log | cut -c1-110; tail -n +3 $OUT/ab_vocab.log | cut -c1-110
grep -E "^softmax" $OUT/softmax.txt | cut -c1-140
