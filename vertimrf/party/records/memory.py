"""A party's records in this process's memory: its table encoded (a DataFrame read by
:func:`~vertimrf.party.records.frame.own_table`, or codes given with their IDs) and their ID
fingerprints, as a :class:`~vertimrf.party.records.aligned.HeldTable` like a file's or a
Dask cluster's, so the secure role never asks where its records are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vertimrf.domain import EncodedTable
from vertimrf.errors import ConfigError
from vertimrf.party.records.aligned import Aligned, AlignedTable, HeldTable, PartialRecords
from vertimrf.party.records.frame import table_digest
from vertimrf.party.records.kept_aligned import binding, kept_or_aligned
from vertimrf.party.records.slot_table import MemoryRecords
from vertimrf.party.records.tokens import TokenKeys

if TYPE_CHECKING:
    from vertimrf.domain import DomainSpec
    from vertimrf.protocol.secure.plan import SecurePlan


class MemoryTable(HeldTable):
    """A party's encoded records (``table``) with their ID ``fingerprints``, in memory."""

    def __init__(self, table: EncodedTable, fingerprints: np.ndarray) -> None:
        if fingerprints.shape != (table.codes.shape[0],):
            raise ConfigError(f"a table in memory needs one ID per record ({len(table)}).")
        self._table, self._fingerprints = table, fingerprints
        self._name, self._id_column = "", ""
        self._keep: Path | None = None

    def check(self, name: str, spec: DomainSpec, id_column: str, id_type: str = "") -> MemoryTable:
        """This table as party ``name``'s (its columns were checked as it was encoded; its
        IDs are fingerprints, typed as they were read)."""
        self._name, self._id_column = name, id_column
        return self

    def keep(self, folder: Path) -> None:
        """Keep the aligned records in ``folder``: :meth:`align` then reads back those an
        earlier process kept there for the same run, secret, party and records."""
        self._keep = folder

    def align(self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan) -> Aligned:
        """The records in the common row order (ConfigError past max_rows), read back from
        the folder given to :meth:`keep` when an earlier process kept them there."""

        def align() -> Aligned:
            return AlignedTable(
                self._table.codes, self._fingerprints, secret, context,
                plan.buckets, plan.capacity, plan.max_rows,
            )  # fmt: skip

        if self._keep is None:
            return align()
        bound = binding(secret, context, self._name, self._id_column, self.source())
        return kept_or_aligned(self._keep, bound, spec, plan.rows, align)

    def source(self) -> str:
        """SHA-256 of the records: their ID fingerprints and codes, in input order."""
        return table_digest(self._table, self._fingerprints)

    def partial_records(
        self, spec: DomainSpec, keys: TokenKeys, plan: SecurePlan, index: int
    ) -> PartialRecords:
        """Partial record sets: the records sorted by token, in memory."""
        return MemoryRecords(self._table, self._fingerprints, keys, plan, index)
