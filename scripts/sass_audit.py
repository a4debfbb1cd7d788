"""Per-kernel counts of global load and store widths in a CUDA binary.

    python scripts/sass_audit.py build/liboperator_runtime.so [kernel-regex]

Runs `cuobjdump -sass` ($CUOBJDUMP, else the one on PATH; without a CUDA
toolkit, `pip download --no-deps triton` carries one in
triton/backends/nvidia/bin/) and prints one line per kernel, e.g.
`softmax_rows_kernel<__half, 0, 8, 1, int>  LDG.E.128:8 STG.E.128:8 ...`.
Scalar widths also come from the head, tail and misaligned fallbacks, so
compare against what the vector path should have: a kernel with 8 vector
slots per thread should show STG.E.128:8; none at all means the compiler
split the 16-byte stores (docs/nvidia.md).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cuobjdump = os.environ.get("CUOBJDUMP", "cuobjdump")
    sass = subprocess.run([cuobjdump, "-sass", sys.argv[1]], capture_output=True, text=True, check=True).stdout
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    counts: dict = collections.OrderedDict()
    kernel = None
    for line in sass.splitlines():
        match = re.search(r"Function : (\S+)", line)
        if match:
            kernel = match.group(1)
            counts[kernel] = collections.Counter()
            continue
        match = re.search(r"\b(?:LDG|STG)\.E(?:\.[A-Z0-9]+)*", line)
        if match and kernel:
            counts[kernel][match.group(0)] += 1
    names = subprocess.run(["c++filt"], input="\n".join(counts), capture_output=True, text=True).stdout.splitlines()
    for name, count in zip(names, counts.values()):
        name = re.sub(r"\(.*", "", name.replace("oprt::nvidia::(anonymous namespace)::", ""))
        if pattern and not pattern.search(name):
            continue
        print(f"{name:80} " + " ".join(f"{k}:{v}" for k, v in sorted(count.items())))


if __name__ == "__main__":
    main()
