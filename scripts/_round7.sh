#!/usr/bin/env bash
set -u
s=$(date +%s)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl2/*.whl > $OUT/whl2.log 2>&1 || { cat $OUT/whl2.log; exit 1; }
export PYTHONPATH=/tmp/site TILELANG_CACHE_DIR=$PWD/.tlcache
timeout 45 python3 -m operator_runtime._internal.tilelang_bench --op softmax reduce_sum > $OUT/tl_bench.txt 2>&1
echo "tl bench rc $? $(( $(date +%s) - s )) s"
timeout 100 python3 -m pytest tests/ --backend tilelang -n 16 -q -p no:cacheprovider \
  -k "softmax or reduce_sum or rows_not_whole" > $OUT/tl_test.log 2>&1
echo "tl tests rc $? $(( $(date +%s) - s )) s"; tail -1 $OUT/tl_test.log; grep -E "^FAILED" $OUT/tl_test.log | head
grep -v "INFO\|WARN" $OUT/tl_bench.txt | cut -c1-175
