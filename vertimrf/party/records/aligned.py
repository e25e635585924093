"""A party's records in the common row order of a secure run, bucket by
bucket; design notes in docs/design/party.md."""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from vertimrf.crypto.schedule import mac, record_set_mac_key
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, RecordIDError
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.sorting import stable_order
from vertimrf.party.registers import keyed_prf
from vertimrf.protocol.buckets import bucket_of, record_slots

if TYPE_CHECKING:
    from vertimrf.party.records.tokens import TokenKeys
    from vertimrf.protocol.secure.plan import SecurePlan

_ORDER_CONTEXT = b"vertimrf/secure-order"
# The codes are hashed as 4-byte little-endian integers, whatever type holds them.
_CODE_BYTES = "<i4"
_HASH_ROWS = 1 << 16


def order_keys(secret: bytes, context: bytes) -> HashKeys:
    """The PRF key of the row order (from the group secret and the run)."""
    return HashKeys.from_secret(secret, 1, context=_ORDER_CONTEXT + context)


def record_set_key(secret: bytes, context: bytes) -> bytes:
    """The HMAC key of the record-set digest."""
    return record_set_mac_key(secret, context)


@dataclass(frozen=True)
class BucketRows:
    """The records of some whole buckets: their padded ``slots`` (ascending), ``codes``
    (one row per record, in slot order) and whether each ``spilled`` into another bucket's
    rows, with each bucket's ``record_hashes`` (SHA-256 of its sorted PRF values) and
    ``data_hashes`` (of its fingerprints and codes in PRF order), keyed by bucket."""

    slots: np.ndarray
    codes: np.ndarray
    spilled: np.ndarray
    record_hashes: dict[int, bytes]
    data_hashes: dict[int, bytes]


def _hash(h: Any, values: np.ndarray, dtype: str) -> Any:
    """``h`` updated with ``values`` as ``dtype`` bytes (C order), a block of rows at a
    time (no whole copy)."""
    for r0 in range(0, values.shape[0], _HASH_ROWS):
        h.update(np.ascontiguousarray(values[r0 : r0 + _HASH_ROWS], dtype).data)
    return h


def bucket_counts(prf: np.ndarray, buckets: int) -> np.ndarray:
    """The number of records in each bucket (int64, one entry per bucket)."""
    return np.bincount(bucket_of(prf, buckets), minlength=buckets).astype(np.int64)


def repeated_prf(prf: np.ndarray, fingerprints: np.ndarray) -> tuple[int, bool]:
    """How many neighbours of the sorted ``prf`` repeat a PRF value, and whether some of
    them also repeat the fingerprint (a duplicated record ID, not a PRF collision)."""
    same = np.flatnonzero(prf[1:] == prf[:-1])
    return same.size, bool((fingerprints[same] == fingerprints[same + 1]).any())


def duplicate_error(same: int, repeated: bool) -> RecordIDError:
    """The error of ``same`` repeated PRF values (see :func:`repeated_prf`)."""
    what = "carry duplicated record IDs" if repeated else "collide in the row PRF"
    return RecordIDError(
        f"{same + 1} rows {what}: each record must have exactly one row; "
        "deduplicate these rows first."
    )


def align_buckets(
    prf: np.ndarray,
    fingerprints: np.ndarray,
    codes: np.ndarray,
    counts: np.ndarray,
    capacity: int,
) -> BucketRows:
    """The aligned rows of records that fill whole buckets (any subset of them): ``prf``,
    ``fingerprints`` and ``codes`` per record in any order, ``counts`` every bucket's record
    count over the whole table. RecordIDError when two records share an ID (they share a
    PRF value)."""
    buckets = counts.size
    order, prf = stable_order(prf)
    fingerprints = fingerprints[order]
    codes = np.ascontiguousarray(codes[order])
    del order
    same, repeated = repeated_prf(prf, fingerprints)
    if same:
        raise duplicate_error(same, repeated)
    bucket = bucket_of(prf, buckets)
    bounds = np.searchsorted(bucket, np.arange(buckets + 1))
    record_hashes, data_hashes = {}, {}
    for b in np.unique(bucket):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        record_hashes[int(b)] = _hash(hashlib.sha256(), prf[lo:hi], "<u8").digest()
        h = _hash(hashlib.sha256(), fingerprints[lo:hi], "<u8")
        data_hashes[int(b)] = _hash(h, codes[lo:hi], _CODE_BYTES).digest()
    del prf, fingerprints
    slots = record_slots(bucket, counts, capacity)
    spilled = slots // capacity != bucket
    del bucket
    if spilled.any():  # spill rows lie elsewhere: put the records in row order
        by_slot, slots = stable_order(slots)
        codes, spilled = codes[by_slot], spilled[by_slot]
    return BucketRows(slots, codes, spilled, record_hashes, data_hashes)


def combine_digests(
    record_hashes: dict[int, bytes], data_hashes: dict[int, bytes], buckets: int, mac_key: bytes
) -> tuple[bytes, str]:
    """The record-set digest (HMAC over every bucket's record hash, in bucket order; an empty
    bucket's is SHA-256 of nothing) and the data digest (SHA-256 of every bucket's data
    hash, hex)."""
    empty = hashlib.sha256(b"").digest()
    records = b"".join(record_hashes.get(b, empty) for b in range(buckets))
    data = b"".join(data_hashes.get(b, empty) for b in range(buckets))
    return mac(mac_key, records), hashlib.sha256(data).hexdigest()


def check_count(n: int, max_rows: int, *, so_far: bool = False) -> None:
    """ConfigError when a party holds more records than the config's public max_rows (``n``
    counted ``so_far``: the party holds at least ``n``)."""
    if n > max_rows:
        raise ConfigError(
            f"this party holds {'at least ' if so_far else ''}{n} records but the config's "
            f"max_rows is {max_rows}; make a new config with a larger public max_rows."
        )


