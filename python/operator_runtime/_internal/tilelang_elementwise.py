"""The elementwise layer of the TileLang backend: out[i] = fn(inputs[i]...).

An op is an instance, Unary or Binary, holding its scalar function; the
kernels and the planning below are shared (copy, relu, vector_add, mul).
Kernel files reach this module through operator_runtime.tilelang_authoring.

Kernels (sizes T.dynamic: one compiled kernel per op, dtypes and variant):

  contiguous(op, dtype, out_dtype, vec)   out[i] = fn(...) over a flat length;
                                          vec = 16-byte vectors (vec=1:
                                          pointers not 16-byte aligned)
  row_bias(op, dtype, vec, bias_first)    Binary: out[m, n] = fn(a[m, n], b[n])
                                          (b broadcast over rows; bias_first:
                                          fn(b[n], a[m, n])); vec > 1 needs
                                          N % vec == 0 and aligned pointers,
                                          vec=1 walks columns with coalesced
                                          scalar accesses
  transpose(op, src_dtype, dst_dtype, pair)
                                          Unary: dst[b, i, j] = fn(src[b, j, i]),
                                          both sides dense, the inner two dims
                                          swapped; 64x64 tiles (32x32 when
                                          pair = 1: odd sizes or misaligned
                                          pointers) through shared memory, so
                                          reads and writes are both coalesced
  strided(op, src_dtype, dst_dtype, ndim) Unary over any strides on both sides
                                          (broadcast stride 0 included), ndim 4
                                          or 8 after padding; with COPY it is
                                          also the staging kernel every op uses
                                          to gather operands into, and scatter
                                          results out of, the workspace

Values are converted to `op.compute` (when given) before fn, and fn's result
is rounded once into out's dtype. Where out may be an input itself, every
element is read before its own write by the same thread, and the buffers are
declared non-restrict; copy, whose in-place call does nothing, keeps them
restrict.
"""

# No `from __future__ import annotations`: TileLang evaluates the prim_funcs'
# annotations, which name the factories' local variables (dtypes, sizes).

import itertools

import tilelang.language as T

from .tilelang_device import DTYPES, F32, MAX_GRID_Y, vector_width

THREADS = 256


def identity(x):
    return x


