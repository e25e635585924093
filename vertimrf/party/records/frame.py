"""A party's table in memory: its columns encoded over the spec, its record IDs, and the
digest its kept records and keyed streams are bound to."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from vertimrf.domain import Domain, DomainSpec, EncodedTable, warn_small_table
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.party.records.ids import RecordIds
from vertimrf.protocol.bins import BinMap

if TYPE_CHECKING:
    from vertimrf.party.records.aligned import HeldTable


def sha256_parts(*parts: bytes) -> str:
    """SHA-256 of length-prefixed ``parts`` (hex)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def table_digest(table: EncodedTable, fingerprints: np.ndarray) -> str:
    """SHA-256 of a party's records: their ID fingerprints and codes, in input order."""
    codes = np.ascontiguousarray(table.codes)
    return sha256_parts(
        np.ascontiguousarray(fingerprints, "<u8").tobytes(),
        str(codes.dtype).encode(),
        str(codes.shape).encode(),
        codes.tobytes(),
    )


def bin_table(table: EncodedTable, bins: Mapping[str, BinMap]) -> EncodedTable:
    """``table`` with each binned column's codes replaced by their bins."""
    names, sizes = table.domain.names, table.domain.sizes
    out = table.codes.copy()
    for c, m in bins.items():
        j = names.index(c)
        out[:, j] = m.value_to_bin[table.codes[:, j]]
    new = [bins[c].n_bins if c in bins else u for c, u in zip(names, sizes, strict=True)]
    return EncodedTable(out, Domain(tuple(names), tuple(new)))


def own_table(
    name: str,
    spec: DomainSpec,
    data: pd.DataFrame | EncodedTable | HeldTable,
    id_column: str,
    ids: RecordIds | None,
) -> tuple[EncodedTable, RecordIds]:
    """Party ``name``'s columns as an EncodedTable over ``spec``, and its rows' record IDs
    (from ``ids`` for an EncodedTable, from ``id_column`` for a DataFrame)."""
    domain = spec.domain
    if isinstance(data, EncodedTable):
        if data.domain != domain:
            raise DomainError(
                f"party {name!r}: the table's domain {data.domain} is not the config's {domain}."
            )
        if ids is None:
            raise DomainError(f"party {name!r}: an EncodedTable needs ids=....")
        warn_small_table(len(data), stacklevel=4)
        return data, ids
    if not isinstance(data, pd.DataFrame):
        raise DomainError(
            f"data must be a DataFrame or an EncodedTable; got {type(data).__name__} (a table "
            "held in a file or on Dask runs method secure's select pipeline only: read it "
            "into memory for this method)."
        )
    check_id_column(name, list(data.columns), id_column)
    warn_small_table(len(data), stacklevel=4)
    return frame_table(name, spec, data, id_column)


def check_id_column(name: str, columns: list, id_column: str) -> None:
    """DomainError naming party ``name``'s ``columns`` unless ``id_column`` is one of them."""
    if id_column not in columns:
        raise DomainError(
            f"party {name!r}: no record-ID column {id_column!r}; columns are "
            f"{columns}; name the ID column (--id-column, or id_column in Python)."
        )


def frame_table(
    name: str, spec: DomainSpec, data: pd.DataFrame, id_column: str
) -> tuple[EncodedTable, pd.Series]:
    """Party ``name``'s DataFrame ``data`` as an EncodedTable over ``spec``, and its
    ``id_column``."""
    check_id_column(name, list(data.columns), id_column)
    return TableEncoder(spec).table(data.drop(columns=[id_column])), data[id_column]
