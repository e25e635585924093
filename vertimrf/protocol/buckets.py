"""The row layout of a secure run: PRF buckets of a public capacity, and where a
record goes; design notes in docs/design/protocol.md."""

from __future__ import annotations

import math

import numpy as np

from vertimrf.errors import ConfigError

# The capacity is exceeded (and a bucket spills) with probability at most 2^-40 per run.
BALANCE_TAIL_BITS = 40
_PRF_BITS = 64


def check_buckets(buckets: object) -> int:
    """``buckets`` as an int: a power of two from 1 to 2^20; ConfigError otherwise."""
    if (
        isinstance(buckets, bool)
        or not isinstance(buckets, int)
        or not 1 <= buckets <= 1 << 20
        or buckets & (buckets - 1)
    ):
        raise ConfigError(f"buckets must be a power of two from 1 to 1048576; got {buckets!r}.")
    return buckets


def overflow_log_bound(max_rows: int, buckets: int, capacity: int) -> float:
    """ln of an upper bound on P(some bucket gets more than ``capacity`` of ``max_rows``
    records), the bucket of each being uniform and independent: the union over the buckets
    of the Chernoff-Hoeffding bound P(X >= c) <= exp(-N KL(c/N || 1/B)) for X ~ Bin(N, 1/B),
    c = capacity + 1 (0 when c > N, which no bucket can reach)."""
    n, c = max_rows, capacity + 1
    if c > n:
        return -math.inf
    p = 1.0 / buckets
    a = c / n
    if a <= p:
        return 0.0
    kl = a * math.log(a / p) + (0.0 if a == 1.0 else (1 - a) * math.log((1 - a) / (1 - p)))
    return math.log(buckets) - n * kl


def bucket_capacity(max_rows: int, buckets: int) -> int:
    """The least capacity C >= ceil(max_rows / buckets) whose overflow bound
    (:func:`overflow_log_bound`) is at most 2^-BALANCE_TAIL_BITS (max_rows for one bucket)."""
    buckets = check_buckets(buckets)
    target = -BALANCE_TAIL_BITS * math.log(2.0)
    lo, hi = -(-max_rows // buckets), max_rows
    while lo < hi:  # the bound falls as the capacity grows
        mid = (lo + hi) // 2
        if overflow_log_bound(max_rows, buckets, mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def bucket_of(prf: np.ndarray, buckets: int) -> np.ndarray:
    """The bucket (int64) of each PRF value: its top log2(``buckets``) bits."""
    if buckets == 1:
        return np.zeros(prf.shape, np.int64)
    shift = np.uint64(_PRF_BITS - (buckets.bit_length() - 1))
    return (prf >> shift).astype(np.int64)


def spill_slots(counts: np.ndarray, capacity: int) -> np.ndarray:
    """The padded rows (int64) that the records beyond each bucket's capacity take, in
    order of (bucket, rank): the first free rows of the table, bucket by bucket (``counts``:
    every bucket's record count; their sum is at most buckets x capacity)."""
    counts = np.asarray(counts, np.int64)
    need = int(np.maximum(counts - capacity, 0).sum())
    parts, have = [], 0
    for b in np.flatnonzero(counts < capacity):
        if have >= need:
            break
        free = np.arange(b * capacity + counts[b], (b + 1) * capacity, dtype=np.int64)
        parts.append(free[: need - have])
        have += parts[-1].size
    if have < need:
        raise ConfigError(
            f"{int(counts.sum())} records do not fit {counts.size} buckets of {capacity} rows."
        )
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def record_slots(bucket: np.ndarray, counts: np.ndarray, capacity: int) -> np.ndarray:
    """The padded row (int64) of each record, given the ``bucket`` of records sorted by
    their PRF value (whole buckets only: a subset of the buckets is fine) and every bucket's
    record ``counts``: rank r in bucket b takes row b C + r, or past C a spill row."""
    counts = np.asarray(counts, np.int64)
    first = np.searchsorted(bucket, np.arange(counts.size))  # each bucket's first record
    slots = np.arange(bucket.size, dtype=np.int64)
    slots -= first[bucket]
    over = np.flatnonzero(slots >= capacity)
    rank = slots[over]
    slots += bucket * capacity
    if over.size:
        extra = np.maximum(counts - capacity, 0)
        start = np.concatenate(([0], np.cumsum(extra)[:-1]))
        spills = spill_slots(counts, capacity)
        slots[over] = spills[start[bucket[over]] + rank - capacity]
    return slots
