"""Numba kernel merging sorted token lists in one linear pass;
design notes in docs/design/kernels.md."""

import numpy as np
from numba import njit


@njit(cache=True)
def merge_sorted(tokens, offsets, out, region):
    """Distinct tokens of the flat sorted lists, in order, into ``out`` (uint64) and each
    one's list mask into ``region`` (int64); returns their count."""
    m = offsets.size - 1
    pos = offsets[:m].copy()
    k = 0
    while True:
        best = np.uint64(0)
        found = False
        for i in range(m):
            if pos[i] < offsets[i + 1]:
                t = tokens[pos[i]]
                if not found or t < best:
                    best = t
                    found = True
        if not found:
            return k
        bits = 0
        for i in range(m):
            if pos[i] < offsets[i + 1] and tokens[pos[i]] == best:
                bits |= 1 << i
                pos[i] += 1
        out[k] = best
        region[k] = bits
        k += 1
