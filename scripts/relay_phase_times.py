"""Per-row phase times of softmax rows_relay, with
scripts/relay_phase_times.patch applied and built (see there): for each
case, the median-event run's per-row stamps (median / max over blocks, us
from the first block's start): 1 the chunk's rest read, 2 stats merged and
arrival published, 3 every block of the group arrived (stamped a row
later), 4 the block's chunk written."""
import ctypes
import os

import torch
import operator_runtime as oprt
from operator_runtime._internal.library import library_path
from operator_runtime_testing.benchmark import l2_flush

lib = ctypes.CDLL(str(library_path()))
N = 5 * 16 * 1024
buf = (ctypes.c_ulonglong * N)()
flush = l2_flush(torch.device("cuda"))
os.environ["OPRT_TUNE_SOFTMAX_RELAY"] = "1"
# (shape, dtype, rows_relay's OPRT_TUNE_SOFTMAX_RELAY_* knobs)
cases = [((16, 4 << 20), torch.bfloat16, {}), ((16, 4 << 20), torch.bfloat16, {"GROUPS": 4}),
         ((4, 4 << 20), torch.bfloat16, {}), ((16, 4 << 20), torch.float32, {}),
         ((16, 4 << 20), torch.bfloat16, {"SLOTS": 3}), ((16, 4 << 20), torch.bfloat16, {"PER_SM": 2, "GROUPS": 2})]
for shape, dt, knobs in cases:
    for name in ("GROUPS", "SLOTS", "PER_SM"):
        os.environ.pop(f"OPRT_TUNE_SOFTMAX_RELAY_{name}", None)
    os.environ.update({f"OPRT_TUNE_SOFTMAX_RELAY_{k}": str(v) for k, v in knobs.items()})
    groups = knobs.get("GROUPS", 1)
    x = torch.randn(shape, device="cuda", dtype=dt)
    out = torch.empty_like(x)
    p = oprt.prepare_softmax(out, x, -1, backend="nvidia")
    runs = []
    for rep in range(9):
        flush(); torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); p.run(); e.record(); torch.cuda.synchronize()
        assert lib.oprt_debug_relay_times(buf) == 0
        runs.append((s.elapsed_time(e) * 1e3, list(buf)))
    runs.sort(key=lambda r: r[0])
    ev, b = runs[len(runs) // 2]
    at = lambda k, i, blk: b[(k * 16 + i) * 1024 + blk]
    t_last = max(at(0, 0, blk) for blk in range(1024))  # this run's blocks started within 1 ms of each other
    blocks = [blk for blk in range(1024) if at(0, 0, blk) > t_last - 10**6]
    t0 = min(at(0, 0, blk) for blk in blocks)
    print(f"\n{p.variant} {tuple(shape)} {dt} {knobs or 'planned knobs'}: event {ev:.1f} us, "
          f"{len(blocks)} blocks; start spread {(max(at(0,0,k) for k in blocks)-t0)/1e3:.2f} us")
    print("  row   rest(med/max)   arrived(med/max)   allin(med/max)   written(med/max)")
    for i in range(min(16, -(-shape[0] // groups))):  # a group's i-th row (stamps of other runs: before t0)
        cols = []
        for k in (1, 2, 3, 4):
            v = sorted((at(k, i, blk) - t0) / 1e3 for blk in blocks if at(k, i, blk) >= t0)
            cols.append(f"{v[len(v)//2]:7.1f} {v[-1]:7.1f}" if v else "      -       -")
        print(f"  {i:3d}  " + "   ".join(cols))
