"""Numba kernels for the local products of a dealer-assisted secure matrix
product; design notes in docs/design/kernels.md."""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

ROW_TILE = 4  # output rows of a.T @ b updated together: each loaded row of b serves four
COL_UNIT = 8  # the scatter cuts the ka axis at multiples of 8 (64-byte lines of a)
CACHE_WORDS = 32768  # 256 KiB of uint64: the size of one streamed block of b
MIN_ROWS = 16  # bounds on the records per streamed block
MAX_ROWS = 1024
PREFETCH_ROWS = 16  # the scatter asks for the record this many rows ahead


@intrinsic
def _num_threads(typingctx):
    """Numba's current thread count, declared as Numba's parfor lowering declares the
    threading layer's ``get_num_threads`` (both calls may share one module)."""

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(cgutils.intp_t, [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "get_num_threads")
        return builder.call(fn, [])

    return types.intp(), codegen


@intrinsic
def _prefetch(typingctx, flat, idx):
    """Ask the CPU to start loading the cache line of ``flat[idx]`` (a read, kept in cache)."""

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty)
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(flat, types.intp), codegen


@njit(cache=True)
def _split(k, unit, nthreads):
    """Bounds of at most ``nthreads`` near-equal blocks of range(k), cut at multiples of
    ``unit`` (one block when k is 0)."""
    units = (k + unit - 1) // unit
    nblk = max(1, min(nthreads, units))
    bounds = np.empty(nblk + 1, np.int64)
    for t in range(nblk + 1):
        bounds[t] = min(k, ((t * units) // nblk) * unit)
    return bounds


@njit(cache=True)
def _matmul_rows(a, b, i0, i1, out):
    """out[i0:i1] = a[:, i0:i1].T @ b (mod 2^64), accumulated in a private buffer.

    Records are streamed in blocks of about CACHE_WORDS words of ``b``; within a block, each
    tile of ROW_TILE output rows adds ``a[r, i] * b[r, :]`` for every record ``r``.
    """
    n = a.shape[0]
    kb = b.shape[1]
    w = i1 - i0
    acc = np.zeros((w, kb), np.uint64)
    step = max(MIN_ROWS, min(MAX_ROWS, CACHE_WORDS // max(kb, 1)))
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        i = 0
        while i + ROW_TILE <= w:
            for r in range(r0, r1):
                s0 = a[r, i0 + i]
                s1 = a[r, i0 + i + 1]
                s2 = a[r, i0 + i + 2]
                s3 = a[r, i0 + i + 3]
                for j in range(kb):
                    v = b[r, j]
                    acc[i, j] += s0 * v
                    acc[i + 1, j] += s1 * v
                    acc[i + 2, j] += s2 * v
                    acc[i + 3, j] += s3 * v
            i += ROW_TILE
        while i < w:
            for r in range(r0, r1):
                s0 = a[r, i0 + i]
                for j in range(kb):
                    acc[i, j] += s0 * b[r, j]
            i += 1
    for i in range(w):
        for j in range(kb):
            out[i0 + i, j] = acc[i, j]


@njit(cache=True, parallel=True)
def matmul_tn_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a.T @ b`` modulo 2^64 (uint64) for C-contiguous ``a`` (n, ka) and ``b`` (n, kb) of
    uint64 or uint32 words.

    One party's (ka, kb) share product; each thread computes its own block of output rows.
    """
    out = np.empty((a.shape[1], b.shape[1]), np.uint64)
    bounds = _split(a.shape[1], ROW_TILE, _num_threads())  # type: ignore[call-arg]  # intrinsic
    for t in prange(bounds.shape[0] - 1):
        _matmul_rows(a, b, bounds[t], bounds[t + 1], out)
    return out


@njit(cache=True)
def _scatter_rows(a, cols, i0, i1, out):
    """out[i0:i1, c] = sum of a[r, i0:i1] over the (r, j) with cols[r, j] == c (mod 2^64).

    The block is accumulated transposed, one contiguous row per output column, so adding a
    record is a contiguous vector add; -1 entries add into a spare last row instead of
    branching. Records are read once, in order, each slice of ``a`` prefetched PREFETCH_ROWS
    records ahead: the hardware prefetcher alone leaves the adds waiting on memory.
    """
    n = a.shape[0]
    ka = a.shape[1]
    g = cols.shape[1]
    kb = out.shape[1]
    w = i1 - i0
    flat = a.reshape(n * ka)
    acc_t = np.zeros((kb + 1, w), np.uint64)
    for r in range(n):
        if r + PREFETCH_ROWS < n:
            ahead = (r + PREFETCH_ROWS) * ka + i0
            for q in range(0, w, 8):
                _prefetch(flat, ahead + q)
        ar = a[r, i0:i1]
        for j in range(g):
            c = cols[r, j]
            c = c if c >= 0 else kb
            for i in range(w):
                acc_t[c, i] += ar[i]
    for i in range(w):
        for c in range(kb):
            out[i0 + i, c] = acc_t[c, i]


@njit(cache=True, parallel=True)
def onehot_scatter_u64(a: np.ndarray, cols: np.ndarray, kb: int) -> np.ndarray:
    """``a.T @ Y`` modulo 2^64 (uint64) for C-contiguous ``a`` (n, ka) of uint64 or uint32
    words and the one-hot (n, kb) matrix ``Y`` with ones at (r, cols[r, j]) for each
    ``cols[r, j] >= 0`` of the int64 (n, g) ``cols`` (-1: no column, e.g. a padding row; a
    repeated column counts twice).

    Adds each row of ``a`` into its active output columns: no multiplications and no
    materialised ``Y``. Each thread computes its own block of output rows.
    """
    out = np.empty((a.shape[1], kb), np.uint64)
    bounds = _split(a.shape[1], COL_UNIT, _num_threads())  # type: ignore[call-arg]  # intrinsic
    for t in prange(bounds.shape[0] - 1):
        _scatter_rows(a, cols, bounds[t], bounds[t + 1], out)
    return out


@njit(cache=True, parallel=True)
def row_dots_u64(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's inner product of ``x`` and ``y`` (2-D, the same shape; any unsigned words,
    e.g. ring words against 0/1 bytes), as uint64 mod 2^64; rows in parallel, each its own
    output word."""
    rows, width = x.shape
    out = np.zeros(rows, np.uint64)
    for i in prange(rows):
        total = np.uint64(0)
        for j in range(width):
            total += np.uint64(x[i, j]) * np.uint64(y[i, j])
        out[i] = total
    return out
