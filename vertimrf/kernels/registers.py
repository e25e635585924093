"""Min-hash registers of LocEnc and their geometric values (Numba
kernels); design notes in docs/design/kernels.md."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core.extending import intrinsic

from vertimrf.kernels.hashing import siphash24_lanes, xxh64_u64

KEY_BLOCK = 64
EMPTY_REGISTER = np.uint64(0xFFFFFFFFFFFFFFFF)
_EMPTY_HIGH = np.uint32(0xFFFFFFFF)
_SHIFT_HIGH = np.uint64(32)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)


@njit(cache=True)
def _hash_block_siphash(k0b, k1b, m, h, high):
    siphash24_lanes(k0b, k1b, m, h)
    for lane in range(h.size):
        high[lane] = np.uint32(h[lane] >> _SHIFT_HIGH)


@njit(cache=True)
def _hash_block_xxh64(k0b, m, h, high):
    for lane in range(h.size):
        v = xxh64_u64(k0b[lane], m)
        h[lane] = v
        high[lane] = np.uint32(v >> _SHIFT_HIGH)


@njit(inline="always", cache=True)
def _update_slot(full, top, s, h, high, opaque_zero):
    """``full[s] = min(full[s], h)`` lane-wise, with ``top`` the high halves of ``full``."""
    maybe = False
    for lane in range(h.size):
        m = min(top[s, lane], high[lane])
        top[s, lane] = m
        maybe |= m == high[lane]
    if maybe:
        # ``opaque_zero`` is 0 but unknown to LLVM: without it, "store(select(c, new, load p), p)"
        # is turned into a masked store (vpmaskmovq), which is several times slower on AMD.
        for lane in range(h.size):
            cur = full[s, lane] ^ opaque_zero
            new = h[lane]
            full[s, lane] = new if new < cur else cur


@njit(cache=True)
def _hash_key_block(codes, offsets, k0, k1, fingerprints, lo, use_siphash, opaque_zero, out):
    """Registers of keys ``lo .. lo + KEY_BLOCK - 1`` (fewer at the end), written to ``out``."""
    t, n_slots = out.shape
    n, d = codes.shape
    width = min(t, lo + KEY_BLOCK) - lo
    k0b = np.zeros(KEY_BLOCK, np.uint64)
    k1b = np.zeros(KEY_BLOCK, np.uint64)
    for lane in range(width):
        k0b[lane] = k0[lo + lane]
        k1b[lane] = k1[lo + lane]
    full = np.empty((n_slots, KEY_BLOCK), np.uint64)
    top = np.empty((n_slots, KEY_BLOCK), np.uint32)
    for s in range(n_slots):
        for lane in range(KEY_BLOCK):
            full[s, lane] = EMPTY_REGISTER
            top[s, lane] = _EMPTY_HIGH
    h = np.empty(KEY_BLOCK, np.uint64)
    high = np.empty(KEY_BLOCK, np.uint32)
    for r in range(n):
        m = fingerprints[r]
        if use_siphash:
            _hash_block_siphash(k0b, k1b, m, h, high)
        else:
            _hash_block_xxh64(k0b, m, h, high)
        for j in range(d):
            _update_slot(full, top, offsets[j] + np.int64(codes[r, j]), h, high, opaque_zero)
    for lane in range(width):
        for s in range(n_slots):
            out[lo + lane, s] = full[s, lane]


@njit(parallel=True, cache=True)
def hash_registers(codes, offsets, k0, k1, fingerprints, n_slots, use_siphash, opaque_zero):
    """Registers ``(t, n_slots)`` uint64 of the rows ``codes`` (n, d) uint8/uint16.

    ``offsets`` (d,) int64 is the first slot of each attribute; ``k0``/``k1`` (t,) uint64 the
    keys (xxh64 uses ``k0`` as its seed); ``fingerprints`` (n,) uint64 the record IDs.
    ``opaque_zero`` must be ``np.uint64(0)`` (see :func:`_update_slot`). Inputs are trusted:
    the Python layer validates shapes, dtypes and code ranges. Blocks are equal work, so call
    it under ``numba.parallel_chunksize(1)`` for dynamic scheduling on a busy machine.
    """
    t = k0.size
    out = np.empty((t, n_slots), np.uint64)
    for b in prange((t + KEY_BLOCK - 1) // KEY_BLOCK):
        _hash_key_block(
            codes, offsets, k0, k1, fingerprints, b * KEY_BLOCK, use_siphash, opaque_zero, out
        )
    return out


@intrinsic
def _leading_zeros(typingctx, x):
    """Count of leading zero bits of a uint64 (64 for 0), via ``llvm.ctlz``."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.uint64(types.uint64), codegen


@njit(parallel=True, cache=True)
def geometric_clz(registers):
    """Geometric values for gamma = 1: ``clz(h) + 1``, and 0 for an empty register."""
    t, u = registers.shape
    out = np.empty((t, u), np.uint8)
    for i in prange(t):
        for s in range(u):
            v = registers[i, s]
            if v == EMPTY_REGISTER:
                out[i, s] = 0
            else:
                out[i, s] = _leading_zeros(v) + _ONE
    return out


@njit(parallel=True, cache=True)
def geometric_table(registers, thresholds):
    """Geometric values from a descending threshold table (binary search, no logs).

    ``thresholds[i]`` is the integer bound with ``G >= i + 2  <=>  h < thresholds[i]`` and the
    last entry is >= 2. An empty register gives 0, ``h = 0`` gives ``len(thresholds) + 2``.
    """
    t, u = registers.shape
    n_thr = thresholds.size
    out = np.empty((t, u), np.uint8)
    for i in prange(t):
        for s in range(u):
            v = registers[i, s]
            if v == EMPTY_REGISTER:
                out[i, s] = 0
            elif v == _ZERO:
                out[i, s] = n_thr + 2
            else:
                lo = 0
                hi = n_thr
                while lo < hi:
                    mid = (lo + hi) // 2
                    if thresholds[mid] > v:
                        lo = mid + 1
                    else:
                        hi = mid
                out[i, s] = lo + 1
    return out
