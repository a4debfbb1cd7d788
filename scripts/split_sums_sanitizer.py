"""Split sums small enough for compute-sanitizer: rows, columns, a scalar and
a batch of column sums, each from an aligned base and from one 4 bytes off
(the scalar kernels), twice each (the tilelang last-block counters must
come back to 0). Prints the largest error against float64 per case.

    OPRT_HOST_REFERENCE=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 \\
      compute-sanitizer --tool racecheck --error-exitcode 1 python3 scripts/split_sums_sanitizer.py [backend]
"""
import sys

import torch

import operator_runtime as oprt

backend = sys.argv[1] if len(sys.argv) > 1 else "tilelang"
torch.manual_seed(0)
CASES = [((2, 70001), torch.float32, -1), ((4096, 64), torch.float32, 0), ((300000,), torch.bfloat16, None),
         ((3, 1000, 96), torch.float16, 1), ((2001, 96), torch.float32, 0)]
worst = 0.0
for shape, dtype, dim in CASES:
    for offset in (0, 1):
        n = torch.Size(shape).numel()
        x = torch.randn(n + offset, device="cuda").to(dtype)[offset:].view(shape)
        first = oprt.reduce_sum(x, dim, backend=backend)
        again = oprt.reduce_sum(x, dim, backend=backend)
        expected = x.double().sum() if dim is None else x.double().sum(dim)
        error = (first.double() - expected).abs().max().item() / max(1.0, expected.abs().max().item())
        same = torch.equal(first, again)
        print(f"{str(shape):16s} {str(dtype)[6:]:9s} dim {dim} offset {offset}: relative error {error:.1e}"
              f"{'' if same else '  SECOND RUN DIFFERS'}", flush=True)
        worst = max(worst, error if same else float("inf"))
sys.exit(0 if worst < 1e-2 else 1)
