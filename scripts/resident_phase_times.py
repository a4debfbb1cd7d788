"""Per-block phase times of softmax rows_resident, with
scripts/resident_phase_times.patch applied and built (see there): for each
case and each way of filling the cache (bulk copies, each thread's copies),
the median-event run's phase end times (min / median / max over blocks, us
from the first block's start) and each phase's duration."""
import ctypes
import os

import torch

import operator_runtime as oprt
from operator_runtime._internal.library import library_path
from operator_runtime_testing.benchmark import l2_flush

lib = ctypes.CDLL(str(library_path()))
buf = (ctypes.c_ulonglong * (8 * 1024))()
flush = l2_flush(torch.device("cuda"))
blocks = torch.cuda.get_device_properties(0).multi_processor_count  # the resident grid: a block per SM
names = ["start", "first reads", "all stats", "grid sync", "row merged", "rest written", "cache written"]
cases = [((4, 4 << 20), torch.bfloat16), ((4, 4 << 20), torch.float32), ((1, 16 << 20), torch.bfloat16),
         ((16, 4 << 20), torch.bfloat16), ((16, 4 << 20), torch.float32)]
for shape, dt in cases:
    x = torch.randn(shape, device="cuda", dtype=dt)
    out = torch.empty_like(x)
    for copies in ("0", "1"):  # OPRT_TUNE_SOFTMAX_RESIDENT_COPIES: bulk copies, each thread's copies
        os.environ["OPRT_TUNE_SOFTMAX_RESIDENT_COPIES"] = copies
        p = oprt.prepare_softmax(out, x, -1, backend="nvidia")
        rows = []
        for rep in range(12):
            flush()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            p.run()
            e.record()
            torch.cuda.synchronize()
            assert lib.oprt_debug_phase_times(buf) == 0
            t = [[buf[k * 1024 + b] for b in range(blocks)] for k in range(7)]
            t0 = min(t[0])
            # Blocks without a task (rows x splits < blocks) leave after the
            # barrier: their later stamps are an earlier run's, so only the
            # blocks that stamped the end of this run count.
            live = [b for b in range(blocks) if t[6][b] >= t0]
            rows.append((s.elapsed_time(e) * 1e3, [[(t[k][b] - t0) / 1e3 for b in live] for k in range(7)]))
        rows.sort(key=lambda r: r[0])
        ev, ph = rows[len(rows) // 2]
        print(f"\n{p.variant} {tuple(shape)} {dt}: event {ev:.1f} us; phase end times "
              f"(us from the first block's start), min/median/max over the {len(ph[0])} blocks with a task")
        for k in range(7):
            v = sorted(ph[k])
            print(f"  {k} {names[k]:18s} {v[0]:7.2f} {v[len(v) // 2]:7.2f} {v[-1]:7.2f}")
        for a, b in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]:
            d = sorted(ph[b][i] - ph[a][i] for i in range(len(ph[0])))
            print(f"  dur {names[a]}->{names[b]}: min {d[0]:.2f} med {d[len(d) // 2]:.2f} max {d[-1]:.2f}")
os.environ.pop("OPRT_TUNE_SOFTMAX_RESIDENT_COPIES")
