"""Plain numpy (and plain AES-ECB) references the kernel benchmarks time the kernels against.

They are written for speed in numpy, from the algorithms' definitions; the exact,
slow references the unit tests check the kernels with stay in ``tests/naive.py``. Every
benchmark checks its kernel's output against these on the same input. uint64 array arithmetic
in numpy wraps modulo 2**64, as the hashes and the ring need.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

EMPTY = np.uint64(2**64 - 1)
# The model the engine picks on Adult at 1M rows (epsilon 1.6, delta 1e-6, seed 0): 15
# attributes, 9 cliques of 6-7 attributes, 3,979,840 cells; its separators keep all but one
# attribute, so several projections have 2-cell runs.
ADULT_SIZES = [16, 7, 16, 16, 16, 7, 14, 6, 5, 2, 8, 15, 16, 41, 2]
ADULT_CLIQUES = [
    (0, 3, 5, 6, 7, 9, 14), (1, 2, 3, 4, 8, 14), (1, 3, 4, 6, 7, 14), (1, 3, 4, 7, 8, 14),
    (1, 3, 4, 7, 10, 14), (3, 4, 6, 7, 12, 14), (3, 4, 7, 8, 13, 14), (3, 5, 6, 7, 9, 12, 14),
    (4, 7, 8, 11, 13, 14),
]  # fmt: skip
_U = np.uint64


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << _U(n)) | (x >> _U(64 - n))


def siphash24_numpy(k0: np.ndarray, k1: np.ndarray, m: np.ndarray) -> np.ndarray:
    """SipHash-2-4 of each 8-byte little-endian message ``m[i]`` under key ``(k0, k1)``
    (arrays, or uint64 scalars broadcast over ``m``)."""
    with np.errstate(over="ignore"):  # the key words alone are scalars; they wrap as wanted
        return _siphash24(k0, k1, m)


def _siphash24(k0: np.ndarray, k1: np.ndarray, m: np.ndarray) -> np.ndarray:
    v = [
        k0 ^ _U(0x736F6D6570736575),
        k1 ^ _U(0x646F72616E646F6D),
        k0 ^ _U(0x6C7967656E657261),
        k1 ^ _U(0x7465646279746573) ^ m,
    ]

    def rounds(count: int) -> None:
        for _ in range(count):
            v[0] = v[0] + v[1]
            v[2] = v[2] + v[3]
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = _rotl(v[0], 32)
            v[2] = v[2] + v[1]
            v[0] = v[0] + v[3]
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = _rotl(v[2], 32)

    last = _U(8 << 56)  # the final block of an 8-byte message holds only its length
    rounds(2)
    v[0] = v[0] ^ m
    v[3] = v[3] ^ last
    rounds(2)
    v[0] = v[0] ^ last
    v[2] = v[2] ^ _U(0xFF)
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


_P1, _P2, _P3 = _U(0x9E3779B185EBCA87), _U(0xC2B2AE3D27D4EB4F), _U(0x165667B19E3779F9)
_P4, _P5 = _U(0x85EBCA77C2B2AE63), _U(0x27D4EB2F165667C5)


def xxh64_numpy(seed: np.ndarray, m: np.ndarray) -> np.ndarray:
    """xxHash64 of each 8-byte little-endian message ``m[i]`` with ``seed[i]``."""
    lane = _rotl(m * _P2, 31) * _P1
    h = _rotl((seed + _P5 + _U(8)) ^ lane, 27) * _P1 + _P4
    for shift, prime in ((33, _P2), (29, _P3)):
        h = (h ^ (h >> _U(shift))) * prime
    return h ^ (h >> _U(32))


def value_groups(
    codes: np.ndarray, offsets: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per attribute: the rows sorted by value, the slot of each value present and where its
    rows start in that order (the key-independent part of building registers)."""
    groups = []
    for j in range(codes.shape[1]):
        order = np.argsort(codes[:, j], kind="stable")
        values, starts = np.unique(codes[order, j], return_index=True)
        groups.append((order, offsets[j] + values.astype(np.int64), starts))
    return groups


def registers_numpy(
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    n_slots: int,
    k0: np.ndarray,
    k1: np.ndarray,
    fingerprints: np.ndarray,
) -> np.ndarray:
    """Min-hash registers (len(k0), n_slots) under SipHash-2-4: per key, every record's hash,
    then the minimum over each value's rows; an empty slot keeps 2**64 - 1."""
    out = np.full((k0.size, n_slots), EMPTY, dtype=np.uint64)
    for i in range(k0.size):
        h = siphash24_numpy(k0[i], k1[i], fingerprints)
        for order, slots, starts in groups:
            out[i, slots] = np.minimum.reduceat(h[order], starts)
    return out


def union_sketches(
    comp_t: np.ndarray, rows: np.ndarray, sizes: np.ndarray, cells: np.ndarray
) -> np.ndarray:
    """The union sketch (len(cells), t) of each cell of a marginal: the maximum over its
    attributes of their complement sketches (cells in C order over ``sizes``)."""
    values = np.unravel_index(cells, tuple(sizes))
    union = comp_t[rows[0] + values[0]]
    for r, v in zip(rows[1:], values[1:], strict=True):
        union = np.maximum(union, comp_t[r + v])
    return union


def onehot_scatter_numpy(a: np.ndarray, cols: np.ndarray, kb: int) -> np.ndarray:
    """``a.T @ Y`` modulo 2**64 for the one-hot Y with ones at (r, cols[r, j] >= 0): each row
    of ``a`` added to its output columns with ``np.add.at``."""
    acc = np.zeros((kb + 1, a.shape[1]), dtype=np.uint64)  # the last row collects the -1s
    wide = a.astype(np.uint64, copy=False)
    for j in range(cols.shape[1]):
        np.add.at(acc, np.where(cols[:, j] >= 0, cols[:, j], kb), wide)
    return np.ascontiguousarray(acc[:kb].T)


def onehot_minus_numpy(mask: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """X - U in place for the one-hot X at (r, cols[r, j] >= 0): one negation of the whole
    matrix, then one scatter per group (each group's columns are distinct within a row)."""
    np.negative(mask, out=mask)
    flat, k, one = mask.reshape(-1), mask.shape[1], mask.dtype.type(1)
    for j in range(cols.shape[1]):
        real = np.flatnonzero(cols[:, j] >= 0)
        flat[real * k + cols[real, j]] += one
    return mask


def aes_ctr_words(subkey: bytes, n: int) -> np.ndarray:
    """``n`` uint64 words of the AES-256-CTR keystream of ``subkey`` from counter 0: the
    big-endian counter blocks 0, 1, ... encrypted with AES-ECB, read little-endian."""
    blocks = (8 * n + 15) // 16
    counters = np.zeros((blocks, 2), dtype=">u8")
    counters[:, 1] = np.arange(blocks, dtype=np.uint64)
    encryptor = Cipher(algorithms.AES(subkey), modes.ECB()).encryptor()
    stream = encryptor.update(counters.tobytes()) + encryptor.finalize()
    return np.frombuffer(stream, dtype="<u8", count=n).astype(np.uint64)


def merge_sorted_numpy(lists: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The server's merge before the kernel: ``np.unique`` of the lists' concatenation, then
    one ``searchsorted`` per list for each token's region."""
    distinct = np.unique(np.concatenate(lists))
    region = np.zeros(distinct.size, np.int64)
    for i, tokens in enumerate(lists):
        region[np.searchsorted(distinct, tokens)] |= 1 << i
    return distinct, region
