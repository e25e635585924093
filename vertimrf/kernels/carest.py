"""Numba kernels for CarEst: per-cell statistics of the max of complement sketches.

A marginal over attributes with first rows ``rows`` (l,) and sizes ``sizes`` (l,) has
prod(sizes) cells in C order (last axis fastest). For cell v, repetition h, the union sketch
is ``max_i comp_t[rows[i] + v_i, h]`` over the (R, t) uint8 complement sketches ``comp_t``.
In the threaded kernel each thread owns a range of output cells and a private (t,) buffer.
"""

import numpy as np
from numba import njit, prange, types
from numba.core.extending import intrinsic


@njit(cache=True)
def _n_cells(sizes):
    ncell = 1
    for i in range(sizes.shape[0]):
        ncell *= sizes[i]
    return ncell


@njit(cache=True)
def _cell_index(starts, sizes, cell, r):
    """Row of each attribute's value in ``cell``: r[i] = starts[i] + v_i."""
    rem = cell
    for i in range(starts.shape[0] - 1, -1, -1):
        r[i] = starts[i] + rem % sizes[i]
        rem = rem // sizes[i]


@njit(cache=True)
def _cell_union(comp_t, rows, sizes, cell, buf):
    """Fill ``buf`` (t,) with the union sketch of ``cell`` (contiguous, vectorisable maxima)."""
    r = np.empty(rows.shape[0], dtype=np.int64)
    _cell_index(rows, sizes, cell, r)
    buf[:] = comp_t[r[0]]
    for i in range(1, r.shape[0]):
        src = comp_t[r[i]]
        for h in range(buf.shape[0]):
            buf[h] = max(buf[h], src[h])


@njit(cache=True, parallel=True)
def union_table_sums(comp_t, rows, sizes, table):
    """Per cell, the sum over repetitions of ``table[union sketch]`` (table: (256,) float64)."""
    ncell = _n_cells(sizes)
    out = np.empty(ncell, dtype=np.float64)
    for c in prange(ncell):
        buf = np.empty(comp_t.shape[1], dtype=np.uint8)
        _cell_union(comp_t, rows, sizes, c, buf)
        acc = 0.0
        for h in range(buf.shape[0]):
            acc += table[buf[h]]
        out[c] = acc
    return out


@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of a uint64, via ``llvm.ctpop``."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@njit(cache=True)
def _below_full_bits(comp_t, rows, sizes, full):
    """Bitsets ``bits[row, w]``: bit j of word w is set iff comp_t[row, 64w + j] < full[64w + j],
    for every row of the marginal's attributes (compact: one row per attribute value)."""
    t = comp_t.shape[1]
    n_words = (t + 63) // 64
    total = 0
    for i in range(rows.shape[0]):
        total += sizes[i]
    bits = np.empty((total, n_words), dtype=np.uint64)
    k = 0
    for i in range(rows.shape[0]):
        for v in range(sizes[i]):
            src = comp_t[rows[i] + v]
            for w in range(n_words):
                base = w * 64
                word = np.uint64(0)
                for j in range(min(64, t - base)):
                    word |= np.uint64(src[base + j] < full[base + j]) << np.uint64(j)
                bits[k, w] = word
            k += 1
    return bits


@njit(cache=True)
def union_exceed_counts(comp_t, rows, sizes, full):
    """Per cell, the number of repetitions h with ``full[h] > union sketch`` (full: (t,) uint8,
    the sketch of all records).

    full[h] beats the union exactly when it beats every complement sketch of the cell, so the
    count is the popcount of the AND of per-(attribute, value) bitsets: O((sum u) t) to build
    the bitsets plus O(prod u * t / 64) for the cells. That is little enough work (about 0.1 ms
    for a 41 x 16 marginal at t = 2000) that threading it would cost more than it saves.
    """
    bits = _below_full_bits(comp_t, rows, sizes, full)
    nattr = rows.shape[0]
    starts = np.zeros(nattr, dtype=np.int64)
    for i in range(1, nattr):
        starts[i] = starts[i - 1] + sizes[i - 1]
    ncell = _n_cells(sizes)
    n_words = bits.shape[1]
    out = np.empty(ncell, dtype=np.int64)
    r = np.empty(nattr, dtype=np.int64)
    for c in range(ncell):
        _cell_index(starts, sizes, c, r)
        count = np.uint64(0)
        for w in range(n_words):
            word = bits[r[0], w]
            for i in range(1, nattr):
                word &= bits[r[i], w]
            count += _popcount(word)
        out[c] = np.int64(count)
    return out