class Elementwise:
    """What the kernels need to know of one elementwise op.

    fn: the scalar function, on TileLang expressions of dtype `compute` (or
    of the loaded dtype where compute is None); `name`: the op, which also
    names the kernels (<name>_contiguous, ...). selects: fn picks between
    values (T.Select); TileLang does not vectorize a pick over global loads,
    so the contiguous kernel then loads the thread's 16-byte vectors into
    registers first (row_bias does not: no binary op selects yet)."""

    arity = 0

    def __init__(self, name: str, fn, compute: str | None = None, selects: bool = False):
        self.name = name
        self.fn = fn
        self.compute = compute
        self.selects = selects

    def value(self, loads, out_dtype: str):
        """fn of the loaded values, rounded once into out_dtype."""
        if self.compute is not None:
            loads = [x if x.dtype == self.compute else T.cast(x, self.compute) for x in loads]
        return T.cast(self.fn(*loads), out_dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class Unary(Elementwise):
    """out = fn(src). converts: out may have another dtype than src (every
    dtype pair is compiled); in_place_noop: a call whose out is src itself
    does nothing (an identity), so no kernel ever sees aliased buffers."""

    arity = 1

    def __init__(self, name: str, fn, compute: str | None = None, selects: bool = False, converts: bool = False,
                 in_place_noop: bool = False):
        super().__init__(name, fn, compute, selects)
        self.converts = converts
        self.in_place_noop = in_place_noop

    def dtype_pairs(self):
        if self.converts:
            return list(itertools.product(DTYPES, DTYPES))
        return [(d, d) for d in DTYPES]

    def plan(self, p, out, inputs, params):
        return plan_unary(self, p, out, inputs[0])

    def variants(self):
        """Every kernel of this op, as (name, factory, args): CI compiles them all."""
        out = []
        for s, d in self.dtype_pairs():
            out.append((f"contiguous_{s}_{d}_v", contiguous, (self, s, d, vector_width(s, d))))
            out.append((f"contiguous_{s}_{d}_1", contiguous, (self, s, d, 1)))
            out.append((f"transpose_{s}_{d}_2", transpose, (self, s, d, 2)))
            out.append((f"transpose_{s}_{d}_1", transpose, (self, s, d, 1)))
            out.append((f"strided4_{s}_{d}", strided, (self, s, d, 4)))
            out.append((f"strided8_{s}_{d}", strided, (self, s, d, 8)))
        return out


class Binary(Elementwise):
    """out = fn(a, b), one dtype for a, b and out. commutative: a row-bias
    call with the bias first swaps the operands instead of compiling the
    bias-first kernel."""

    arity = 2

    def __init__(self, name: str, fn, compute: str | None = F32, selects: bool = False, commutative: bool = False):
        super().__init__(name, fn, compute, selects)
        self.commutative = commutative
        self.in_place_noop = False

    def plan(self, p, out, inputs, params):
        return plan_binary(self, p, out, *inputs)

    def variants(self):
        out = []
        for d in DTYPES:
            out.append((f"contiguous_{d}_v", contiguous, (self, d, d, vector_width(d))))
            out.append((f"contiguous_{d}_1", contiguous, (self, d, d, 1)))
            for first in (False,) if self.commutative else (False, True):
                suffix = "_bias_first" if first else ""
                out.append((f"row_bias_{d}_v{suffix}", row_bias, (self, d, vector_width(d), first)))
                out.append((f"row_bias_{d}_1{suffix}", row_bias, (self, d, 1, first)))
        return out


# The copy every op stages operands with (and the copy op itself).
COPY = Unary("copy", identity, converts=True, in_place_noop=True)


def _named(prim_func, op: Elementwise, kind: str):
    return prim_func.with_attr("global_symbol", f"{op.name}_{kind}")


# -- kernels ----------------------------------------------------------------------------------

def contiguous(op: Elementwise, dtype: str, out_dtype: str, vec: int, unroll: int = 4):
    threads = THREADS
    tile = threads * vec * unroll
    N = T.dynamic("N")

    @T.macro
    def through_registers(ins, out, base, tx):
        """A full tile: every input vector of the thread loaded into registers
        before the first store (out may alias an input, so nvcc would not
        move a load above a store), then computed and stored."""
        regs = T.alloc_local((unroll, len(ins), vec), dtype)
        res = T.alloc_local((vec,), out_dtype)
        for u in T.unroll(unroll):
            for v in T.vectorized(vec):
                regs[u, 0, v] = ins[0][base + (u * threads + tx) * vec + v]
            if len(ins) == 2:
                for v in T.vectorized(vec):
                    regs[u, 1, v] = ins[1][base + (u * threads + tx) * vec + v]
        for u in T.unroll(unroll):
            for v in T.unroll(vec):
                res[v] = op.value([regs[u, k, v] for k in range(len(ins))], out_dtype)
            for v in T.vectorized(vec):
                out[base + (u * threads + tx) * vec + v] = res[v]

    @T.macro
    def flat(ins, out, bx):
        tx = T.get_thread_binding()
        base = bx * tile
        if base + tile <= N:
            if op.selects:
                through_registers(ins, out, base, tx)
            else:
                for u in T.unroll(unroll):
                    for v in T.vectorized(vec):
                        out[base + (u * threads + tx) * vec + v] = op.value(
                            [x[base + (u * threads + tx) * vec + v] for x in ins], out_dtype)
        else:
            for u in T.unroll(unroll):
                for v in T.serial(vec):
                    if base + (u * threads + tx) * vec + v < N:
                        out[base + (u * threads + tx) * vec + v] = op.value(
                            [x[base + (u * threads + tx) * vec + v] for x in ins], out_dtype)

    if op.arity == 1:
        @T.prim_func
        def unary_contiguous(src: T.Tensor((N,), dtype), dst: T.Tensor((N,), out_dtype)):
            with T.Kernel(T.ceildiv(N, tile), threads=threads) as bx:
                if not op.in_place_noop:
                    T.annotate_restrict_buffers(src, dst)
                flat((src,), dst, bx)

        return _named(unary_contiguous, op, "contiguous")

    @T.prim_func
    def binary_contiguous(a: T.Tensor((N,), dtype), b: T.Tensor((N,), dtype), out: T.Tensor((N,), out_dtype)):
        with T.Kernel(T.ceildiv(N, tile), threads=threads) as bx:
            T.annotate_restrict_buffers(a, b, out)
            flat((a, b), out, bx)

    return _named(binary_contiguous, op, "contiguous")


def row_bias(op: Binary, dtype: str, vec: int, bias_first: bool = False, rows_per_block: int = 4):
    threads = THREADS
    cols = threads * vec if vec > 1 else threads * 8  # columns one block covers
    M, N = T.dynamic("M N")

    def value(x, bias):
        return op.value([bias, x] if bias_first else [x, bias], dtype)

    @T.prim_func
    def binary_row_bias(a: T.Tensor((M, N), dtype), b: T.Tensor((N,), dtype), out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, rows_per_block), T.ceildiv(N, cols), threads=threads) as (by, bx):
            T.annotate_restrict_buffers(a, b, out)
            tx = T.get_thread_binding()
            if vec > 1:
                T.assume(N % vec == 0)
                if (bx + 1) * cols <= N:
                    for r in T.unroll(rows_per_block):
                        if by * rows_per_block + r < M:
                            for v in T.vectorized(vec):
                                out[by * rows_per_block + r, bx * cols + tx * vec + v] = value(
                                    a[by * rows_per_block + r, bx * cols + tx * vec + v], b[bx * cols + tx * vec + v])
                else:
                    for r in T.unroll(rows_per_block):
                        if by * rows_per_block + r < M:
                            for v in T.serial(vec):
                                if bx * cols + tx * vec + v < N:
                                    out[by * rows_per_block + r, bx * cols + tx * vec + v] = value(
                                        a[by * rows_per_block + r, bx * cols + tx * vec + v],
                                        b[bx * cols + tx * vec + v])
            else:
                for r in T.unroll(rows_per_block):
                    if by * rows_per_block + r < M:
                        for k in T.unroll(8):
                            if bx * cols + k * threads + tx < N:
                                out[by * rows_per_block + r, bx * cols + k * threads + tx] = value(
                                    a[by * rows_per_block + r, bx * cols + k * threads + tx],
                                    b[bx * cols + k * threads + tx])

    return _named(binary_row_bias, op, "row_bias")


