"""Timing for the benchmark harness.

CPU: wall time (time.perf_counter). Each callable is warmed up, then timed
in several batches of back-to-back calls; a batch's time / its call count is
one sample and the median of the samples is reported. Batches of the
callables being compared are interleaved (ours, torch, ours, torch, ...) so
that drift in clock speed or background load hits every side alike. CPU
caches stay warm for every side alike (the host's L3 may hold small cases).
Other processes' CPU use during each measurement is recorded with it.

CUDA (per METHOD.md): device time from CUDA events after warm-up. Before
every timed call an L2 flush over a buffer of max(256 MiB, 4 x L2) bytes
evicts the operands, so no call finds its data L2-resident. Every row is
timed under two conditions (CONDITIONS), which differ in that flush only:
"clean" reads the buffer, which leaves L2 holding clean lines; "dirty"
writes it, as triton's do_bench does, which leaves up to a whole L2 of
dirty lines (60 MB on the H200) whose write-back to DRAM the next call pays
for, as a kernel does after a producer kernel in a real model (on the H200
that added up to 10 us to a ~35 us call). When enqueueing a call takes the
host longer than the flush takes the GPU (measured during warm-up), a spin
kernel (torch.cuda._sleep) after the flush keeps the GPU busy until the
call is enqueued, so host time stays out of the event interval; the flag
`host_bound` says if it still might not have. One event pair brackets one
call; the functions measured together take turns in rounds, each round
starting one function further on (a call's time depended on its place in
the round by up to 1 us on a 5 us sum), and the median over reps is
reported.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Sequence

import torch

ALL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# -- benchmark cases --------------------------------------------------------------

@dataclass
class BenchCase:
    """One benchmark configuration of one op at one dtype.

    shapes: one shape per input, in the op's argument order.
    layout: "contiguous", or "transposed" (input 0 is the .t() view of a
            contiguous tensor of the reversed shape; 2-D only).
    params: op keyword parameters (dim, keepdim).
    gpu_only: too large for a 2-core CPU run; skipped on CPU backends.
    quick: part of the --quick subset.
    """

    name: str
    shapes: tuple
    dtype: torch.dtype
    params: dict = field(default_factory=dict)
    layout: str = "contiguous"
    gpu_only: bool = False
    quick: bool = False

    @property
    def numel(self) -> int:
        """Elements of the largest input (the op's size for reporting)."""
        sizes = [1] * len(self.shapes)
        for i, shape in enumerate(self.shapes):
            for s in shape:
                sizes[i] *= s
        return max(sizes)


def case_grid(name: str, shapes: Sequence, dtypes=ALL_DTYPES, *, quick_dtypes=(), **kw) -> list:
    """One BenchCase per dtype; those in quick_dtypes join the --quick subset."""
    return [BenchCase(name, tuple(tuple(s) for s in shapes), dt, quick=dt in quick_dtypes, **kw)
            for dt in dtypes]


# -- timing ---------------------------------------------------------------------------

@dataclass
class TimingConfig:
    min_time: float = 0.2       # seconds of timed calls per measured callable
    batches: int = 5            # CPU: samples per callable (median taken)
    warmup_time: float = 0.02   # CPU: seconds of warm-up calls
    warmup_calls: int = 3       # CUDA: untimed calls before timing
    min_reps: int = 10          # CUDA: event-timed calls, at least ...
    max_reps: int = 500         # ... and at most


@dataclass
class Timing:
    median_us: float
    low_us: float               # CPU: fastest batch; CUDA: 25th percentile
    high_us: float              # CPU: slowest batch; CUDA: 75th percentile
    reps: int                   # timed calls
    method: str
    host_bound: bool = False    # CUDA: the GPU may have waited for the host inside a timed interval
    background_busy: float | None = None  # CPU: share of the CPUs other processes used meanwhile

    def to_dict(self) -> dict:
        return dict(self.__dict__)


# The conditions a CUDA call is timed under, and the flush that makes each
# (see the module docstring). The CPU has one condition: nothing is flushed.
CONDITIONS = ("clean", "dirty")
FLUSH_OF_CONDITION = {"clean": "read", "dirty": "write"}
CPU_CONDITION = "cpu"


def _is_cuda(device) -> bool:
    return torch.device(device).type == "cuda"


def measure(fns: Dict[str, Callable], device, config: TimingConfig | None = None,
            flush: str | None = "read") -> Dict[str, Timing]:
    """Median time per call of each callable, measured interleaved. CUDA:
    `flush` is the L2 flush before every timed call ("read", "write", or
    None for none); the CPU ignores it."""
    config = config or TimingConfig()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside a timed batch would land on one side only
    try:
        if _is_cuda(device):
            return _measure_cuda(fns, torch.device(device), config, flush)
        return _measure_cpu(fns, config)
    finally:
        if gc_was_enabled:
            gc.enable()


def conditions_for(device, requested: str = "both") -> tuple:
    """The conditions to time on `device`: on CUDA the requested one
    ("clean" or "dirty") or both; on the CPU its only one, whatever was
    requested (nothing is flushed there)."""
    if not _is_cuda(device):
        return (CPU_CONDITION,)
    if requested == "both":
        return CONDITIONS
    if requested not in CONDITIONS:
        raise ValueError(f"condition must be one of {', '.join(CONDITIONS)} or both, not {requested!r}")
    return (requested,)


def measure_conditions(fns: Dict[str, Callable], device, config: TimingConfig | None,
                       conditions: Sequence[str], measure_fn: Callable = measure) -> Dict[str, Dict[str, Timing]]:
    """{condition: {name: Timing}}: the callables measured together (as
    measure() does) under each condition in turn."""
    return {condition: measure_fn(fns, device, config, flush=FLUSH_OF_CONDITION.get(condition))
            for condition in conditions}


def _measure_cpu(fns, config: TimingConfig) -> Dict[str, Timing]:
    load = OtherLoad()
    per_call = {}
    for name, fn in fns.items():
        fn()  # first call pays lazy set-up (descriptor creation, page faults)
        start, calls = time.perf_counter(), 0
        while calls < 2 or (time.perf_counter() - start < config.warmup_time and calls < 10000):
            fn()
            calls += 1
        per_call[name] = (time.perf_counter() - start) / calls
    # Very slow calls: fewer (but at least 3) single-call batches.
    batches = config.batches if max(per_call.values()) * config.batches <= 5 * config.min_time else 3
    iters = {n: max(1, round(config.min_time / batches / t)) for n, t in per_call.items()}
    samples = {n: [] for n in fns}
    for _ in range(batches):
        for name, fn in fns.items():
            n = iters[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    busy = load.busy()
    return {n: Timing(statistics.median(s) * 1e6, min(s) * 1e6, max(s) * 1e6, iters[n] * batches, "cpu-wall",
                      background_busy=busy)
            for n, s in samples.items()}


_FLUSH_BUFFERS: dict = {}


def l2_cache_bytes(device) -> int:
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)


def _device_key(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def flush_buffer_bytes(device) -> int:
    """The L2 flush's buffer: max(256 MiB, 4 x L2)."""
    return max(256 * 2**20, 4 * l2_cache_bytes(device))


def _flush_buffer(device: torch.device) -> torch.Tensor:
    key = _device_key(device)
    if key not in _FLUSH_BUFFERS:
        _FLUSH_BUFFERS[key] = torch.zeros(flush_buffer_bytes(device) // 4, dtype=torch.float32, device=device)
    return _FLUSH_BUFFERS[key]


def l2_flush(device: torch.device, mode: str) -> Callable[[], None]:
    """The flush run before every timed call: "read" or "write" of the
    flush buffer (see the module docstring)."""
    buffer = _flush_buffer(device)
    if mode == "write":
        return buffer.zero_
    if mode == "read":
        return lambda: buffer.sum()  # the 4-byte result is all it writes
    raise ValueError(f"L2 flush must be 'read' or 'write', not {mode!r}")


_SPIN_CYCLES_PER_US: dict = {}


def _spin_cycles_per_us(device: torch.device) -> float:
    """Clock cycles per microsecond of torch.cuda._sleep, measured once."""
    key = _device_key(device)
    if key not in _SPIN_CYCLES_PER_US:
        cycles = 2_000_000
        _SPIN_CYCLES_PER_US[key] = cycles / (_event_ms(lambda: torch.cuda._sleep(cycles), 3) * 1e3)
    return _SPIN_CYCLES_PER_US[key]


def _event_ms(work: Callable, count: int) -> float:
    """Device ms per `work()` over `count` back-to-back runs."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        work()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / count


def _measure_cuda(fns, device: torch.device, config: TimingConfig, flush_mode: str | None) -> Dict[str, Timing]:
    names = list(fns)
    flush_l2 = flush_mode is not None
    with torch.cuda.device(device):
        flush = l2_flush(device, flush_mode) if flush_l2 else (lambda: None)
        # Warm-up; also the host-side time of one call (launch overhead).
        host_call = {}
        for name in names:
            fns[name]()
            torch.cuda.synchronize()
            samples = []
            for _ in range(config.warmup_calls):
                t0 = time.perf_counter()
                fns[name]()
                samples.append(time.perf_counter() - t0)
            host_call[name] = statistics.median(samples)
            torch.cuda.synchronize()
        flush_s = _event_ms(flush, 5) * 1e-3 if flush_l2 else 0.0
        # The GPU must still be busy when the call reaches it: pad the flush
        # with a spin of twice the host's enqueue time where it falls short.
        slowest_host = max(host_call.values())
        spin_us = 2e6 * slowest_host - 1e6 * flush_s if flush_l2 else 0.0
        if spin_us > 0:
            cycles = int(spin_us * _spin_cycles_per_us(device))
            flush_only = flush
            flush = lambda: (flush_only(), torch.cuda._sleep(cycles))  # noqa: E731
            flush_s += spin_us * 1e-6
        # Rough per-rep device time (flush + call) decides the rep count.
        estimate = max(_event_ms(lambda: (flush(), fns[n]()), 3) * 1e-3 for n in names)
        reps = int(min(config.max_reps, max(config.min_reps, config.min_time / max(estimate, 1e-7))))
        starts = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
        ends = {n: [torch.cuda.Event(enable_timing=True) for _ in range(reps)] for n in names}
        torch.cuda.synchronize()
        # Each rep starts one name further on: a call's time depends on its
        # place in the round (the same kernel can read 4.8 or 5.9 us), so
        # every function takes every place equally often.
        for i in range(reps):
            for name in names[i % len(names):] + names[:i % len(names)]:
                flush()
                starts[name][i].record()
                fns[name]()
                ends[name][i].record()
        torch.cuda.synchronize()
        result = {}
        for name in names:
            t = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts[name], ends[name]))
            q = statistics.quantiles(t, n=4) if len(t) >= 2 else [t[0]] * 3
            median = statistics.median(t)
            # The call is enqueued while the GPU runs the flush (or, without
            # one, the previous call): if enqueueing takes longer than that,
            # the GPU may idle inside the event interval.
            lead_s = flush_s if flush_l2 else median * 1e-6
            host_bound = host_call[name] > 0.8 * lead_s
            result[name] = Timing(median, q[0], q[2], reps,
                                  "cuda-events" + (f"+l2-flush-{flush_mode}" if flush_l2 else ""), host_bound)
        return result


# -- ceilings and host overhead ---------------------------------------------------

def measure_copy_ceiling(device, nbytes: int | None = None, config: TimingConfig | None = None) -> dict:
    """Copy bandwidth measured now: torch copy_ of a large float32 buffer
    (1 GiB on GPU, 256 MiB on CPU); bytes = read + write."""
    cuda = _is_cuda(device)
    nbytes = nbytes or (2**30 if cuda else 256 * 2**20)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_(-1, 1)  # no zeros
    dst = torch.empty_like(src)
    # Far larger than L2, so no flush is needed (and none would be fair).
    timing = measure({"copy": lambda: dst.copy_(src)}, device, config, flush=None)["copy"]
    if not torch.equal(dst, src):
        raise RuntimeError("copy ceiling: torch copy_ produced a wrong result")
    moved = 2 * src.numel() * 4
    del src, dst
    return {"gbps": moved / (timing.median_us * 1e3), "bytes_moved": moved, "buffer_bytes": nbytes,
            "median_us": timing.median_us, "low_us": timing.low_us, "high_us": timing.high_us,
            "reps": timing.reps, "method": timing.method}


def measure_host_overhead(fns: Dict[str, Callable], device, calls: int = 2000, repeats: int = 5) -> Dict[str, float]:
    """µs per call of N back-to-back calls (on a tiny tensor, the host cost
    dominates): host clock, synchronized before and after on CUDA. Median of
    `repeats` interleaved rounds."""
    cuda = _is_cuda(device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for fn in fns.values():
        for _ in range(50):
            fn()
    samples = {n: [] for n in fns}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for name, fn in fns.items():
                sync()
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                sync()
                samples[name].append((time.perf_counter() - start) / calls * 1e6)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {n: statistics.median(s) for n, s in samples.items()}


def _proc_stat() -> tuple[int, int] | None:
    """(total, idle) CPU ticks over all CPUs since boot (Linux), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields[:8]), fields[3] + fields[4]
    except (OSError, ValueError, IndexError):
        return None


class OtherLoad:
    """How busy *other* processes kept the CPUs between construction and
    busy(): all busy ticks minus this process's own CPU time. Background
    load skews CPU timings (a parallel region waits for a core that someone
    else holds), so every CPU timing records it."""

    def __init__(self):
        self._stat, self._own = _proc_stat(), self._own_seconds()

    @staticmethod
    def _own_seconds() -> float:
        t = os.times()
        return t.user + t.system

    def busy(self) -> float | None:
        """Fraction (0..1) of all CPU time that other processes used."""
        now = _proc_stat()
        if self._stat is None or now is None:
            return None
        total, idle = now[0] - self._stat[0], now[1] - self._stat[1]
        if total <= 0:
            return None
        own = (self._own_seconds() - self._own) * os.sysconf("SC_CLK_TCK")
        return min(1.0, max(0.0, (total - idle - own) / total))


def cpu_busy_fraction(interval: float = 0.5) -> float | None:
    """Other processes' share of the CPUs over `interval` seconds."""
    load = OtherLoad()
    time.sleep(interval)
    return load.busy()


def cpu_cache_bytes() -> int | None:
    """Size of the largest CPU cache level (Linux sysfs), or None."""
    import glob

    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            text = open(path).read().strip().upper()
            sizes.append(int(text.rstrip("KMG")) * {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1))
        except (OSError, ValueError):
            pass
    return max(sizes) if sizes else None


def device_info(device) -> dict:
    device = torch.device(device)
    info = {"device": str(device), "torch": torch.__version__, "python": platform.python_version(),
            "host": platform.node(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(name=props.name, sm_count=props.multi_processor_count, l2_bytes=l2_cache_bytes(device),
                    memory_bytes=props.total_memory, cuda=torch.version.cuda)
    else:
        info.update(name=_cpu_model() or platform.machine(), threads=torch.get_num_threads(),
                    llc_bytes=cpu_cache_bytes())
    return info


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
