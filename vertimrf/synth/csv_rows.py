"""A frame's rows as CSV, byte for byte as pandas' ``to_csv`` writes them,
built by Arrow; design notes in docs/design/synth.md."""

from __future__ import annotations

import csv
import functools
import io
import os
from collections.abc import Iterable
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from vertimrf.kernels.float_text import repr_floats

_TEXT = pa.large_string()


def write_rows(fh: IO[bytes], frame: pd.DataFrame) -> None:
    """Write ``frame``'s rows to ``fh`` as ``frame.to_csv(fh, index=False, header=False)``
    does."""
    cells = [] if frame.empty else [_cells(frame.iloc[:, j]) for j in range(frame.shape[1])]
    if not cells or any(c is None for c in cells):
        frame.to_csv(fh, index=False, header=False)
        return
    if len(cells) == 1:
        cells[0] = pc.if_else(pc.equal(cells[0], ""), _scalar('""'), cells[0])
    cells[-1] = pc.binary_join_element_wise(cells[-1], _scalar(os.linesep), _scalar(""))
    rows = pc.binary_join_element_wise(*cells, _scalar(","))
    offsets = np.frombuffer(rows.buffers()[1], np.int64)
    fh.write(rows.buffers()[2][int(offsets[rows.offset]) : int(offsets[rows.offset + len(rows)])])


def _cells(column: pd.Series) -> pa.Array | None:
    """The text of each cell of ``column`` (large_string, no nulls), or None for a dtype
    written by pandas itself."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if dtype.categories.dtype.kind in "mM":
            return None
        shown = pd.Categorical.from_codes(np.arange(len(dtype.categories)), dtype=dtype)
        texts = pa.array(_fields(np.asarray(shown.astype(object))), _TEXT)
        codes = column.cat.codes.to_numpy()
        text = pc.take(texts, pa.array(codes, mask=codes < 0))
    elif dtype == np.float64:
        text = _floats(column.to_numpy())
    else:
        try:
            array = pa.array(column, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            return None
        if pa.types.is_integer(array.type):
            text = pc.cast(array, _TEXT)
        elif pa.types.is_boolean(array.type):
            text = pc.if_else(array, _scalar("True"), _scalar("False"))
        elif pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            coded = pc.dictionary_encode(pc.cast(array, _TEXT))
            text = pc.take(_quoted(coded.dictionary), coded.indices)
        else:
            return None
    return pc.fill_null(text, _scalar(""))


def _floats(values: np.ndarray) -> pa.Array:
    """float64 ``values`` as ``repr`` writes them; NaN empty."""
    shortest = pc.cast(pa.array(values, from_pandas=True), _TEXT)
    n = len(shortest)
    buffers = shortest.buffers()
    offsets = np.frombuffer(buffers[1], np.int64)[shortest.offset : shortest.offset + n + 1]
    data = np.empty(0, np.uint8) if buffers[2] is None else np.frombuffer(buffers[2], np.uint8)
    out = np.empty(data.size + 24 * n, np.uint8)
    ends = np.empty(n + 1, np.int64)
    size = repr_floats(data, offsets, out, ends)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(ends), pa.py_buffer(out[:size]))


def _quoted(texts: pa.Array) -> pa.Array:
    """``texts`` quoted where the csv module quotes them (quotes inside doubled)."""
    needs = pc.match_substring_regex(texts, _special())
    if not pc.any(needs).as_py():
        return texts
    quote = _scalar('"')
    doubled = pc.replace_substring(texts, '"', '""')
    return pc.if_else(needs, pc.binary_join_element_wise(quote, doubled, quote, _scalar("")), texts)


@functools.cache
def _special() -> str:
    """A regex class of the characters that make the csv module quote a cell."""
    chars = ',"\r\n'
    quoted = [c for c, text in zip(chars, _fields(list(chars)), strict=True) if text != c]
    return "[" + "".join(f"\\x{ord(c):02x}" for c in quoted) + "]"


def _fields(values: Iterable[object]) -> list[str]:
    """Each value as the csv module writes it in a cell of a row, in the dialect of pandas'
    ``to_csv``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=os.linesep)
    out = []
    for value in values:
        writer.writerow([value, ""])  # not alone in its row: an empty value stays empty
        out.append(buf.getvalue()[: -1 - len(os.linesep)])
        buf.seek(0)
        buf.truncate()
    return out


def _scalar(text: str) -> pa.Scalar:
    return pa.scalar(text, _TEXT)
