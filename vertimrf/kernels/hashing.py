"""Keyed 64-bit hashes of one uint64 message (taken as 8 little-endian bytes).

* :func:`siphash24_u64` is SipHash-2-4 with a 128-bit key ``(k0, k1)`` (the key bytes are
  ``k0`` then ``k1``, each little-endian), the keyed PRF the sketches use by default.
* :func:`xxh64_u64` is xxHash64 with a 64-bit seed: fast, but not a PRF.

Both are written from the published algorithm descriptions and are bit-exact against the
``siphash24`` and ``xxhash`` Python packages (the integer digest read little-endian).
All constants are ``np.uint64`` so no arithmetic silently leaves uint64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_SIP_C0 = np.uint64(0x736F6D6570736575)  # "somepseu"
_SIP_C1 = np.uint64(0x646F72616E646F6D)  # "dorandom"
_SIP_C2 = np.uint64(0x6C7967656E657261)  # "lygenera"
_SIP_C3 = np.uint64(0x7465646279746573)  # "tedbytes"
_SIP_LEN8 = np.uint64(8 << 56)  # last block of an 8-byte message: length byte only
_SIP_FIN = np.uint64(0xFF)

_XXH_P1 = np.uint64(0x9E3779B185EBCA87)
_XXH_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_XXH_P3 = np.uint64(0x165667B19E3779F9)
_XXH_P4 = np.uint64(0x85EBCA77C2B2AE63)
_XXH_P5 = np.uint64(0x27D4EB2F165667C5)
_XXH_LEN8 = np.uint64(8)

_R13, _R51 = np.uint64(13), np.uint64(51)
_R16, _R48 = np.uint64(16), np.uint64(48)
_R17, _R47 = np.uint64(17), np.uint64(47)
_R21, _R43 = np.uint64(21), np.uint64(43)
_R27, _R37 = np.uint64(27), np.uint64(37)
_R31, _R33 = np.uint64(31), np.uint64(33)
_R29, _R32 = np.uint64(29), np.uint64(32)


@njit(inline="always", cache=True)
def _sipround(v0, v1, v2, v3):
    v0 += v1
    v1 = (v1 << _R13) | (v1 >> _R51)
    v1 ^= v0
    v0 = (v0 << _R32) | (v0 >> _R32)
    v2 += v3
    v3 = (v3 << _R16) | (v3 >> _R48)
    v3 ^= v2
    v0 += v3
    v3 = (v3 << _R21) | (v3 >> _R43)
    v3 ^= v0
    v2 += v1
    v1 = (v1 << _R17) | (v1 >> _R47)
    v1 ^= v2
    v2 = (v2 << _R32) | (v2 >> _R32)
    return v0, v1, v2, v3


@njit(inline="always", cache=True)
def siphash24_u64(k0, k1, m):
    """SipHash-2-4 of the 8-byte little-endian message ``m`` under key ``(k0, k1)``."""
    v0 = k0 ^ _SIP_C0
    v1 = k1 ^ _SIP_C1
    v2 = k0 ^ _SIP_C2
    v3 = k1 ^ _SIP_C3
    v3 ^= m
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= m
    v3 ^= _SIP_LEN8
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= _SIP_LEN8
    v2 ^= _SIP_FIN
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


@njit(inline="always", cache=True)
def xxh64_u64(seed, m):
    """xxHash64 of the 8-byte little-endian message ``m`` with ``seed``."""
    h = seed + _XXH_P5 + _XXH_LEN8
    k = m * _XXH_P2
    k = ((k << _R31) | (k >> _R33)) * _XXH_P1
    h ^= k
    h = ((h << _R27) | (h >> _R37)) * _XXH_P1 + _XXH_P4
    h ^= h >> _R33
    h *= _XXH_P2
    h ^= h >> _R29
    h *= _XXH_P3
    h ^= h >> _R32
    return h


@njit(cache=True)
def siphash24_array(k0, k1, messages):
    """Element-wise SipHash-2-4: ``out[i] = siphash(k0[i], k1[i], messages[i])``."""
    out = np.empty(messages.size, np.uint64)
    for i in range(messages.size):
        out[i] = siphash24_u64(k0[i], k1[i], messages[i])
    return out


@njit(cache=True)
def xxh64_array(seeds, messages):
    """Element-wise xxHash64: ``out[i] = xxh64(seeds[i], messages[i])``."""
    out = np.empty(messages.size, np.uint64)
    for i in range(messages.size):
        out[i] = xxh64_u64(seeds[i], messages[i])
    return out
