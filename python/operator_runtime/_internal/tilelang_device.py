"""Device-code building blocks shared by every TileLang kernel: constants,
compile settings, and ``@T.macro`` helpers expanded into the calling kernel.
A leaf module (TileLang and torch only); kernel files reach it through
operator_runtime.tilelang_authoring.

Kernels are written at thread level (``T.get_thread_binding``) so that the
loads, the vector width and the reduction tree are explicit.
"""

from __future__ import annotations

import os

import tilelang.language as T
import torch

WARP = 32
F32 = "float32"
DTYPES = ("float32", "float16", "bfloat16")  # TileLang's names of the dtypes every kernel takes
NEG_INF = -float("inf")
RESIDENT_BLOCKS = 1024  # persistent grids: about what an H200 holds at 256 threads (132 SMs x 8)
TARGET_BLOCKS = 528     # 4 blocks per SM on a 132-SM H200: enough to fill the GPU
MAX_GRID_Y = 65535      # CUDA's limit on gridDim.y and gridDim.z


def tuned_off(knob: str) -> bool:
    """Whether OPRT_TUNE_<knob>=0 turns a planned choice off (for A/B runs)."""
    return os.environ.get(f"OPRT_TUNE_{knob}") == "0"


def segments(blocks: int, length: int, min_segment: int, target: int = TARGET_BLOCKS) -> int:
    """How many segments to cut a reduced length into (a block each) so that
    `blocks` blocks become about `target`, no segment under min_segment."""
    if blocks >= target // 2 or length <= min_segment:
        return 1
    return max(1, min(-(-target // blocks), -(-length // min_segment), MAX_GRID_Y))


def row_edge(first, N, lo, hi, tx, vec):
    """(index, whether thread tx has one) of a row's elements outside its
    whole vectors lo .. hi - 1 (counted from the tensor's start): threads
    0 .. vec - 1 take the up to vec - 1 before vector lo, threads
    vec .. 2 vec - 1 those from vector hi on. The row starts at element
    `first` and is N >= 2 * vec long."""
    edge = T.if_then_else(tx < vec, first + tx, hi * vec + tx - vec)
    return edge, T.if_then_else(tx < vec, edge < lo * vec, T.And(tx < 2 * vec, edge < first + N))


# How every kernel is compiled (the runtime and tilelang_compile alike):
# tl.force_let_inline substitutes an index expression bound to a Python name
# (start = seg * seg_len) where it is used, as the front end does for names
# that hold no variable; without it such a name becomes a C local the
# vectorizer cannot see through (16-byte loads fall back to scalar). The
# kernels keep expensive quotients in T.alloc_var registers instead, so that
# inlining never repeats a division.
PASS_CONFIGS = {"tl.force_let_inline": True}

# For the kernels whose factory carries it (`with_stores_lowered`): global
# loads and stores become explicit ldg/stg calls. Without it nvcc split the
# uint4 store of a local bf16/float array into 4-byte stores
# (softmax_column_apply: 16 STG.E instead of 4 STG.E.128). Not for every
# kernel: the explicit loads are asm volatile, in order, and lose the
# read-only (.nc) path.
STORES_LOWERED = {"tl.enable_lower_ldgstg": True}

# For the kernels whose factory carries it (`with_denormals_flushed`, every
# softmax-family kernel): nvcc -ftz=true. fast_exp's __expf is ex2.approx.f32, which
# without ftz keeps results below 2^-126 by a scale and a square around the
# MUFU.EX2 (five instructions more per exp: 5680 -> 4144 SASS instructions
# in the bf16 column_cluster kernel). The nvidia backend's exp flushes too;
# outputs below 2^-126 become 0 (float32 and bf16; fp16's range is above).
DENORMALS_FLUSHED = {"tl.device_compile_flags": ["-ftz=true"]}


def _compiled_with(configs: dict):
    def decorate(factory):
        factory.pass_configs = {**getattr(factory, "pass_configs", {}), **configs}
        return factory
    return decorate


with_stores_lowered = _compiled_with(STORES_LOWERED)
with_denormals_flushed = _compiled_with(DENORMALS_FLUSHED)
# A kernel whose every global access sits under its own bounds test: no
# second, generated test (on a column_cluster cp.async it was 34 SASS
# instructions a copy, the 64-bit address arithmetic included).
with_bounds_trusted = _compiled_with({"tl.disable_safe_memory_legalize": True})


def pass_configs(factory) -> dict:
    """The pass configs to compile `factory`'s kernels with
    (OPRT_TUNE_TILELANG_FTZ=0: without DENORMALS_FLUSHED, to measure it)."""
    configs = {**PASS_CONFIGS, **getattr(factory, "pass_configs", {})}
    if tuned_off("TILELANG_FTZ"):
        configs = {k: v for k, v in configs.items() if DENORMALS_FLUSHED.get(k) != v}
    return configs


def itemsize(dtype: str) -> int:
    return getattr(torch, dtype).itemsize


def rows_per_warp(dtype: str, per_lane: int) -> int:
    """Rows a warp_rows warp takes at once: about 16 bytes of loads in flight
    per lane, so that short rows still keep enough loads outstanding (a
    128-wide bf16 row alone gives a lane 8 bytes: 2 rows a warp). More rows
    than that only add registers: 4 rows of 128-wide 16-bit rows ran slower
    than 2 on the H200, for sums and softmax alike."""
    return max(1, min(4, 16 // (per_lane * itemsize(dtype))))


def vector_width(*dtypes: str) -> int:
    """Elements per 16-byte access of the narrowest dtype (8 for 16-bit, 4 for float32)."""
    return 16 // min(itemsize(d) for d in dtypes)


@T.macro
def warp_sum(acc):
    for o in T.unroll(5):
        acc[0] = acc[0] + T.shfl_xor(acc[0], 16 >> o)


@T.macro
def warp_max(acc):
    for o in T.unroll(5):
        acc[0] = T.max(acc[0], T.shfl_xor(acc[0], 16 >> o))


@T.macro
def block_sum(acc, red, tx, threads):
    """acc[0] of every thread becomes the block's sum (fixed tree: deterministic).
    red: a float32 shared buffer of >= 32 entries; ends with a barrier, so red
    can be reused right after."""
    warp_sum(acc)
    if tx % 32 == 0:
        red[tx // 32] = acc[0]
    T.sync_threads()
    acc[0] = T.if_then_else(tx % 32 < threads // 32, red[tx % 32], T.float32(0))
    warp_sum(acc)
    T.sync_threads()


@T.macro
def compensated_add(total, at, comp, comp_at, x, tmp):
    """total[at] += x with Kahan's compensation in comp[comp_at] (at, comp_at:
    index tuples; tmp: 2 local float32): a long sequence of adds stays
    within two roundings, where a plain running sum drifts with its length
    (the nvidia backend's ops/common/nvidia/long_sum.cuh). Once the total is
    inf or NaN the compensation stays 0. The steps go through tmp, so no
    rewrite can fold (t - total) - y to 0; kernels build without fast math."""
    tmp[0] = x - comp[comp_at]
    tmp[1] = total[at] + tmp[0]
    comp[comp_at] = T.if_then_else(T.abs(tmp[1]) <= T.float32(3.4028234663852886e38),
                                   (tmp[1] - total[at]) - tmp[0], T.float32(0))
    total[at] = tmp[1]


@T.macro
def block_max(acc, red, tx, threads):
    """acc[0] of every thread becomes the block's max (fmaxf: NaN is dropped)."""
    warp_max(acc)
    if tx % 32 == 0:
        red[tx // 32] = acc[0]
    T.sync_threads()
    acc[0] = T.if_then_else(tx % 32 < threads // 32, red[tx % 32], T.float32(NEG_INF))
    warp_max(acc)
    T.sync_threads()


def column_tile(bt, seg, R, C, S, cols: int, vec: int):
    """Where a block of the column kernels works (grid: column tiles x batch,
    S row segments; lane tx % 32 holds `vec` columns, warp tx // 32 every 8th
    row): (b, tile, first row, end row, first column). The quotients live in
    registers (see PASS_CONFIGS); call it where the kernel declares locals."""
    tx = T.get_thread_binding()
    b = T.alloc_var("int32", init=bt // T.ceildiv(C, cols))
    tile = T.alloc_var("int32", init=bt % T.ceildiv(C, cols))
    seg_len = T.alloc_var("int32", init=T.ceildiv(R, S))
    b, tile, seg_len = b[0], tile[0], seg_len[0]  # outside a kernel body a var is read as a 1-element buffer
    return b, tile, seg * seg_len + tx // 32, T.min(R, seg * seg_len + seg_len), tile * cols + tx % 32 * vec


@T.macro
def load_column_round(src, buf, b, start, k, unroll, lanes, c0, vec):
    """Round k of a column tile's loads (every row in the segment): buf[u, :]
    = the `vec` columns from c0 of row start + (k * unroll + u) * lanes, all
    `unroll` 16-byte loads issued before any is used."""
    for u in T.unroll(unroll):
        for v in T.vectorized(vec):
            buf[u, v] = src[b, start + (k * unroll + u) * lanes, c0 + v]


def fast_exp(x):
    """exp(x) as __expf (ex2.approx of x * log2 e: two instructions; expf adds
    a range reduction of about ten). Relative error about 2 ulp + |x| * 2^-23,
    and exp(x) flushes to 0 below 2^-126, as in the nvidia backend's softmax."""
    return T.__exp(x)


def scaled(s, m_old, m_new):
    """s * exp(m_old - m_new), exactly s when the maxima are equal (also both
    -inf or both +inf, where the difference would be NaN)."""
    return T.if_then_else(m_old == m_new, s, s * fast_exp(m_old - m_new))


def exp_term(x, m):
    """exp(x - m) as a softmax sum term: 0 for x = -inf (also when m is -inf)."""
    return T.if_then_else(x == T.float32(NEG_INF), T.float32(0), fast_exp(x - m))


def term_under_neg_inf_max(x):
    """What x adds to a sum of exp(x - max) when the max is -inf: every
    element is -inf (adds 0) or NaN (must reach the sum). With a max above
    -inf, fast_exp(-inf - max) is 0 by itself: a kernel may test the max
    once and use this only then, instead of exp_term on every element."""
    return T.if_then_else(x == T.float32(NEG_INF), T.float32(0), x)


@T.macro
def rescale(s, m_old, m_new):
    """s[0] * exp(m_old - m_new) in place (see scaled)."""
    s[0] = scaled(s[0], m_old, m_new)