def slot_columns(
    slots: np.ndarray, codes: np.ndarray, r0: int, r1: int, offsets: np.ndarray
) -> np.ndarray:
    """The one-hot columns (int32, (r1 - r0) x attributes, -1 on padding rows) of padded
    rows r0:r1, from records at ascending ``slots`` with ``codes``: attribute j's column is
    ``offsets[j]`` plus its code."""
    i0, i1 = np.searchsorted(slots, (r0, r1))
    out = np.full((r1 - r0, codes.shape[1]), -1, np.int32)
    out[slots[i0:i1] - r0] = codes[i0:i1] + offsets
    return out


def code_histogram(codes: np.ndarray, attrs: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """Exact counts (int64, shape ``sizes[attrs]``) of the records' codes on ``attrs``."""
    shape = tuple(int(sizes[a]) for a in attrs)
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in attrs), shape)
    return np.bincount(flat, minlength=math.prod(shape)).astype(np.int64).reshape(shape)


def chunk_histograms(
    chunks: Iterable[np.ndarray], attrs: list[tuple[int, ...]], sizes: tuple[int, ...]
) -> list[np.ndarray]:
    """Exact counts on each attribute set of ``attrs`` (see :func:`code_histogram`), summed
    over ``chunks`` of the records' codes (not read at all without ``attrs``)."""
    totals = [np.zeros(tuple(sizes[a] for a in attr), np.int64) for attr in attrs]
    for chunk in chunks if attrs else ():
        for total, attr in zip(totals, attrs, strict=True):
            total += code_histogram(chunk, attr, sizes)
    return totals


class Aligned(Protocol):
    """A party's records in the common row order, wherever they are held."""

    n: int
    record_digest: bytes
    data_digest: str

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see :func:`slot_columns`)."""
        ...

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs`` (see :func:`code_histogram`)."""
        ...


class PartialRecords(Protocol):
    """A party's records before the deal lays them out (partial record sets), sorted by
    token, in memory or in files: their count ``n`` and ``digest``, its token list for each
    admit digest, and the layout at the slots of its slot map."""

    n: int
    digest: str

    def sorted_tokens(self) -> Iterator[np.ndarray]:
        """The records' order tokens, sorted, by blocks."""
        ...

    def tokens(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """The count of the token list made with ``admit`` and its blocks."""
        ...

    def lay_out(
        self, slots: Iterable[np.ndarray], count: int, admit: bytes, assignment: bytes
    ) -> Aligned:
        """The records at the ``count`` ``slots`` the deal gave that token list."""
        ...


class AlignedTable:
    """A party's records aligned in memory (one call of :func:`align_buckets` over all)."""

    def __init__(
        self,
        codes: np.ndarray,
        fingerprints: np.ndarray,
        secret: bytes,
        context: bytes,
        buckets: int,
        capacity: int,
        max_rows: int,
    ) -> None:
        self.n = int(codes.shape[0])
        check_count(self.n, max_rows)
        prf = keyed_prf(order_keys(secret, context), fingerprints)
        counts = bucket_counts(prf, buckets)
        rows = align_buckets(prf, fingerprints, codes, counts, capacity)
        self._slots, self._codes = rows.slots, rows.codes
        self.record_digest, self.data_digest = combine_digests(
            rows.record_hashes, rows.data_hashes, buckets, record_set_key(secret, context)
        )

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see :func:`slot_columns`)."""
        return slot_columns(self._slots, self._codes, r0, r1, offsets)

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs`` (see :func:`code_histogram`)."""
        return [code_histogram(self._codes, a, sizes) for a in attrs]


class HeldTable(ABC):
    """A party's table where it is held (this process's memory, a file, a Dask cluster),
    which aligns its records there."""

    @abstractmethod
    def check(self, name: str, spec: DomainSpec, id_column: str, id_type: str = "") -> HeldTable:
        """This table as party ``name``'s over ``spec`` (DomainError or ConfigError unless it
        has ``id_column`` and every column of ``spec``), its IDs of the declared ``id_type``
        (the config's; checked on every row as they are read)."""

    @abstractmethod
    def align(self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan) -> Aligned:
        """The records in the common row order (ConfigError past max_rows)."""

    @abstractmethod
    def keep(self, folder: Path) -> None:
        """Keep the aligned records in ``folder`` (the party's private state for the run),
        for a later process of the run to read back instead of aligning them again."""

    def source(self) -> str | None:
        """SHA-256 (hex) of the table's bytes, what a party's kept records are bound to;
        None for a table without bytes to digest (its records are then never kept)."""
        return None

    def one_way(self, spec: DomainSpec) -> list[np.ndarray]:
        """The count of every code of each column of ``spec`` over the table's records
        (ConfigError for a table that cannot give them)."""
        raise ConfigError(
            f"a {type(self).__name__} holds codes, not the values a fine histogram counts: "
            "give the table in memory, as a FileTable or as a DaskTable, or set values "
            "'uniform' (--values uniform)."
        )

    def partial_records(
        self, spec: DomainSpec, keys: TokenKeys, plan: SecurePlan, index: int
    ) -> PartialRecords:
        """Partial record sets: the records of party ``index`` sorted by token where they
        are held (e.g. :class:`~vertimrf.party.records.slot_file.TokenFiles`); ConfigError
        for a table that cannot give them."""
        raise ConfigError(
            f"a {type(self).__name__} does not take partial record sets: give the table in "
            "memory, as a FileTable or as a DaskTable."
        )
