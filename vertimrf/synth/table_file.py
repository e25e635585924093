"""Synthetic tables written to a file chunk by chunk: CSV or Parquet, by the path's suffix.

A writer holds one chunk at a time, so its memory does not grow with the number of rows.
CSV gets its header once (by pandas), then each chunk's rows (pandas' bytes, built by Arrow:
:func:`~vertimrf.synth.csv_rows.write_rows`); Parquet gets one row group per chunk, all
under one schema fixed up front from the spec (so every chunk has the same column types).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.io import atomic_open, refuse_existing
from vertimrf.synth.csv_rows import write_rows

FORMATS = {".csv": "csv", ".parquet": "parquet"}
# Codes -> frame, as the model decodes them (default: the spec's TableEncoder).
Decode = Callable[[np.ndarray], pd.DataFrame]


def table_format(path: str | os.PathLike) -> str:
    """``"csv"`` or ``"parquet"``, by the suffix of ``path``; ConfigError for any other."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"{path}: write the synthetic table to a .csv or a .parquet file (by its suffix)."
        )
    return fmt


def check_table_file(
    path: str | os.PathLike, spec: DomainSpec, decode: Decode | None = None
) -> str:
    """The format of ``path`` once it is known to be writable for ``spec``'s columns as
    ``decode`` gives them (for Parquet: pyarrow is installed and every column has one
    type), before any work."""
    fmt = table_format(path)
    if fmt == "parquet":
        _parquet_schema(spec, decode)
    return fmt


def write_table(
    fh: IO[bytes],
    fmt: str,
    chunks: Iterable[pd.DataFrame],
    spec: DomainSpec,
    decode: Decode | None = None,
) -> int:
    """Write ``chunks`` (frames of ``spec``'s columns, as ``decode`` gives them) to the
    open binary file ``fh`` as one table in ``fmt``; the number of rows written."""
    if fmt == "csv":
        return _write_csv(fh, chunks, spec, decode)
    if fmt == "parquet":
        return _write_parquet(fh, chunks, spec, decode)
    raise ConfigError(f"unknown table format {fmt!r}: use 'csv' or 'parquet'.")


def save_table(
    path: str | os.PathLike,
    chunks: Iterable[pd.DataFrame],
    spec: DomainSpec,
    *,
    overwrite: bool = False,
    decode: Decode | None = None,
) -> int:
    """Write ``chunks`` (as ``decode`` gives them) to ``path`` (its suffix picks CSV or
    Parquet) atomically: a temporary file in the same folder, renamed over ``path`` once
    complete, so a failure leaves no file. An existing ``path`` is refused unless
    ``overwrite``. The number of rows written."""
    fmt = check_table_file(path, spec, decode)
    refuse_existing(path, overwrite)
    with atomic_open(path, "wb") as fh:
        return write_table(fh, fmt, chunks, spec, decode)


def _values(spec: DomainSpec, decode: Decode | None) -> pd.DataFrame:
    """A frame holding every value of every column (as a sample holds them)."""
    sizes = np.asarray(spec.domain.sizes, dtype=np.int64)
    rows = np.arange(int(sizes.max(initial=1)), dtype=np.int64)
    codes = np.minimum(rows[:, None], sizes[None, :] - 1)
    return (TableEncoder(spec).decode if decode is None else decode)(codes)


def _write_csv(
    fh: IO[bytes], chunks: Iterable[pd.DataFrame], spec: DomainSpec, decode: Decode | None
) -> int:
    _values(spec, decode).iloc[:0].to_csv(fh, index=False)  # the header, as pandas writes it
    rows = 0
    for chunk in chunks:
        write_rows(fh, chunk)
        rows += len(chunk)
        del chunk  # not held while the next chunk is drawn
    return rows


def _write_parquet(
    fh: IO[bytes], chunks: Iterable[pd.DataFrame], spec: DomainSpec, decode: Decode | None
) -> int:
    schema = _parquet_schema(spec, decode)
    rows = 0
    with pq.ParquetWriter(fh, schema) as writer:
        for chunk in chunks:
            table = pa.Table.from_pandas(chunk, schema=schema, preserve_index=False)
            writer.write_table(table, row_group_size=max(1, len(chunk)))
            rows += len(chunk)
            del chunk, table  # not held while the next chunk is drawn
    return rows


def _parquet_schema(spec: DomainSpec, decode: Decode | None) -> Any:
    """The Arrow schema of ``spec``'s sampled columns."""
    values = _values(spec, decode)
    for name in values.columns:
        try:
            pa.array(values[name])
        except (pa.ArrowException, TypeError, ValueError):
            raise ConfigError(
                f"column {name!r} mixes value types (e.g. numbers and text), which Parquet "
                "cannot hold in one column; write a .csv file."
            ) from None
    return pa.Schema.from_pandas(values, preserve_index=False)
