"""How a party's records reach the run's row order: by PRF buckets or at the
deal's slots; design notes in docs/design/party.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, MessageError
from vertimrf.party.records.aligned import Aligned, HeldTable, PartialRecords
from vertimrf.party.records.kept_aligned import (
    KeptRecords,
    binding,
    keep_records,
    kept_or_aligned,
    load_records,
)
from vertimrf.party.records.tokens import TokenKeys, checked_dummies, merged_tokens, release_tokens
from vertimrf.protocol.regions import RegionNoise
from vertimrf.protocol.secure.deal import Deal
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.slot_map import open_slot_map


@dataclass(frozen=True)
class Owner:
    """Whose records these are: the party's ``name`` and ``index`` in the plan, its ID
    column, and what its records are keyed by (``keys``: the group secret, its local
    secret and the run's context)."""

    name: str
    index: int
    id_column: str
    keys: TokenKeys


class Records(Protocol):
    """A party's records on their way to the run's row order (module doc)."""

    #: Whether the deal lays the records out (a new process opens it again to find them).
    from_deal: bool

    def keep(self, folder: Path) -> None:
        """Keep what a later process of the run reads back in ``folder``."""
        ...

    def digest(self) -> str:
        """What the party's commitment and keyed streams are bound to."""
        ...

    def aligned(self) -> Aligned:
        """The records in the run's row order."""
        ...

    def place(self, deal: Deal, slot_map: object) -> None:
        """Lay the records out as the opened ``deal`` says (nothing to do for buckets)."""
        ...

    def token_list(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """The length of the token list for ``admit`` and its sorted blocks."""
        ...


class Buckets:
    """Equal record sets: the records aligned by PRF buckets where the table is held (once;
    the table is then dropped)."""

    from_deal = False

    def __init__(self, table: HeldTable, spec: DomainSpec, plan: SecurePlan, owner: Owner):
        self._table: HeldTable | None = table
        self._spec, self._plan, self._owner = spec, plan, owner
        self._aligned: Aligned | None = None

    def keep(self, folder: Path) -> None:
        """Keep the aligned records in ``folder`` (the table's own way,
        :meth:`HeldTable.keep`)."""
        if self._table is not None:
            self._table.keep(folder)

    def digest(self) -> str:
        """The aligned records' data digest (:mod:`vertimrf.party.records.aligned`)."""
        return self.aligned().data_digest

    def aligned(self) -> Aligned:
        """The records in the common row order (aligned on first use; ConfigError past
        max_rows)."""
        if self._aligned is None:
            assert self._table is not None
            keys = self._owner.keys
            self._aligned = self._table.align(self._spec, keys.group, keys.context, self._plan)
            self._table = None
        return self._aligned

    def place(self, deal: Deal, slot_map: object) -> None:
        """Nothing: every party finds its rows on its own."""

    def token_list(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """ConfigError: tokens are a step of partial record sets."""
        raise ConfigError("tokens are a step of record_sets='partial' only.")


class Slots:
    """Partial record sets: the records sorted by token before the deal, laid out at its
    slots after (module doc)."""

    from_deal = True

    def __init__(
        self,
        table: HeldTable,
        spec: DomainSpec,
        plan: SecurePlan,
        owner: Owner,
        regions: RegionNoise,
    ) -> None:
        self._table: HeldTable | None = table
        self._spec, self._plan, self._owner, self._regions = spec, plan, owner, regions
        self._partial: PartialRecords | None = None
        self._aligned: Aligned | None = None
        self._folder: Path | None = None
        self._source: str | None = None
        self._digest: str | None = None
        self._kept: KeptRecords | None = None
        self._kept_read = False

    def keep(self, folder: Path) -> None:
        """Keep the records' digest and sorted tokens, then their layout, in
        ``folder``/partial."""
        self._folder = folder / "partial"

    def digest(self) -> str:
        """The records' digest in token order
        (:func:`~vertimrf.party.records.tokens.records_digest`), which no slot changes
        (computed once, before the layout, and kept with the records' sorted tokens)."""
        if self._digest is None:
            kept = self._kept_records()
            if kept is not None:
                self._digest = kept.digest
            else:
                records = self._records()
                bound = self._binding()
                if bound is not None:
                    assert self._folder is not None
                    keep_records(
                        self._folder, bound, records.digest, records.n, records.sorted_tokens()
                    )
                self._digest = records.digest
        return self._digest

    def aligned(self) -> Aligned:
        """The records at their slots (ConfigError before the deal lays them out)."""
        if self._aligned is None:
            raise ConfigError(
                "with partial record sets the records are laid out by the deal's slots: "
                "open the deal first."
            )
        return self._aligned

    def token_list(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """The length of this party's token list for ``admit`` and a function giving it by
        sorted blocks, so that a table held in a file is never whole in memory; from the
        sorted tokens kept at the commitment when an earlier process of the run kept them
        (no table read)."""
        kept = self._kept_records() if self._partial is None else None
        if kept is None:
            return self._records().tokens(admit)
        keys, index = self._owner.keys, self._owner.index
        real = [np.sort(release_tokens(kept.tokens, keys, admit))]
        dummies = checked_dummies(real, keys, admit, self._regions, index)
        return real[0].size + dummies.size, lambda: merged_tokens(lambda: iter(real), dummies)

    def place(self, deal: Deal, slot_map: object) -> None:
        """Lay the records out at the slots the opened ``deal`` gave their token list, read
        by blocks from ``slot_map`` (the server's slot map, bytes-like, or a function giving
        it, called only when the layout is not kept from an earlier process)."""
        if not deal.slot_key or slot_map is None:
            raise MessageError(
                "a run with partial record sets needs the deal and its slot map (the "
                "server's NAME.deal and NAME.deal-slots)."
            )
        name, most = self._owner.name, self._plan.max_tokens

        def slots() -> Iterator[np.ndarray]:
            blob = slot_map() if callable(slot_map) else slot_map
            return open_slot_map(deal.slot_key, blob, self._owner.keys.context, name, deal, most)

        self._lay_out(slots, deal.slot_count, deal.commit_set, deal.assignment)

    def _lay_out(
        self,
        slots: Callable[[], Iterable[np.ndarray]],
        count: int,
        admit: bytes,
        assignment: bytes,
    ) -> None:
        if self._aligned is not None:
            return
        self.digest()  # kept: the records are dropped once laid out

        def lay_out() -> Aligned:
            return self._records().lay_out(slots(), count, admit, assignment)

        bound = self._binding()
        if bound is None:
            self._aligned = lay_out()
        else:  # a later process of the run reads the layout back: no table read, no sort
            assert self._folder is not None
            keys = self._owner.keys
            laid = binding(keys.group, keys.context, bound, admit.hex(), assignment.hex())
            self._aligned = kept_or_aligned(
                self._folder, laid, self._spec, self._plan.rows, lay_out
            )
        self._partial = self._table = None

    def _records(self) -> PartialRecords:
        """The records sorted by token (made once per process: the commitment, the tokens,
        then the deal)."""
        if self._partial is None:
            if self._table is None:
                raise ConfigError("the tokens are made before the deal lays the records out.")
            owner = self._owner
            self._partial = self._table.partial_records(
                self._spec, owner.keys, self._plan, owner.index
            )
        return self._partial

    def _binding(self) -> str | None:
        """What kept records of this party are bound to (its run, secret, name, ID column
        and table's digest), or None without a state folder or a table whose bytes can be
        digested."""
        if self._folder is None:
            return None
        if self._source is None and self._table is not None:
            self._source = self._table.source()
        if self._source is None:
            return None
        keys, owner = self._owner.keys, self._owner
        return binding(keys.group, keys.context, owner.name, owner.id_column, self._source)

    def _kept_records(self) -> KeptRecords | None:
        """The records' digest and sorted tokens as an earlier process of the run kept them
        (read once per process), or None."""
        if not self._kept_read:
            bound, folder = self._binding(), self._folder
            if bound is not None and folder is not None:
                self._kept = load_records(folder, bound)
            self._kept_read = True
        return self._kept