def transpose(op: Unary, src_dtype: str, dst_dtype: str, pair: int = 1):
    """Tiles of 32 * pair square through shared memory (float32: fn sees
    float32 values); a lane moves `pair` consecutive elements per row (pair
    = 2: 4- or 8-byte accesses, which needs R and C even and pointers
    aligned to two elements), 8 warps on interleaved rows: 4 * pair loads in
    flight per thread. out never aliases src here (a transposed layout)."""
    tile = 32 * pair
    warps = THREADS // 32
    B, R, C = T.dynamic("B R C")

    @T.prim_func
    def unary_transpose(src: T.Tensor((B, C, R), src_dtype), dst: T.Tensor((B, R, C), dst_dtype)):
        with T.Kernel(T.ceildiv(C, tile), T.ceildiv(R, tile), B, threads=THREADS) as (bj, bi, b):
            tx = T.get_thread_binding()
            lane = tx % 32
            w = tx // 32
            buf = T.alloc_shared((tile, tile + 1), "float32")
            val = T.alloc_local((tile // warps, pair), src_dtype)
            res = T.alloc_local((pair,), dst_dtype)
            if pair > 1:
                T.assume(R % pair == 0)
                T.assume(C % pair == 0)
            # read: consecutive lanes walk src's contiguous dim (i); every load first
            for k in T.unroll(tile // warps):
                if bj * tile + w + k * warps < C and bi * tile + lane * pair < R:
                    for v in T.vectorized(pair):
                        val[k, v] = src[b, bj * tile + w + k * warps, bi * tile + lane * pair + v]
            for k in T.unroll(tile // warps):
                for v in T.unroll(pair):
                    buf[w + k * warps, lane * pair + v] = T.cast(val[k, v], "float32")
            T.sync_threads()
            # write: consecutive lanes walk dst's contiguous dim (j)
            for k in T.unroll(tile // warps):
                if bi * tile + w + k * warps < R and bj * tile + lane * pair < C:
                    for v in T.unroll(pair):
                        res[v] = op.value([buf[lane * pair + v, w + k * warps]], dst_dtype)
                    for v in T.vectorized(pair):
                        dst[b, bi * tile + w + k * warps, bj * tile + lane * pair + v] = res[v]

    return _named(unary_transpose, op, "transpose")


def unravel(linear, shape):
    """The multi-index of a row-major linear index (built at trace time)."""
    idx = []
    rest = linear
    for k in range(len(shape) - 1, 0, -1):
        idx.append(T.truncmod(rest, shape[k]))
        rest = T.truncdiv(rest, shape[k])
    idx.append(rest)
    return tuple(idx[::-1])


def strided(op: Unary, src_dtype: str, dst_dtype: str, ndim: int = 8, per_thread: int = 4):
    """dst[idx] = fn(src[idx]) for every multi-index of the (padded) shape; any strides."""
    shape = T.dynamic(" ".join(f"d{k}" for k in range(ndim)))
    src_strides = T.dynamic(" ".join(f"s{k}" for k in range(ndim)), "int64")
    dst_strides = T.dynamic(" ".join(f"t{k}" for k in range(ndim)), "int64")
    threads = THREADS
    chunk = threads * per_thread
    total = shape[0]
    for k in range(1, ndim):
        total = total * shape[k]

    @T.prim_func
    def unary_strided(src: T.StridedTensor(shape, src_strides, src_dtype),
                      dst: T.StridedTensor(shape, dst_strides, dst_dtype)):
        with T.Kernel(T.ceildiv(total, chunk), threads=threads) as bx:
            if not op.in_place_noop:
                T.annotate_restrict_buffers(src, dst)
            tx = T.get_thread_binding()
            for u in T.unroll(per_thread):
                if bx * chunk + u * threads + tx < total:
                    idx = unravel(bx * chunk + u * threads + tx, shape)
                    dst[idx] = op.value([src[idx]], dst_dtype)

    return _named(unary_strided, op, "strided")


# -- planning ---------------------------------------------------------------------------------

def strided_step(p, op: Unary, src_dtype, dst_dtype, shape, src_strides, dst_strides):
    """A step body (src_tensor, dst_tensor) applying op over `shape` from src
    to dst, with the given element strides from each tensor's first element."""
    shape, (dst_strides, src_strides) = p.coalesce(list(shape), [list(dst_strides), list(src_strides)])
    ndim = 4 if len(shape) <= 4 else 8
    pad = ndim - len(shape)
    shape = (1,) * pad + tuple(shape)
    src_strides = (0,) * pad + tuple(src_strides)
    dst_strides = (0,) * pad + tuple(dst_strides)
    kernel = p.kernel(strided, (op, p.dtype_name(src_dtype), p.dtype_name(dst_dtype), ndim))

    def run(src, dst):
        kernel(src.as_strided(shape, src_strides), dst.as_strided(shape, dst_strides))

    return run


def plan_unary(op: Unary, p, out, src):
    if out.numel() == 0:
        return p.done("empty")
    shape, (os_, ss) = p.coalesce(list(out.shape), [list(out.stride()), list(src.stride())])
    names = (p.dtype_name(src.dtype), p.dtype_name(out.dtype))
    noop = op.in_place_noop and src.dtype == out.dtype and src.stride() == out.stride()

    def skip_in_place(src_t, out_t):
        return noop and src_t.data_ptr() == out_t.data_ptr()

    if len(shape) == 0 or (len(shape) == 1 and os_[0] == 1 and ss[0] == 1):
        n = out.numel()
        vec = vector_width(*names)
        pick = p.launcher(contiguous, (op, *names, vec), (op, *names, 1))

        def run(o, ins, ws):
            s = ins[0]
            if not skip_in_place(s, o):
                pick(p.aligned(s, o))(s.as_strided((n,), (1,)), o.as_strided((n,), (1,)))

        return p.done("contiguous", run)

    if len(shape) in (2, 3):
        B = shape[0] if len(shape) == 3 else 1
        R, C = shape[-2], shape[-1]
        dense_out = os_[-2:] == [C, 1] and (len(shape) == 2 or os_[0] == R * C)
        dense_src_t = ss[-2:] == [1, R] and (len(shape) == 2 or ss[0] == R * C)
        if dense_out and dense_src_t and -(-R // 32) <= MAX_GRID_Y and B <= MAX_GRID_Y:
            pairs = R % 2 == 0 and C % 2 == 0
            pick = p.launcher(transpose, (op, *names, 2 if pairs else 1), (op, *names, 1))

            def run(o, ins, ws):
                s = ins[0]
                aligned = s.data_ptr() % (2 * s.element_size()) == 0 and o.data_ptr() % (2 * o.element_size()) == 0
                pick(aligned)(s.as_strided((B, C, R), (R * C, R, 1)), o.as_strided((B, R, C), (R * C, C, 1)))

            return p.done("transpose", run)

    body = strided_step(p, op, src.dtype, out.dtype, out.shape, src.stride(), out.stride())

    def run(o, ins, ws):
        if not skip_in_place(ins[0], o):
            body(ins[0], o)

    return p.done("strided", run)


def plan_binary(op: Binary, p, out, a, b):
    if out.numel() == 0:
        return p.done("empty")
    dt = p.dtype_name(out.dtype)
    vec = vector_width(dt)
    shape, (os_, as_, bs) = p.coalesce(list(out.shape), [list(out.stride()), list(a.stride()), list(b.stride())])
    n = out.numel()

    if len(shape) == 0 or (len(shape) == 1 and os_[0] == as_[0] == bs[0] == 1):
        pick = p.launcher(contiguous, (op, dt, dt, vec), (op, dt, dt, 1))

        def run(o, ins, ws):
            x, y = ins
            pick(p.aligned(x, y, o))(x.as_strided((n,), (1,)), y.as_strided((n,), (1,)), o.as_strided((n,), (1,)))

        return p.done("contiguous", run)

    if len(shape) == 2 and os_ == [shape[1], 1]:
        M, N = shape
        full, bias = [N, 1], [0, 1]
        swap = None  # whether the row operand is a (then passed second)
        if as_ == full and bs == bias:
            swap = False
        elif bs == full and as_ == bias:
            swap = True
        if swap is not None and -(-N // (256 * 8)) <= MAX_GRID_Y:
            first = swap and not op.commutative
            scalar = (op, dt, 1, first)
            pick = p.launcher(row_bias, (op, dt, vec, first) if N % vec == 0 else scalar, scalar)

            def run(o, ins, ws):
                x, y = ins
                if swap:
                    x, y = y, x
                pick(p.aligned(x, y, o))(x.as_strided((M, N), (N, 1)), y.as_strided((N,), (1,)),
                                         o.as_strided((M, N), (N, 1)))

            return p.done("row_bias", run)

    # staged: gather each operand not dense in out's order into the workspace,
    # compute flat, scatter into out when out itself is not dense.
    dense = p.contiguous_strides(shape)
    gathers = []
    for index, strides in ((0, as_), (1, bs)):
        if strides != dense:
            name = f"in{index}"
            p.ws.add(name, n, out.dtype)
            gathers.append((index, name, p.strided_copy(out.dtype, out.dtype, shape, strides, dense)))
    out_dense = os_ == dense
    if not out_dense:
        p.ws.add("out", n, out.dtype)
        scatter = p.strided_copy(out.dtype, out.dtype, shape, dense, os_)
    pick = p.launcher(contiguous, (op, dt, dt, vec), (op, dt, dt, 1))
    regions = p.ws

    def run(o, ins, ws):
        operands = list(ins)
        for index, name, gather in gathers:
            staged = regions.view(ws, name, (n,))
            gather(ins[index], staged)
            operands[index] = staged
        target = o if out_dense else regions.view(ws, "out", (n,))
        x, y = operands
        x, y, t = x.as_strided((n,), (1,)), y.as_strided((n,), (1,)), target.as_strided((n,), (1,))
        pick(p.aligned(x, y, t))(x, y, t)
        if not out_dense:
            scatter(target, o)

    return p.done("contiguous+staged", run)
