"""Numba kernels of a party's masked features: the one-hot X - U made in place over the
mask U (the AES-CTR keystream's words), and ring words packed into their low bytes for the
feature blob. Each is one serial pass over the words (the numpy versions took two or three:
a negation, then one scatter per group; a view, a slice and a copy). Unpacking is
:func:`vertimrf.protocol.secure.features.widen` (one masked load a value in numpy)."""

import numpy as np
from numba import njit

_BYTE = np.uint64(0xFF)
_SHIFT = np.arange(0, 64, 8).astype(np.uint64)  # bit shift of byte b


@njit(cache=True)
def onehot_minus(mask, cols):
    """``mask`` (rows x k, C-contiguous, uint32 or uint64) becomes X - U in its ring: each
    word negated, then 1 added at (r, cols[r, j]) for every ``cols[r, j] >= 0`` (int64,
    rows x groups; -1: no column; IndexError for one past the width). Row by row, so a row
    is read and written once."""
    k = mask.shape[1]
    flat = mask.reshape(mask.size)
    zero, one = mask.dtype.type(0), mask.dtype.type(1)
    for r in range(mask.shape[0]):
        base = r * k
        for i in range(base, base + k):
            flat[i] = zero - flat[i]
        for j in range(cols.shape[1]):
            c = cols[r, j]
            if c >= k:  # no write outside the row (numpy's scatter raised too)
                raise IndexError("a one-hot column lies past its row's width")
            if c >= 0:
                flat[base + c] += one


@njit(cache=True)
def pack_low(words, size, out):
    """The low ``size`` bytes (1 to 8) of each of ``words`` (1-D, uint32 or uint64),
    little-endian, into ``out`` (uint8, ``words.size * size`` of them). The first four
    bytes are written unrolled (the loop-invariant tests hoisted out of the loop)."""
    for i in range(words.size):
        w = np.uint64(words[i])
        o = size * i
        out[o] = np.uint8(w & _BYTE)
        if size > 1:
            out[o + 1] = np.uint8((w >> _SHIFT[1]) & _BYTE)
        if size > 2:
            out[o + 2] = np.uint8((w >> _SHIFT[2]) & _BYTE)
        if size > 3:
            out[o + 3] = np.uint8((w >> _SHIFT[3]) & _BYTE)
        for b in range(4, size):
            out[o + b] = np.uint8((w >> _SHIFT[b]) & _BYTE)
