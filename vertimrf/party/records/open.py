"""The one entry from a party's input to its records in the run's order:
:func:`open_records` chooses, once, where the table is read (memory, a file, a Dask
cluster: a :class:`~vertimrf.party.records.aligned.HeldTable`), how its rows are found
(buckets or slots: :mod:`vertimrf.party.records.layout`), and whether an earlier process's
kept records are read back (the layout's :meth:`keep`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.errors import ConfigError
from vertimrf.party.fine import frame_counts
from vertimrf.party.records.aligned import HeldTable
from vertimrf.party.records.frame import bin_table, own_table
from vertimrf.party.records.ids import RecordIds, record_fingerprints
from vertimrf.party.records.layout import Buckets, Owner, Records, Slots
from vertimrf.party.records.memory import MemoryTable
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.regions import RegionNoise
from vertimrf.protocol.secure.plan import SecurePlan

#: What a party's records may be given as.
Input = pd.DataFrame | EncodedTable | HeldTable


def held_table(
    data: Input,
    spec: DomainSpec,
    owner: Owner,
    *,
    id_type: str = "",
    ids: RecordIds | None = None,
    bins: Mapping[str, BinMap] | None = None,
    select: bool = True,
) -> HeldTable:
    """``data`` as party ``owner``'s table over ``spec``, wherever it is held: a DataFrame
    (IDs in ``owner.id_column``, of the declared ``id_type``) or an EncodedTable (IDs in
    ``ids``) encoded into memory, and binned by ``bins`` for the paper pipeline
    (``select=False``); a table held elsewhere checked (the select pipeline only)."""
    name = owner.name
    if isinstance(data, HeldTable):
        if not select or bins is not None:
            raise ConfigError(
                f"a {type(data).__name__} runs the select pipeline only (secure_pipeline='select')."
            )
        return data.check(name, spec, owner.id_column, id_type)
    table, ids = own_table(name, spec, data, owner.id_column, ids)
    if not select:
        assert bins is not None  # checked against the plan by the caller
        table = bin_table(table, bins)
    elif bins is not None:
        raise ConfigError("bins are an input of the paper pipeline (secure_pipeline='paper').")
    typed = id_type if isinstance(data, pd.DataFrame) else ""  # not fingerprints
    memory = MemoryTable(table, record_fingerprints(ids, typed, owner.id_column))
    return memory.check(name, spec, owner.id_column)


def value_counts(
    data: Input, spec: DomainSpec, owner: Owner, id_type: str = ""
) -> Callable[[], list[np.ndarray]] | None:
    """How to count every code of each of ``spec``'s columns over the records' values: at
    once for a DataFrame (which is not kept), where the table is held, when called, for a
    table held elsewhere; None for codes, which hold no values."""
    if isinstance(data, pd.DataFrame):
        counts = frame_counts(data, spec)
        return lambda: counts
    if isinstance(data, HeldTable):
        table = data.check(owner.name, spec, owner.id_column, id_type)
        return lambda: table.one_way(spec)
    return None


def open_records(table: HeldTable, spec: DomainSpec, plan: SecurePlan, owner: Owner) -> Records:
    """``table``'s records on their way to the run's row order: by buckets for equal record
    sets, by the deal's slots for partial ones (:mod:`vertimrf.party.records.layout`)."""

    def buckets() -> Records:
        return Buckets(table, spec, plan, owner)

    def slots(noise: RegionNoise) -> Records:
        return Slots(table, spec, plan, owner, noise)

    return plan.sets.choose(buckets, slots)
