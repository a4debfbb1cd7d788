"""reduce_sum on TileLang: sums accumulated in float32 and rounded once.

Canonical forms (plan() below reduces every request to one of them, staging
the source through the workspace when its layout is not one of these):

  rows      src [M, N] dense, sum over N            -> out [M, S] (strided)
  columns   src [B, R, C] dense, sum over R         -> out [B, S, C] (strided)

S splits the reduced dim into S consecutive segments (one block each) so
that few long rows, or few columns, still fill the GPU. With S = 1 the
kernel writes the result straight into the caller's out (viewed as
[M, 1] or [B, 1, C]); with S > 1 it writes float32 partials into the
workspace. rows (`finish`) then adds them in the same launch: each block
counts itself in an int32 counter of its row, and the row's last block
adds the S partials in a fixed order into out and sets the counter back
to 0 (a second launch costs a few microseconds). columns leaves them to a
second launch of the same kernel (input float32): there the same finish
ran slower than the second launch (8192^2 bf16 over dim 0, in two forms of
it). Every partition depends only on the shape, so results are bitwise
reproducible. A thread's accumulators are folded into a second level every
FOLD rounds (rows: a register, columns: the thread's slot of shared
memory), compensated (compensated_add), so its serial chain is FOLD adds
and the folds lose at most two roundings, whatever the rounds.

Reduced dims of stride 0 (broadcast) are dropped by the plan: the kernels
sum the other reduced dims into float32 and scale_sums multiplies each sum
by the dropped size, rounding once into out (a 2^36-element broadcast is
neither a serial chain of 2^36 adds nor a staged copy of every element).

Kernels (sizes T.dynamic):
  rows(src, out, vec, unroll)  one block of 256 threads per (row, segment); grid (M, S);
                             flat: rows not whole vectors long (see rows)
  rows(..., finish=True)     (src, partials, counters, out): S > 1, one launch
                             (finish_by_last_block)
  group_rows(src, out, lanes) short rows, N % vec == 0, aligned: `lanes` lanes
                             per row, 16-byte loads, shuffles in the group
  warp_rows(src, out)        short rows, any N: a warp per rows_per_warp rows,
                             scalar coalesced loads
  columns(src, out, vec, unroll, slots)  a block per (tile of 32 * vec columns x batch,
                             segment): a lane per `vec` columns, the 8
                             warps on interleaved rows, summed in shared
                             memory
  scale_sums(sums, out, scale)  out = sums * scale (float32 sums, float64 scale)
vec > 1 uses 16-byte loads and needs the pointers 16-byte aligned and the
row length (or C) a multiple of vec, except in rows' flat form; vec = 1 uses
coalesced scalar loads.
"""

import math

import tilelang.language as T
import torch

from operator_runtime.tilelang_authoring import (DTYPES, F32, RESIDENT_BLOCKS, TARGET_BLOCKS, block_sum, column_tile,
                                                 compensated_add, load_column_round, row_edge, rows_per_warp, segments,
                                                 tuned_off, vector_width, with_bounds_trusted)

THREADS = 256
GROUP_ROW_LANES = (4, 8, 16, 32)  # group_rows: lanes per row (2 vectors each per step)
# rows split into segments (few long rows): vectors in flight per thread; more
# loads in flight ran faster up to 8 (a sum of 64M elements to a scalar, bf16
# and float32 alike).
SPLIT_UNROLL = 8
FOLD = 16  # rounds of loads a thread adds into its accumulators before folding them into the next level


