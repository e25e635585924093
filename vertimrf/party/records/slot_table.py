"""A party's records laid out at the server's slots
(``record_sets="partial"``); design notes in docs/design/party.md."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.errors import ConfigError
from vertimrf.party.records.aligned import HeldTable, check_count, code_histogram, slot_columns
from vertimrf.party.records.sorting import stable_order
from vertimrf.party.records.tokens import (
    TokenKeys,
    Tokens,
    check_slot_count,
    make_tokens,
    order_tokens,
    record_slots,
    records_digest,
)

if TYPE_CHECKING:
    from vertimrf.party.records.aligned import Aligned
    from vertimrf.protocol.secure.plan import SecurePlan

__all__ = [
    "MemoryRecords",
    "SlotAligned",
    "SlotTable",
    "check_distinct",
    "check_slots",
    "layout_digest",
]


def layout_digest(
    assignment: bytes,
    slots: Iterable[np.ndarray],
    fingerprints: Iterable[np.ndarray],
    codes: Iterable[np.ndarray],
) -> str:
    """The data digest of records laid out in the assignment of digest ``assignment``
    (hex): SHA-256 of a label, the assignment digest, then every record's slot (8-byte
    little-endian), ID fingerprint (8 bytes) and codes (4 bytes each), each given by blocks
    in slot order."""
    h = hashlib.sha256(b"vertimrf/slot-layout\0" + assignment)
    for blocks, dtype in ((slots, "<i8"), (fingerprints, "<u8"), (codes, "<i4")):
        for block in blocks:
            h.update(np.ascontiguousarray(block, dtype).data)
    return h.hexdigest()


def check_slots(slots: np.ndarray, max_rows: int) -> None:
    """ConfigError unless every one of ``slots`` lies in the ``max_rows`` rows."""
    if slots.size and not 0 <= int(slots.min()) <= int(slots.max()) < max_rows:
        raise ConfigError(f"a slot lies outside the {max_rows} rows of max_rows.")


def check_distinct(slots: np.ndarray) -> None:
    """ConfigError when two of the sorted ``slots`` are one slot."""
    if slots.size and bool(np.any(slots[1:] == slots[:-1])):
        raise ConfigError("two records were given one slot; the slot message is corrupt.")


class SlotAligned:
    """Records at given slots: their codes in slot order, the padded rows' one-hot columns
    and exact count tables (the :class:`~vertimrf.party.records.aligned.Aligned` protocol)."""

    def __init__(
        self, codes: np.ndarray, fingerprints: np.ndarray, slots: np.ndarray, assignment: bytes
    ) -> None:
        order, ordered = stable_order(slots)
        self._slots = np.ascontiguousarray(ordered, np.int64)
        self._codes = np.ascontiguousarray(codes[order])
        check_distinct(self._slots)
        self.n = int(self._slots.size)
        self.record_digest = assignment
        self.data_digest = layout_digest(
            assignment, [self._slots], [fingerprints[order]], [self._codes]
        )

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`~vertimrf.party.records.aligned.slot_columns`)."""
        return slot_columns(self._slots, self._codes, r0, r1, offsets)

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``."""
        return [code_histogram(self._codes, a, sizes) for a in attrs]


class SlotTable(HeldTable):
    """A party's encoded records (``table``, with their ID ``fingerprints``) and the slot
    of each (``slots``, record order) in the server's assignment (``assignment``: its
    digest)."""

    def __init__(
        self, table: EncodedTable, fingerprints: np.ndarray, slots: np.ndarray, assignment: bytes
    ) -> None:
        n = table.codes.shape[0]
        if fingerprints.shape != (n,) or slots.shape != (n,):
            raise ConfigError(f"a slot table needs one fingerprint and one slot per record ({n}).")
        self._table, self._fingerprints = table, fingerprints
        self._slots, self._assignment = np.asarray(slots, np.int64), assignment

    def check(self, name: str, spec: DomainSpec, id_column: str, id_type: str = "") -> SlotTable:
        """This table as party ``name``'s over ``spec`` (ConfigError unless it holds
        exactly ``spec``'s columns); it holds fingerprints, not IDs: no ``id_type`` to check."""
        if self._table.domain.names != spec.names:
            raise ConfigError(
                f"party {name!r}'s slot table holds the columns {list(self._table.domain.names)}"
                f", not {list(spec.names)}."
            )
        return self

    def keep(self, folder: Path) -> None:
        """Nothing: laying the records out is one sort of their slots, no dearer than
        reading kept records back."""

    def align(self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan) -> Aligned:
        """The records at their slots (ConfigError when a slot lies past the plan's rows or
        there are more records than max_rows)."""
        check_count(self._slots.size, plan.max_rows)
        check_slots(self._slots, plan.max_rows)
        return SlotAligned(self._table.codes, self._fingerprints, self._slots, self._assignment)


class MemoryRecords:
    """Party ``index``'s records held in memory (``table`` and their ID ``fingerprints``)
    before the deal lays them out: their digest in the order of their order tokens
    (:func:`records_digest`), its token list for each admit digest, and the layout at the
    slots of its slot map (read whole). ConfigError past the plan's max_rows."""

    def __init__(
        self,
        table: EncodedTable,
        fingerprints: np.ndarray,
        keys: TokenKeys,
        plan: SecurePlan,
        index: int,
    ) -> None:
        check_count(fingerprints.size, plan.max_rows)
        self._table, self._fingerprints = table, fingerprints
        self._keys, self._plan, self._index = keys, plan, index
        self.n = int(fingerprints.size)
        self._order = order_tokens(fingerprints, keys)
        order, self._sorted = stable_order(self._order)
        self.digest = records_digest(
            self.n, table.codes.shape[1], [fingerprints[order]], [table.codes[order]]
        )
        self._made: tuple[bytes, Tokens] | None = None

    def _tokens(self, admit: bytes) -> Tokens:
        if self._made is None or self._made[0] != admit:  # made once (tokens, then the deal)
            made = make_tokens(
                self._order, self._keys, admit, self._plan.sets.region_noise(), self._index
            )
            self._made = (admit, made)
        return self._made[1]

    def sorted_tokens(self) -> Iterator[np.ndarray]:
        """The records' order tokens, sorted (one block)."""
        return iter((self._sorted,))

    def tokens(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """The number of tokens made with ``admit`` and a function giving them sorted (one
        block); RecordIDError for a repeated ID."""
        ordered = self._tokens(admit).sorted
        return ordered.size, lambda: iter((ordered,))

    def lay_out(
        self, slots: Iterable[np.ndarray], count: int, admit: bytes, assignment: bytes
    ) -> SlotAligned:
        """The records at the ``count`` ``slots`` (by blocks, read whole) the deal gave the
        token list made with ``admit`` (one per token, in its order), in the assignment of
        digest ``assignment``."""
        tokens = self._tokens(admit)
        check_slot_count(count, tokens.sorted.size)
        where = record_slots(tokens, np.concatenate([np.empty(0, np.int64), *map(np.copy, slots)]))
        check_slots(where, self._plan.max_rows)
        return SlotAligned(self._table.codes, self._fingerprints, where, assignment)
