"""Numba kernels for CarEst: per-cell sums over repetitions of f(max of complement sketches)."""

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _cell_sum(comp_t, rows, sizes, table, cell, r):
    nattr = rows.shape[0]
    rem = cell
    for i in range(nattr - 1, -1, -1):
        r[i] = rows[i] + rem % sizes[i]
        rem = rem // sizes[i]
    acc = 0.0
    for h in range(comp_t.shape[1]):
        s = comp_t[r[0], h]
        for i in range(1, nattr):
            v = comp_t[r[i], h]
            if v > s:
                s = v
        acc += table[s]
    return acc


@njit(cache=True, parallel=True)
def union_table_sums(comp_t, rows, sizes, table):
    """For every cell v of a marginal, sum over repetitions h of table[max_i comp_t[r_i(v), h]].

    comp_t: (R, t) uint8 complement sketches, one row per (attribute, value).
    rows:   (l,) int64, first row of each attribute of the marginal.
    sizes:  (l,) int64, domain size of each attribute (cells in C order, last axis fastest).
    table:  (256,) float64, f(s) for every sketch value s.
    Each thread owns a range of output cells.
    """
    ncell = 1
    for i in range(rows.shape[0]):
        ncell *= sizes[i]
    out = np.empty(ncell, dtype=np.float64)
    for c in prange(ncell):
        r = np.empty(rows.shape[0], dtype=np.int64)
        out[c] = _cell_sum(comp_t, rows, sizes, table, c, r)
    return out
