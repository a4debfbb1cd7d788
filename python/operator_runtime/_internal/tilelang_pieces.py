"""Problems past TileLang's int32 indexing, planned as pieces that fit.

The TileLang kernels index with int32, so no tensor a kernel sees may hold
more than LIMIT = 2**30 elements: half the int32 range, as the kernels'
own bound arithmetic (a grid of ceildiv(n, 2048) blocks computes n + 2047)
must not overflow either; a 2**31 - 1 element piece of a copy launched a
grid of 2**64 - 262144 blocks. A larger problem is cut along one dim into
pieces that fit (cut again if one index of that dim is still too large);
each piece is an ordinary descriptor, run in order on views of the
caller's tensors.

Where an op may be cut is its kernel file's to say (tilelang_kernels):
`cuts(out, inputs, params)`, by default every dim (elementwise ops: the
inputs arrive broadcast to out's shape). A reduction with no dim left to
cut (a sum to a scalar, or one output reducing more than LIMIT elements)
names, by `split_reduction`, an input dim to split: each piece reduces
into float32 partials in the workspace, then one more descriptor of the
same op reduces the partials into out, in piece order (deterministic).

A piece of a transposed copy is no longer a whole transpose: it runs the
strided kernel. Correct, slower; only tensors past LIMIT elements pay it.
"""

from __future__ import annotations

import torch

from ..errors import OperatorRuntimeError
from .tilelang_planning import WORKSPACE_ALIGN, TileLangDescriptor

LIMIT = 2**30


def fits(out, inputs) -> bool:
    return all(t.numel() <= LIMIT for t in (out, *inputs))


def plan_sized(plan, kernels, name, out, inputs, params):
    """plan(out, inputs, params) -> descriptor, for a problem of any size
    (`kernels`: the op's kernel file, whose cuts and split_reduction apply)."""
    if fits(out, inputs):
        return plan(out, inputs, params)
    for src_dim, out_dim in _cuts(kernels, out, inputs, params):
        size = out.shape[out_dim]
        if size > 1:
            return _cut(plan, kernels, name, out, inputs, params, src_dim, out_dim, size)
    split = getattr(kernels, "split_reduction", None)
    reduction = split(out, inputs, params) if split is not None else None
    if reduction is not None:
        return _reduce_through_partials(plan, kernels, name, out, inputs, params, *reduction)
    raise OperatorRuntimeError(f"tilelang create {name}", 4, "OPRT_STATUS_BAD_SHAPE",
                               f"pieces hold at most {LIMIT} elements (int32 indexing): {name} "
                               f"cannot cut shape {tuple(inputs[0].shape)} into pieces that fit "
                               f"(got {max(t.numel() for t in (out, *inputs))} elements)")


def _cuts(kernels, out, inputs, params) -> list:
    """(input dim, out dim) pairs along which every tensor can be cut alike."""
    cuts = getattr(kernels, "cuts", None)
    if cuts is not None:
        return cuts(out, inputs, params)
    if any(t.shape != out.shape for t in inputs):
        return []
    return [(d, d) for d in range(out.dim())]


def _combine(variant, workspace_size, steps, parts):
    return TileLangDescriptor(variant, workspace_size, steps, sum(p.compile_seconds for p in parts))


def _steps_of(size, per_index):
    step = max(1, LIMIT // max(per_index, 1))
    return [(i, min(step, size - i)) for i in range(0, size, step)]


def _cut(plan, kernels, name, out, inputs, params, src_dim, out_dim, size):
    per_index = max(t.numel() for t in (out, *inputs)) // size
    parts = []
    for start, length in _steps_of(size, per_index):
        piece = plan_sized(plan, kernels, name, out.narrow(out_dim, start, length),
                           [t.narrow(src_dim, start, length) for t in inputs], params)
        parts.append((start, length, piece))

    def run(o, ins, ws):  # pieces launch on torch's current stream, as every TileLang kernel does
        for start, length, piece in parts:
            piece.execute(o.narrow(out_dim, start, length), [t.narrow(src_dim, start, length) for t in ins], ws, None)

    return _combine(f"{parts[0][2].variant}+pieces{len(parts)}", max(p.workspace_size for _, _, p in parts), [run],
                    [p for _, _, p in parts])


def _reduce_through_partials(plan, kernels, name, out, inputs, params, dim, final_params):
    src = inputs[0]
    size = src.shape[dim]
    cuts = _steps_of(size, src.numel() // size)
    shape = tuple(out.shape)
    partials = torch.empty((len(cuts),) + shape, dtype=torch.float32, device=out.device)  # planning only
    parts = [(start, length, plan_sized(plan, kernels, name, partials[j], [src.narrow(dim, start, length)], params))
             for j, (start, length) in enumerate(cuts)]
    final = plan_sized(plan, kernels, name, out, [partials], final_params)
    partial_bytes = partials.numel() * 4
    scratch = -(-partial_bytes // WORKSPACE_ALIGN) * WORKSPACE_ALIGN  # the pieces' own workspace starts here
    need = max([p.workspace_size for _, _, p in parts] + [final.workspace_size])

    def run(o, ins, ws):
        sums = ws[:partial_bytes].view(torch.float32).view(partials.shape)
        rest = ws[scratch:]
        for j, (start, length, piece) in enumerate(parts):
            piece.execute(sums[j], [ins[0].narrow(dim, start, length)], rest, None)
        final.execute(o, [sums], rest, None)

    variant = f"{parts[0][2].variant}+partials{len(parts)}"
    return _combine(variant, scratch + need, [run], [p for _, _, p in parts] + [final])