@T.macro
def finish_by_last_block(partials, counters, out, row, seg, S, acc, red, threads):
    """The end of a split sum without a second launch: every block stores its
    sum acc[0] in partials[row, seg] and counts itself in counters[row]; the
    row's last block to arrive adds the row's S partials (fixed order, so
    deterministic) into out[row] and resets the counter to 0. counters must be
    0 on entry (the caller keeps them; every run leaves them 0 again).
    The fence orders the partial before the count; the last block reads
    the partials past L1 (__ldcg), where a line another block read could
    be stale."""
    tx = T.get_thread_binding()
    last = T.alloc_shared((1,), "int32")
    if tx == 0:
        partials[row, seg] = acc[0]
        T.call_extern("void", "__threadfence")
        last[0] = T.atomic_add(counters[row], 1, return_prev=True)
    T.sync_threads()
    if last[0] == S - 1:
        T.call_extern("void", "__threadfence")
        acc[0] = T.float32(0)
        for i in T.serial(T.ceildiv(S, threads)):
            if i * threads + tx < S:
                acc[0] = acc[0] + T.call_extern(F32, "__ldcg", T.address_of(partials[row, i * threads + tx]))
        block_sum(acc, red, tx, threads)
        if tx == 0:
            out[row] = T.cast(acc[0], out.dtype)
            counters[row] = 0


@with_bounds_trusted  # every access is bounded by its row's whole vectors [lo, hi) or its edges
def rows(src_dtype: str, out_dtype: str, vec: int, unroll: int = 2, finish: bool = False, flat: bool = False):
    """A block per (row, segment): `unroll` loads of `vec` elements in flight
    per thread, added into two vectors of float32 accumulators (in load
    order: deterministic). Without `finish` the block writes its sum to
    out[row, seg]; with it (S > 1) to the float32 partials[row, seg], and the
    row's last block to finish adds the row's S partials into out[row].
    Vectors are counted from the tensor's start; flat (N % vec != 0, 16-byte
    aligned base): a row's up to 2 * (vec - 1) elements outside its whole
    vectors are added one each by segment 0's first threads."""
    threads = THREADS
    step = threads * unroll  # vectors a round
    slots = min(unroll, 2)
    M, N, S = T.dynamic("M N S")
    om, os = T.dynamic("om os", "int64")

    @T.macro
    def segment_sum(src, row, seg, acc, red):
        """acc[0] of every thread = the sum of segment `seg` of `row`."""
        tx = T.get_thread_binding()
        part = T.alloc_local((slots * vec,), F32)
        total = T.alloc_local((2,), F32)  # the folded sum, its compensation
        tmp = T.alloc_local((2,), F32)
        buf = T.alloc_local((unroll * vec,), src_dtype)
        src1 = T.reshape(src, (M * N,))
        if vec > 1 and not flat:
            T.assume(N % vec == 0)
        first = row * N
        lo = T.ceildiv(first, vec)  # the row's first whole vector
        hi = (first + N) // vec  # one past its last
        # segments of whole rounds (registers hold the quotients: inlined,
        # they cost divisions per load)
        seg_steps = T.alloc_var("int32", init=T.ceildiv(T.ceildiv(hi - lo, S), step))
        T.assume(seg_steps >= 1)
        start = lo + seg * seg_steps * step
        end = T.min(hi, start + seg_steps * step)
        for j in T.unroll(slots * vec):
            part[j] = T.float32(0)
        total[0] = T.float32(0)
        total[1] = T.float32(0)
        if flat:
            edge, on_edge = row_edge(first, N, lo, hi, tx, vec)
            if seg == 0 and on_edge:
                part[0] = T.cast(src1[edge], F32)
        for k in T.serial(T.ceildiv(T.max(end - start, 0), step)):
            if start + (k + 1) * step <= end:
                for u in T.unroll(unroll):
                    for v in T.vectorized(vec):
                        buf[u * vec + v] = src1[(start + k * step + u * threads + tx) * vec + v]
                for u in T.unroll(unroll):
                    for v in T.unroll(vec):
                        part[u % slots * vec + v] = part[u % slots * vec + v] + T.cast(buf[u * vec + v], F32)
            else:
                for u in T.unroll(unroll):
                    if start + k * step + u * threads + tx < end:
                        for v in T.vectorized(vec):
                            buf[v] = src1[(start + k * step + u * threads + tx) * vec + v]
                        for v in T.unroll(vec):
                            part[u % slots * vec + v] = part[u % slots * vec + v] + T.cast(buf[v], F32)
            if k % FOLD == FOLD - 1:
                acc[0] = T.float32(0)
                for j in T.unroll(slots * vec):
                    acc[0] = acc[0] + part[j]
                    part[j] = T.float32(0)
                compensated_add(total, (0,), total, (1,), acc[0], tmp)
        acc[0] = T.float32(0)
        for j in T.unroll(slots * vec):
            acc[0] = acc[0] + part[j]
        compensated_add(total, (0,), total, (1,), acc[0], tmp)
        acc[0] = total[0] - total[1]
        block_sum(acc, red, tx, threads)

    if not finish:
        @T.prim_func
        def sum_rows(src: T.Tensor((M, N), src_dtype), out: T.StridedTensor((M, S), (om, os), out_dtype)):
            with T.Kernel(M, S, threads=threads) as (row, seg):
                if unroll > 2:
                    T.annotate_min_blocks_per_sm(4)  # <= 64 registers: 4 blocks of 256 fill an SM
                acc = T.alloc_local((1,), F32)
                red = T.alloc_shared((32,), F32)
                segment_sum(src, row, seg, acc, red)
                if T.get_thread_binding() == 0:
                    out[row, seg] = T.cast(acc[0], out_dtype)

        return sum_rows

    @T.prim_func
    def sum_rows_finished(src: T.Tensor((M, N), src_dtype), partials: T.Tensor((M, S), F32),
                          counters: T.Tensor((M,), "int32"), out: T.StridedTensor((M,), (om,), out_dtype)):
        with T.Kernel(M, S, threads=threads) as (row, seg):
            if unroll > 2:
                T.annotate_min_blocks_per_sm(4)
            acc = T.alloc_local((1,), F32)
            red = T.alloc_shared((32,), F32)
            segment_sum(src, row, seg, acc, red)
            finish_by_last_block(partials, counters, out, row, seg, S, acc, red, threads)

    return sum_rows_finished


