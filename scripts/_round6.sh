#!/usr/bin/env bash
set -u
export CMAKE_ARGS="-DCAMP_ENABLE_NVIDIA=ON -DCMAKE_CUDA_ARCHITECTURES=90"
s=$(date +%s)
(python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl1/*.whl > $OUT/whl1.log 2>&1; echo "whl1 rc $?" >> $OUT/whl1.log) &
python3 -m pip install --no-build-isolation --no-deps -e . > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - s )) s"
timeout 80 python3 -m pytest tests/test_cuda_backends.py --backend nvidia -n 16 -q -p no:cacheprovider > $OUT/test.log 2>&1
echo "cuda tests rc $? $(( $(date +%s) - s )) s"; tail -1 $OUT/test.log; grep -E "^FAILED" $OUT/test.log | head
timeout 25 python3 scripts/nvidia_ab.py --only softmax --configs planned resident_all --cases long_16 long_32 > $OUT/ab_long.log 2>&1
timeout 30 python3 scripts/nvidia_ab.py --only softmax --configs planned split_tasks32 --cases vocab > $OUT/ab_vocab.log 2>&1
echo "ab $(( $(date +%s) - s )) s"
wait; tail -1 $OUT/whl1.log
tail -n +3 $OUT/ab_long.log | cut -c1-110; tail -n +3 $OUT/ab_vocab.log | cut -c1-110
