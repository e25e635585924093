"""Records in temporary part files: a table too large for memory is scattered to F part files
by a key's range, each part then read and sorted alone
(:mod:`vertimrf.party.records.file_table`, :mod:`vertimrf.party.records.slot_file`), and read
back a range of records at a time."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from vertimrf.errors import ConfigError

__all__ = ["part_count", "read_rows", "row_chunks", "scatter"]

_MAX_PARTS = 1 << 9  # files open at once in a scatter pass


def part_count(max_rows: int, part_rows: int) -> int:
    """The number of parts F: the least power of two with max_rows / F <= part_rows, at
    most 512."""
    parts = 1
    while parts < _MAX_PARTS and parts * part_rows < max_rows:
        parts *= 2
    return parts


def scatter(rows: np.ndarray, part: np.ndarray, files: Sequence[IO[bytes]]) -> None:
    """Append each record of ``rows`` (a structured array) to the file of its ``part``,
    keeping their order within a part."""
    order = np.argsort(part, kind="stable")
    rows = rows[order]
    bounds = np.searchsorted(part[order], np.arange(len(files) + 1))
    for i in np.flatnonzero(np.diff(bounds)):
        rows[bounds[i] : bounds[i + 1]].tofile(files[int(i)])


def row_chunks(
    path: Path, dtype: np.dtype, width: int, i0: int, i1: int, rows: int
) -> Iterator[np.ndarray]:
    """Records i0:i1 of a row-order file (``width`` values of ``dtype`` each), ``rows`` at a
    time."""
    with open(path, "rb") as fh:
        for j in range(i0, i1, rows):
            yield read_rows(fh, dtype, width, j, min(i1, j + rows))


def read_rows(fh: io.BufferedReader, dtype: np.dtype, width: int, i0: int, i1: int) -> np.ndarray:
    """Records i0:i1 of an open row-order file, as an (i1 - i0) x ``width`` array."""
    fh.seek(i0 * width * dtype.itemsize)
    out = np.empty((i1 - i0, width), dtype)
    if out.size and fh.readinto(out.data.cast("B")) != out.nbytes:
        raise ConfigError("a temporary file of the aligned rows was cut short; run the step again.")
    return out