def warp_rows(src_dtype: str, out_dtype: str, per_lane: int = 4, rpw: int = 0, persistent: bool = False):
    """Rows of up to a few hundred elements: a warp per `rpw` rows (0:
    rows_per_warp), scalar coalesced loads, all rows' loads of a step in
    flight together; persistent: at most RESIDENT_BLOCKS blocks, each looping
    over row groups (measured slower on the H200; kept as the knob to try)."""
    rpw = rpw or rows_per_warp(src_dtype, per_lane)
    threads = THREADS
    warps = threads // 32
    step = 32 * per_lane
    M, N = T.dynamic("M N")
    om = T.dynamic("om", "int64")
    groups = T.ceildiv(M, warps * rpw)
    grid = T.min(groups, RESIDENT_BLOCKS) if persistent else groups

    @T.prim_func
    def sum_warp_rows(src: T.Tensor((M, N), src_dtype), out: T.StridedTensor((M,), (om,), out_dtype)):
        with T.Kernel(grid, threads=threads) as bx:
            tx = T.get_thread_binding()
            lane = tx % 32
            rounds = T.alloc_var("int32", init=T.ceildiv(groups, grid))
            part = T.alloc_local((rpw, per_lane), F32)
            acc = T.alloc_local((rpw,), F32)
            for it in T.serial(rounds):
                row0 = ((it * grid + bx) * warps + tx // 32) * rpw
                for r in T.unroll(rpw):
                    for j in T.unroll(per_lane):
                        part[r, j] = T.float32(0)
                for k in T.serial(T.ceildiv(N, step)):
                    for r in T.unroll(rpw):
                        if row0 + r < M:
                            for j in T.unroll(per_lane):
                                if k * step + j * 32 + lane < N:
                                    part[r, j] = part[r, j] + T.cast(src[row0 + r, k * step + j * 32 + lane], F32)
                for r in T.unroll(rpw):
                    acc[r] = T.float32(0)
                    for j in T.unroll(per_lane):
                        acc[r] = acc[r] + part[r, j]
                for o in T.unroll(5):
                    for r in T.unroll(rpw):
                        acc[r] = acc[r] + T.shfl_xor(acc[r], 16 >> o)
                for r in T.unroll(rpw):
                    if row0 + r < M and lane == 0:
                        out[row0 + r] = T.cast(acc[r], out_dtype)

    return sum_warp_rows


def group_rows(src_dtype: str, out_dtype: str, lanes: int, slots: int = 2):
    """Short rows, N % vec == 0, 16-byte aligned: `lanes` lanes per row (a
    power of two up to a warp), each loading `slots` 16-byte vectors per step
    (all in flight before any is added), summed by shuffles inside the lane
    group. The vectorized twin of warp_rows."""
    vec = vector_width(src_dtype)
    threads = THREADS
    rows_per_block = threads // lanes
    step = lanes * slots * vec
    M, N = T.dynamic("M N")
    om = T.dynamic("om", "int64")

    @T.prim_func
    def sum_group_rows(src: T.Tensor((M, N), src_dtype), out: T.StridedTensor((M,), (om,), out_dtype)):
        with T.Kernel(T.ceildiv(M, rows_per_block), threads=threads) as bx:
            T.assume(N % vec == 0)
            tx = T.get_thread_binding()
            lane = tx % lanes
            row = bx * rows_per_block + tx // lanes
            buf = T.alloc_local((slots * vec,), src_dtype)
            part = T.alloc_local((slots * vec,), F32)
            acc = T.alloc_local((1,), F32)
            for j in T.unroll(slots * vec):
                part[j] = T.float32(0)
            if row < M:
                for k in T.serial(T.ceildiv(N, step)):
                    for j in T.unroll(slots):
                        if k * step + (j * lanes + lane) * vec < N:
                            for v in T.vectorized(vec):
                                buf[j * vec + v] = src[row, k * step + (j * lanes + lane) * vec + v]
                    for j in T.unroll(slots):
                        if k * step + (j * lanes + lane) * vec < N:
                            for v in T.unroll(vec):
                                part[j * vec + v] = part[j * vec + v] + T.cast(buf[j * vec + v], F32)
            acc[0] = T.float32(0)
            for j in T.unroll(slots * vec):
                acc[0] = acc[0] + part[j]
            for o in T.unroll(lanes.bit_length() - 1):  # xor masks lanes/2 .. 1 stay inside the group
                acc[0] = acc[0] + T.shfl_xor(acc[0], lanes >> (o + 1))
            if row < M and lane == 0:
                out[row] = T.cast(acc[0], out_dtype)

    return sum_group_rows


def columns(src_dtype: str, out_dtype: str, vec: int, unroll: int = 4, slots: int = 0):
    """A block owns a tile of 32 * vec columns: lane tx % 32 holds `vec` of
    them (one 16-byte load per row when vec > 1), and the 8 warps take every
    8th row of the segment, `unroll` rows of loads in flight; the 8 partial
    sums of a column are added in shared memory in warp order. slots > 0:
    the rounds' loads are added into `slots` vectors of accumulators (not
    `unroll`), and the kernel is held to 64 registers (4 blocks per SM)."""
    slots = slots or unroll
    threads = THREADS
    lanes = threads // 32
    cols = 32 * vec
    B, R, C, S = T.dynamic("B R C S")
    ob, os, oc = T.dynamic("ob os oc", "int64")

    @T.prim_func
    def sum_columns(src: T.Tensor((B, R, C), src_dtype), out: T.StridedTensor((B, S, C), (ob, os, oc), out_dtype)):
        with T.Kernel(T.ceildiv(C, cols) * B, S, threads=threads) as (bt, seg):
            if slots < unroll:
                T.annotate_min_blocks_per_sm(4)
            tx = T.get_thread_binding()
            lane = tx % 32
            warp = tx // 32
            b, tile, start, end, c0 = column_tile(bt, seg, R, C, S, cols, vec)
            part = T.alloc_local((slots, vec), F32)
            buf = T.alloc_local((unroll, vec), src_dtype)
            tmp = T.alloc_local((2,), F32)
            red = T.alloc_shared((lanes, cols), F32)
            comp = T.alloc_shared((lanes, cols), F32)  # the compensations of red's folded sums
            if vec > 1:
                T.assume(C % vec == 0)
            for u in T.unroll(slots):
                for v in T.unroll(vec):
                    part[u, v] = T.float32(0)
            for v in T.unroll(vec):
                red[warp, lane * vec + v] = T.float32(0)  # this thread's slot: the folded rounds, then its sums
                comp[warp, lane * vec + v] = T.float32(0)
            if c0 < C:
                for k in T.serial(T.ceildiv(T.max(end - start, 0), lanes * unroll)):
                    if start + (k * unroll + unroll - 1) * lanes < end:
                        load_column_round(src, buf, b, start, k, unroll, lanes, c0, vec)
                        for u in T.unroll(unroll):
                            for v in T.unroll(vec):
                                part[u % slots, v] = part[u % slots, v] + T.cast(buf[u, v], F32)
                    else:
                        for u in T.unroll(unroll):
                            if start + (k * unroll + u) * lanes < end:
                                for v in T.unroll(vec):
                                    part[u % slots, v] = part[u % slots, v] + T.cast(
                                        src[b, start + (k * unroll + u) * lanes, c0 + v], F32)
                    if k % FOLD == FOLD - 1:
                        for v in T.unroll(vec):
                            for u in T.unroll(1, slots):
                                part[0, v] = part[0, v] + part[u, v]
                                part[u, v] = T.float32(0)
                            compensated_add(red, (warp, lane * vec + v), comp, (warp, lane * vec + v), part[0, v],
                                            tmp)
                            part[0, v] = T.float32(0)
            for v in T.unroll(vec):
                for u in T.unroll(1, slots):
                    part[0, v] = part[0, v] + part[u, v]
                compensated_add(red, (warp, lane * vec + v), comp, (warp, lane * vec + v), part[0, v], tmp)
                red[warp, lane * vec + v] = red[warp, lane * vec + v] - comp[warp, lane * vec + v]
            T.sync_threads()
            for i in T.serial(T.ceildiv(cols, threads)):
                if i * threads + tx < cols and tile * cols + i * threads + tx < C:
                    part[0, 0] = red[0, i * threads + tx]
                    for w in T.unroll(1, lanes):
                        part[0, 0] = part[0, 0] + red[w, i * threads + tx]
                    out[b, seg, tile * cols + i * threads + tx] = T.cast(part[0, 0], out_dtype)

    return sum_columns


def scale_sums(out_dtype: str):
    """out[b, c] = sums[b, c] * scale: float32 sums over the reduced dims the
    plan kept, times the size of the broadcast ones it dropped, the product
    in float64 (exact but for its own rounding) rounded once into out."""
    threads = THREADS
    B, C = T.dynamic("B C")
    ob, oc = T.dynamic("ob oc", "int64")

    @T.prim_func
    def scale_sums_(sums: T.Tensor((B, C), F32), out: T.StridedTensor((B, C), (ob, oc), out_dtype),
                    scale: T.float64):
        with T.Kernel(T.ceildiv(B * C, threads), threads=threads) as bx:
            i = bx * threads + T.get_thread_binding()
            if i < B * C:
                out[i // C, i % C] = T.cast(T.cast(T.cast(sums[i // C, i % C], "float64") * scale, F32), out_dtype)

    return scale_sums_


def variants():
    out = []
    for d in DTYPES:
        out.append((f"rows_{d}_v", rows, (d, d, vector_width(d))))
        out.append((f"rows_{d}_1", rows, (d, d, 1)))
        out.append((f"rows_{d}_to_f32_v", rows, (d, F32, vector_width(d))))
        out.append((f"rows_{d}_to_f32_1", rows, (d, F32, 1)))
        out.append((f"rows_f32_to_{d}_1", rows, (F32, d, 1)))
        for od, suffix in ((d, ""), (F32, "_to_f32")):
            out.append((f"rows_split_{d}{suffix}_v", rows, (d, od, vector_width(d), SPLIT_UNROLL, True)))
            out.append((f"rows_split_{d}{suffix}_1", rows, (d, od, 1, 2, True)))
        for od, suffix in ((d, ""), (F32, "_to_f32")):
            out.append((f"rows_{d}{suffix}_flat", rows, (d, od, vector_width(d), 2, False, True)))
            out.append((f"rows_split_{d}{suffix}_flat", rows, (d, od, vector_width(d), SPLIT_UNROLL, True, True)))
        out.append((f"warp_rows_{d}", warp_rows, (d, d)))
        for lanes in GROUP_ROW_LANES:
            out.append((f"group_rows_{d}_{lanes}", group_rows, (d, d, lanes)))
        out.append((f"columns_{d}_v", columns, (d, d, vector_width(d))))
        out.append((f"columns_{d}_1", columns, (d, d, 1)))
        out.append((f"columns_{d}_to_f32_v", columns, (d, F32, vector_width(d))))
        if d != F32:
            out.append((f"columns_{d}_to_f32_v_slots2", columns, (d, F32, vector_width(d), 4, 2)))
        out.append((f"columns_{d}_to_f32_1", columns, (d, F32, 1)))
        out.append((f"columns_f32_to_{d}_1", columns, (F32, d, 1)))
        out.append((f"scale_sums_{d}", scale_sums, (d,)))
    unique = {}
    for name, factory, args in out:
        unique.setdefault((factory.__name__, args), (name, factory, args))
    return sorted(unique.values(), key=lambda v: v[0])


# -- planning ---------------------------------------------------------------------------------

def _plan_rows(p, src_dtype, out_dtype, M: int, N: int):
    """Body (src [M, N] dense view, out [M] strided view, ws)."""
    sd, od = p.dtype_name(src_dtype), p.dtype_name(out_dtype)
    vec = vector_width(sd)
    if N <= 512:
        if vec > 1 and N % vec == 0:
            lanes = next((n for n in GROUP_ROW_LANES if n * 2 * vec >= N), GROUP_ROW_LANES[-1])
            pick = p.launcher(group_rows, (sd, od, lanes), (sd, od), scalar_factory=warp_rows)
            return (lambda src, out, ws: pick(p.aligned(src))(src, out)), f"group_rows{lanes}"
        kernel = p.kernel(warp_rows, (sd, od))
        return (lambda src, out, ws: kernel(src, out)), "warp_rows"
    S = segments(M, N, 8192)
    if S == 1:
        pick = p.launcher(rows, (sd, od, vec) if N % vec == 0 else (sd, od, vec, 2, False, True), (sd, od, 1))

        def run(src, out, ws):
            pick(p.aligned(src))(src, out.as_strided((M, 1), (out.stride(0), 1)))

        return run, "rows"
    # S segments per row, a block each, into float32 partials; each row's
    # last block adds them up (one launch; see finish_by_last_block)
    scalar = (sd, od, 1, 2, True)
    flat = () if N % vec == 0 else (True,)
    pick = p.launcher(rows, (sd, od, vec, SPLIT_UNROLL, True, *flat), scalar)
    name = f"partials{len(p.ws.regions)}"
    p.ws.add(name, M * S, torch.float32)
    counters = p.ZeroedCounters(M)
    regions = p.ws

    def run(src, out, ws):
        pick(p.aligned(src))(src, regions.view(ws, name, (M, S)), counters.get(ws), out)

    return run, f"rows_split{S}"


def _plan_columns(p, src_dtype, out_dtype, B: int, R: int, C: int):
    """Body (src [B, R, C] dense view, out [B, 1, C] strided view, ws)."""
    sd, od = p.dtype_name(src_dtype), p.dtype_name(out_dtype)
    vec = vector_width(sd)
    use_vec = C % vec == 0
    tiles = B * -(-C // (32 * (vec if use_vec else 1)))  # a block per 32 lanes x vec columns
    # 8 blocks per SM: more segments than 4 per SM ran faster for 8192^2 over
    # dim 0, float32 and bf16 alike.
    S = segments(tiles, R, 64, 2 * TARGET_BLOCKS)
    scalar = (sd, od if S == 1 else F32, 1)
    vec_args = scalar[:2] + (vec,) if use_vec else scalar
    if S > 1 and use_vec and src_dtype.itemsize == 2 and not tuned_off("TILELANG_COLUMN_SLOTS"):
        # 16-bit: 2 accumulator vectors, not 4: 62 registers, 4 blocks per SM
        # (91 registers and 2 blocks with 4), which ran faster for 16-bit
        # sources; float32 so held ran slower.
        vec_args += (4, 2)
    pick = p.launcher(columns, vec_args, scalar)
    if S == 1:
        return (lambda src, out, ws: pick(p.aligned(src))(src, out)), "columns"
    name = f"partials{len(p.ws.regions)}"
    p.ws.add(name, B * S * C, torch.float32)
    second = p.kernel(columns, (F32, od, 1))
    regions = p.ws

    def run(src, out, ws):
        partials = regions.view(ws, name, (B, S, C))
        pick(p.aligned(src))(src, partials)
        second(partials, out)

    return run, f"columns_split{S}"


class _Sums:
    """Where the kernels put their sums ([B, C], out's view `final`): out
    itself, or where the plan dropped broadcast dims (scale > 1) float32
    sums in the workspace, which finish() scales into out (scale_sums)."""

    def __init__(self, p, out_dtype, scale: int, B: int, C: int):
        self.scale, self.shape = scale, (B, C)
        self.dtype = out_dtype if scale == 1 else torch.float32
        if scale != 1:
            self.name = f"sums{len(p.ws.regions)}"
            p.ws.add(self.name, B * C, torch.float32)
            self.regions = p.ws
            self.kernel = p.kernel(scale_sums, (p.dtype_name(out_dtype),))

    def target(self, final, ws):
        return final if self.scale == 1 else self.regions.view(ws, self.name, self.shape)

    def finish(self, final, ws):
        if self.scale != 1:
            self.kernel(self.regions.view(ws, self.name, self.shape), final, float(self.scale))


def _out_strides_by_dim(src, out, dims, keepdim) -> list:
    """out's stride for every src dim (0 for reduced dims)."""
    strides, k = [], 0
    for d in range(src.dim()):
        if d in dims:
            strides.append(0)
            k += 1 if keepdim else 0
        else:
            strides.append(out.stride(k))
            k += 1
    return strides


def _plan_degenerate(p, src, out, kept, kept_shape, out_by_dim):
    """A sum over nothing (zeros), or over size-1 dims only (a copy)."""
    if src.numel() == 0:  # a broadcast copy of a zero scalar
        zero = torch.zeros((), dtype=out.dtype, device=out.device)
        body = p.strided_copy(out.dtype, out.dtype, kept_shape, [0] * len(kept), [out_by_dim[d] for d in kept])
        return p.done("zeros", lambda o, ins, ws: body(zero, o))
    body = p.strided_copy(src.dtype, out.dtype, kept_shape, [src.stride(d) for d in kept],
                          [out_by_dim[d] for d in kept])
    return p.done("copy", lambda o, ins, ws: body(ins[0], o))


def plan(p, out, inputs, params):
    (src,), (dims, keepdim) = inputs, params
    if out.numel() == 0:
        return p.done("empty")
    out_by_dim = _out_strides_by_dim(src, out, dims, keepdim)
    kept = [d for d in range(src.dim()) if d not in dims]
    reduced = [d for d in range(src.dim()) if d in dims]
    kept_shape = [src.shape[d] for d in kept]
    r_shape, (r_src,) = p.coalesce([src.shape[d] for d in reduced], [[src.stride(d) for d in reduced]])
    if src.numel() == 0 or not r_shape:
        return _plan_degenerate(p, src, out, kept, kept_shape, out_by_dim)
    scale = 1
    if r_src[-1] == 0:  # the broadcast dims, coalesced into the last one: summed once, scaled (scale_sums)
        scale = r_shape.pop()
        r_src.pop()
        r_shape, r_src = (r_shape, r_src) if r_shape else ([1], [1])

    k_shape, (k_src, k_out) = p.coalesce(kept_shape, [[src.stride(d) for d in kept], [out_by_dim[d] for d in kept]])
    M = math.prod(k_shape)
    # rows: reduced dims are the contiguous tail of src
    if len(r_shape) == 1 and r_src[0] == 1 and (not k_shape or (len(k_shape) == 1 and k_src[0] == r_shape[0])):
        N = r_shape[0]
        out_stride = k_out[0] if k_shape else 1
        sums = _Sums(p, out.dtype, scale, M, 1)
        body, variant = _plan_rows(p, src.dtype, sums.dtype, M, N)

        def run_rows(o, ins, ws):
            out2 = o.as_strided((M, 1), (out_stride, 1))
            body(ins[0].as_strided((M, N), (N, 1)), sums.target(out2, ws)[:, 0], ws)
            sums.finish(out2, ws)

        return p.done(variant, run_rows)
    # columns: one reduced dim of stride C over [B, C] kept dims
    if len(r_shape) == 1 and k_shape and k_src[-1] == 1 and r_src[0] == k_shape[-1] and (
            len(k_shape) == 1 or (len(k_shape) == 2 and k_src[0] == r_shape[0] * k_shape[-1])):
        C, R = k_shape[-1], r_shape[0]
        B = k_shape[0] if len(k_shape) == 2 else 1
        ob = k_out[0] if len(k_shape) == 2 else 0
        sums = _Sums(p, out.dtype, scale, B, C)
        body, variant = _plan_columns(p, src.dtype, sums.dtype, B, R, C)

        def run_columns(o, ins, ws):
            out2 = o.as_strided((B, C), (ob, k_out[-1]))
            body(ins[0].as_strided((B, R, C), (R * C, C, 1)), sums.target(out2, ws).unsqueeze(1), ws)
            sums.finish(out2, ws)

        return p.done(variant, run_columns)

    # staged: gather src as [kept (out's order), reduced] into the workspace, then rows
    ko_shape, (ko_out, ko_src) = p.coalesce(kept_shape, [[out_by_dim[d] for d in kept], [src.stride(d) for d in kept]])
    N = math.prod(r_shape)
    gshape = list(ko_shape) + list(r_shape)
    p.ws.add("src", M * N, src.dtype)
    gather = p.strided_copy(src.dtype, src.dtype, gshape, list(ko_src) + list(r_src), p.contiguous_strides(gshape))
    out_direct = len(ko_shape) <= 1
    if not out_direct:
        p.ws.add("out", M, out.dtype)
        scatter = p.strided_copy(out.dtype, out.dtype, ko_shape, p.contiguous_strides(ko_shape), ko_out)
    out_stride = ko_out[0] if ko_shape else 1
    sums = _Sums(p, out.dtype, scale, M, 1)
    body, variant = _plan_rows(p, src.dtype, sums.dtype, M, N)
    regions = p.ws

    def run(o, ins, ws):
        staged = regions.view(ws, "src", (M, N))
        gather(ins[0], staged)
        result = o.as_strided((M, 1), (out_stride, 1)) if out_direct else regions.view(ws, "out", (M, 1))
        body(staged, sums.target(result, ws)[:, 0], ws)
        sums.finish(result, ws)
        if not out_direct:
            scatter(result[:, 0], o)

    return p.done(variant + "+staged", run)


def cuts(out, inputs, params):
    """Pieces cut kept dims: (src dim, out dim) pairs."""
    dims, keepdim = params
    pairs, k = [], 0
    for d in range(inputs[0].dim()):
        if d in dims:
            k += 1 if keepdim else 0
        else:
            pairs.append((d, k))
            k += 1
    return pairs


def split_reduction(out, inputs, params):
    """With no kept dim to cut: the first reduced dim of size > 1 is split
    into float32 partials, which a sum over their leading dim adds into out."""
    dims, _ = params
    src = inputs[0]
    reduced = [d for d in dims if src.shape[d] > 1]
    return (min(reduced), ((0,), False)) if reduced else None
