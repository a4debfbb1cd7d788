"""Device-code building blocks shared by the TileLang kernels in ops/*/tilelang/.

Kernels are written at thread level (``T.get_thread_binding``) so that the
loads, the vector width and the reduction tree are explicit. Everything here
is a ``@T.macro`` expanded into the calling kernel.
"""

from __future__ import annotations

import tilelang.language as T
import torch

WARP = 32
FLOAT32 = "float32"
NEG_INF = -float("inf")


def itemsize(dtype: str) -> int:
    return getattr(torch, dtype).itemsize


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
def block_max(acc, red, tx, threads):
    """acc[0] of every thread becomes the block's max (fmaxf: NaN is dropped)."""
    warp_max(acc)
    if tx % 32 == 0:
        red[tx // 32] = acc[0]
    T.sync_threads()
    acc[0] = T.if_then_else(tx % 32 < threads // 32, red[tx % 32], T.float32(NEG_INF))
    warp_max(acc)
    T.sync_threads()


@T.macro
def rescale(s, m_old, m_new):
    """s * exp(m_old - m_new), with equal maxima (also both -inf or +inf) giving s."""
    s[0] = T.if_then_else(m_old == m_new, s[0], s[0] * T.exp(m_old - m_new))
