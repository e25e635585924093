"""A party's table read from a CSV or Parquet file in batches of rows, each
encoded at once; design notes in docs/design/party.md."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.dataset as ds

from vertimrf.domain import CATEGORICAL, DATETIME, ColumnSpec, DomainSpec, EncodedTable
from vertimrf.domain import NA_STRINGS as NA_STRINGS  # pandas' defaults: read here as text
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError
from vertimrf.party.records.frame import check_id_column, frame_table
from vertimrf.party.records.ids import (
    int_fingerprints,
    record_fingerprints,
    text_fingerprints,
    typed_fingerprints,
)

BATCH_ROWS = 65_536
# pyarrow parses a CSV file in blocks of this many bytes (its memory grows with them); a
# longer row makes the file unreadable to it, and pandas reads it whole.
_BLOCK_BYTES = 1 << 16
PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
# The only text a CSV file holds for a missing value: an empty cell (quoted or not).
_MISSING = ("",)
_INTEGER = r"^-?[0-9]{1,19}$"  # int64 for pandas and pyarrow, when in range
_SPAN = 1 << 20  # integer categories spanning more are matched by pandas in a Parquet file
_FLOAT_EXACT = 1 << 53  # every integer of smaller size is exact as a float64
_NUMBER = r"^-?(?:[0-9]{1,18}|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)$"
_SPACE = r"[ \t\n\v\f\r]*"
# Text that a number or boolean parser might take: anything else makes a CSV column text.
_NUMBER_LIKE = rf"(?i)^{_SPACE}[-+]?(?:[0-9.e+-]*|inf|infinity|nan|true|false){_SPACE}$"


class _UnreadableError(Exception):
    """pyarrow cannot read the CSV file as pandas does: pandas reads it whole."""


def check_row_count(what: str, value: object) -> None:
    """ConfigError unless ``value`` (the option ``what``, a number of rows) is a positive
    integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} must be a positive integer; got {value!r}.")


def input_format(path: str | os.PathLike) -> str:
    """``"parquet"`` for a directory (a Parquet dataset), a file named .parquet, .parq or .pq,
    or a file that starts with Parquet's magic bytes; else ``"csv"``."""
    p = Path(path)
    if p.is_dir():
        return "parquet"
    named = "parquet" if p.suffix.lower() in PARQUET_SUFFIXES else "csv"
    try:
        with open(p, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        what = "Parquet" if named == "parquet" else "CSV"
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}.") from None
    return "parquet" if magic == b"PAR1" else named


def read_frame(path: str | os.PathLike) -> pd.DataFrame:
    """The whole table at ``path`` (CSV or Parquet, see :func:`input_format`), its column
    names as text; ConfigError for a file that cannot be read."""
    if input_format(path) == "parquet":
        with _parquet_errors(path):
            frame = _dataset(path).to_table().to_pandas()
    else:
        frame = _pandas_csv(path)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def read_party_table(
    path: str | os.PathLike,
    spec: DomainSpec,
    id_column: str,
    *,
    party: str,
    batch_rows: int = BATCH_ROWS,
    id_type: str = "",
) -> tuple[EncodedTable, np.ndarray]:
    """Party ``party``'s table at ``path`` (``id_column`` and ``spec``'s columns), read and
    encoded ``batch_rows`` rows at a time: the EncodedTable over ``spec`` and the record IDs'
    fingerprints (:func:`~vertimrf.party.records.ids.record_fingerprints`; a party takes them as its
    ``ids``, since an unsigned 64-bit ID is its own fingerprint). The result and any error are
    those of :func:`read_frame` and :func:`~vertimrf.party.records.frame.frame_table`. A declared
    ``id_type`` (the config's) is checked on every ID as it is read."""
    check_row_count("batch_rows", batch_rows)
    source = _source(path)
    try:
        return _read(source, spec, id_column, party, batch_rows, id_type)
    except _UnreadableError:
        table, ids = frame_table(party, spec, read_frame(path), id_column)
        return table, record_fingerprints(ids, id_type, id_column)


class WholeTableNeededError(Exception):
    """The file's batches do not settle how pandas reads some column or the IDs: read the
    table whole (:func:`read_party_table`) to get pandas' codes or its error."""


class _Reader:
    """A party's table in ``source``, its columns checked at once and its batches encoded
    one at a time."""

    def __init__(self, source: _Csv | _Parquet, spec: DomainSpec, id_column: str, party: str):
        names = source.columns()
        encoder = TableEncoder(spec)
        try:
            check_id_column(party, names, id_column)
            encoder.check_columns([c for c in names if c != id_column])
        except DomainError:
            source.check_rows()  # as pandas, a file it cannot read says so first
            raise
        self.source, self.spec, self.id_column = source, spec, id_column
        self.dtype = encoder.dtype
        self.columns = [_Column(c, source.typed) for c in spec.columns]

    def batches(self, rows: int) -> Iterator[tuple[np.ndarray, pa.ChunkedArray]]:
        """Each batch's codes (a column being redone is left 0) and its raw IDs."""
        for batch in self.source.batches([self.id_column, *self.spec.names], rows):
            block = np.zeros((batch.num_rows, len(self.spec)), dtype=self.dtype)
            for j, column in enumerate(self.columns):
                codes = column.encode(batch.column(column.name))
                if codes is not None:
                    block[:, j] = codes
            yield block, batch.column(self.id_column)

    def unsettled(self) -> list[_Column]:
        return [column for column in self.columns if not column.settled()]


def _read(
    source: _Csv | _Parquet, spec: DomainSpec, id_column: str, party: str, rows: int,
    id_type: str,
) -> tuple[EncodedTable, np.ndarray]:  # fmt: skip
    reader = _Reader(source, spec, id_column, party)
    ids = _Ids(source.typed, id_type, id_column)
    rows_out = _Rows(len(spec), reader.dtype)
    for block, id_values in reader.batches(rows):
        ids.add(id_values)
        rows_out.append(block)
    codes = rows_out.array()
    redo = reader.unsettled()
    if redo:  # pandas reads these columns alone: its codes, or its error (in spec order)
        frame = source.pandas_columns([column.name for column in redo], len(codes))
        for column in redo:
            redone = column.encoder.encode(frame[[column.name]])
            codes[:, spec.names.index(column.name)] = redone[:, 0]
    fingerprints = ids.fingerprints()
    if fingerprints is None:  # pandas reads the IDs: their fingerprints, or its error
        fingerprints = record_fingerprints(
            source.pandas_columns([id_column], len(codes))[id_column], id_type, id_column
        )
    return EncodedTable(codes, spec.domain), fingerprints


def check_party_columns(
    path: str | os.PathLike, spec: DomainSpec, id_column: str, *, party: str
) -> None:
    """DomainError or ConfigError unless the table at ``path`` has ``id_column`` and every
    column of ``spec``, as :func:`read_party_table` says it (the header alone is read; a
    file that pyarrow cannot read is left to :func:`read_party_table`)."""
    source = _source(path)
    with contextlib.suppress(_UnreadableError):
        _Reader(source, spec, id_column, party)


def stream_party_table(
    path: str | os.PathLike,
    spec: DomainSpec,
    id_column: str,
    *,
    party: str,
    batch_rows: int = BATCH_ROWS,
    id_type: str = "",
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Party ``party``'s table at ``path`` one batch at a time: each batch's codes and its
    record IDs' fingerprints, as :func:`read_party_table` gives them for those rows. The
    columns are checked before the first batch. WholeTableNeededError (possibly after some
    batches) when a batch does not settle how pandas reads a column or the IDs, or the IDs
    hold a missing value; then :func:`read_party_table` gives the codes or pandas' error.
    IDs repeated across batches are not caught here. A declared ``id_type`` is checked on
    every ID (RecordIDError naming the row)."""
    check_row_count("batch_rows", batch_rows)
    source = _source(path)
    try:
        reader = _Reader(source, spec, id_column, party)
    except _UnreadableError:
        raise WholeTableNeededError from None
    ids = _StreamIds(source.typed, id_type, id_column)
    try:
        for block, id_values in reader.batches(batch_rows):
            if not all(column.ok for column in reader.columns):
                raise WholeTableNeededError
            yield block, ids.fingerprints(id_values)
    except _UnreadableError:
        raise WholeTableNeededError from None
    if reader.unsettled() or not ids.settled():
        raise WholeTableNeededError


class _Column:
    """One spec column's batches: each converted and encoded while the batches settle the
    column's pandas type and hold only values of the spec."""

    def __init__(self, spec: ColumnSpec, typed: bool) -> None:
        self.name = spec.name
        self.encoder = TableEncoder(DomainSpec([spec]))
        self.typed = typed
        self.missing = spec.missing  # an empty cell is a value: a batch may hold nulls
        # Categories matched as floats where a null makes pandas' whole column floats.
        self.float_matched = spec.missing and spec.kind == CATEGORICAL
        self.kind = "time" if spec.kind == DATETIME else "number"
        if spec.kind == CATEGORICAL:
            values = [v for v in spec.values if v is not None]
            if all(isinstance(v, str) for v in values):
                self.kind = "text"
            elif all(_is_int(v) for v in spec.values):
                self.kind = "integer"
            else:  # mixed categories: pandas settles their matches
                self.kind = "mixed"
        self.ok = typed or self.kind != "mixed"
        self.text_seen = False  # a CSV column of text categories: pandas reads it as text
        self._lookup: tuple[pa.Array, np.ndarray, np.ndarray] | None = None
        self._ints: tuple[int, np.ndarray] | None = None  # Parquet's integers
        if not typed and self.kind in ("text", "integer") and not self.float_matched:
            self._lookup = _lookup(spec, self.kind)
        elif typed and self.kind == "integer" and not self.float_matched:
            self._ints = _int_lookup(spec)  # None: pandas matches them

    def settled(self) -> bool:
        """Every batch was encoded as pandas encodes the whole column."""
        return self.ok and (self.typed or self.kind != "text" or self.text_seen)

    def encode(self, values: pa.ChunkedArray) -> np.ndarray | None:
        """The codes of one batch of the column, or None once the column is to be redone."""
        if not self.ok:
            return None
        codes = self._looked_up(values)
        if codes is not None:
            return codes
        series = self._series(values)
        if series is None:
            self.ok = False
            return None
        try:
            return self.encoder.encode(pd.DataFrame({self.name: series}))[:, 0]
        except DomainError:
            self.ok = False
            return None

    def _looked_up(self, values: pa.ChunkedArray) -> np.ndarray | None:
        """A CSV batch whose every cell is one of the column's categories, text or integer,
        as codes by arrow's lookup (:func:`_lookup`), or a Parquet batch of integers by a
        table from integer to code: the encoder's codes, without pandas; None for any
        other batch, which takes the encoder's path (its codes or its error)."""
        if self._ints is not None and not values.null_count:
            return _int_codes(values, *self._ints, self.encoder.dtype)
        if self._lookup is None or values.null_count or not pa.types.is_string(values.type):
            return None  # a CSV's columns are read as text
        categories, positions, number_like = self._lookup
        found = pc.index_in(values, value_set=categories)
        if found.null_count:
            return None
        codes = positions[found.to_numpy()]
        if self.kind == "text" and not self.text_seen:  # a category no number parser takes
            self.text_seen = not number_like[np.unique(codes)].all()
        return codes.astype(self.encoder.dtype)

    def _series(self, values: pa.ChunkedArray) -> pd.Series | None:
        if self.typed:
            if values.null_count and not (_is_text(values.type) or self._nulls_kept(values.type)):
                return None  # a null turns a whole pandas column of numbers to floats
            return self._exact(values.to_pandas())
        if self.kind == "text":
            self.text_seen = self.text_seen or _has_text(values)
            return values.to_pandas()
        if self.kind == "time":  # text read in the column's format, whatever pandas' type
            return values.to_pandas()
        if values.null_count and not self.missing:
            return None
        if self.kind == "integer":
            array = _cast(values, _INTEGER, pa.int64())
        else:
            array = _cast(values, _NUMBER, pa.float64())
        return None if array is None else self._exact(pd.Series(array))

    def _nulls_kept(self, t: pa.DataType) -> bool:
        """A batch of type ``t`` with nulls converts as pandas' whole column (floats, NaN
        where null; times as times, NaT where null), and its nulls are a value of the column."""
        numbers = pa.types.is_integer(t) or pa.types.is_floating(t)
        return self.missing and (numbers or self.kind == "time")

    def _exact(self, series: pd.Series) -> pd.Series | None:
        """``series``, or None when a null elsewhere could make pandas round its numbers
        (integers of 2**53 or more as floats) before they are matched to categories."""
        if not self.float_matched or not pd.api.types.is_numeric_dtype(series):
            return series
        return None if ((series >= _FLOAT_EXACT) | (series <= -_FLOAT_EXACT)).any() else series


class _Ids:
    """The record IDs' fingerprints, batch by batch; None where pandas is to read them."""

    def __init__(self, typed: bool, id_type: str = "", column: str = "id") -> None:
        self.typed, self.id_type, self.column = typed, id_type, column
        self.rows = 0  # the rows read so far
        self.ok = True
        self.integers = True  # every CSV batch so far holds integers only
        self.text_seen = False
        self.pending: list[pa.ChunkedArray] = []  # the CSV text while it may be integers
        self.done = _Rows(None, np.uint64)

    def add(self, values: pa.ChunkedArray) -> None:
        if self.id_type:  # declared: every row checked (RecordIDError), whatever the file
            self.done.append(_declared(values, self.id_type, self.column, self.rows))
            self.rows += len(values)
        elif values.null_count or not self.ok:
            self.ok = False
        elif self.typed:
            self._add_typed(values)
        else:
            if self.integers and _cast(values, _INTEGER, pa.int64()) is not None:
                self.pending.append(values)  # integers: no text here
                return
            self.text_seen = self.text_seen or _has_text(values)
            self.integers = False
            self.pending.append(values)
            self._flush(_text_fingerprints)

    def _flush(self, fingerprints: Callable[[pa.ChunkedArray], np.ndarray]) -> None:
        """The pending text's fingerprints, the text let go batch by batch."""
        self.pending.reverse()
        while self.pending:
            self.done.append(fingerprints(self.pending.pop()))

    def _add_typed(self, values: pa.ChunkedArray) -> None:
        fingerprints = _typed_fingerprints(values)
        if fingerprints is None:  # pandas says what is wrong with these IDs
            self.ok = False
        else:
            self.done.append(fingerprints)

    def fingerprints(self) -> np.ndarray | None:
        if not self.ok:
            return None
        if not self.typed and not self.id_type:
            if self.integers:
                self._flush(lambda v: int_fingerprints(pc.cast(v, pa.int64()).to_numpy()))
            elif not self.text_seen:
                return None  # numbers that are not all integers: pandas' type
        fingerprints = self.done.array()
        ordered = np.sort(fingerprints)
        if (ordered[1:] == ordered[:-1]).any():
            return None  # pandas names the duplicated IDs
        return fingerprints


class _StreamIds:
    """The record IDs' fingerprints batch by batch, as :class:`_Ids` gives them for the whole
    column; WholeTableNeededError once a batch shows that pandas reads them otherwise."""

    def __init__(self, typed: bool, id_type: str = "", column: str = "id") -> None:
        self.typed, self.id_type, self.column = typed, id_type, column
        self.rows = 0  # the rows read so far
        self.integers: bool | None = None  # every CSV batch so far holds integers only
        self.text_seen = False

    def fingerprints(self, values: pa.ChunkedArray) -> np.ndarray:
        if self.id_type:  # declared: every row checked (RecordIDError), whatever the file
            self.rows += len(values)
            return _declared(values, self.id_type, self.column, self.rows - len(values))
        if values.null_count:
            raise WholeTableNeededError
        if self.typed:
            fingerprints = _typed_fingerprints(values)
            if fingerprints is None:
                raise WholeTableNeededError
            return fingerprints
        if self.integers is not False:
            integers = _cast(values, _INTEGER, pa.int64())
            if integers is not None:  # integers: no text here
                self.integers = True
                return int_fingerprints(integers)
            if self.integers:  # integers before, not now: pandas reads every ID as text
                raise WholeTableNeededError
            self.integers = False
        self.text_seen = self.text_seen or _has_text(values)
        return _text_fingerprints(values)

    def settled(self) -> bool:
        """The batches' fingerprints are those of the whole column (integers, or text that
        pandas reads as text)."""
        return bool(self.typed or self.id_type or self.integers is not False or self.text_seen)


def _declared(values: pa.ChunkedArray, id_type: str, column: str, first_row: int) -> np.ndarray:
    """The fingerprints of IDs of the declared ``id_type`` (CSV text or Parquet's types),
    every row checked (see :func:`~vertimrf.party.records.ids.typed_fingerprints`)."""
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    return typed_fingerprints(values.to_pandas(), id_type, column, first_row)


def _typed_fingerprints(values: pa.ChunkedArray) -> np.ndarray | None:
    """The fingerprints of typed IDs (integers or text); None for any other type."""
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if pa.types.is_integer(values.type):
        return int_fingerprints(values.to_numpy())
    if _is_text(values.type):
        return _text_fingerprints(values)
    return None


def _lookup(spec: ColumnSpec, kind: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The column's categories as arrow text (an integer as its plain decimal text, which
    pandas reads as that integer; the empty cell's left out), each one's code, and whether
    each category (by code) is number-like text, which pandas would not read as text (for
    :meth:`_Column.settled`)."""
    kept = [(code, v) for code, v in enumerate(spec.values) if v is not None]
    values = [v if kind == "text" else str(int(v)) for _, v in kept]
    categories = pa.array(values, pa.string())
    positions = np.array([code for code, _ in kept], np.int64)
    number_like = np.ones(len(spec.values), bool)
    if kind == "text":
        like = pc.match_substring_regex(categories, _NUMBER_LIKE).to_numpy(zero_copy_only=False)
        number_like[positions] = like
    return categories, positions, number_like


def _int_lookup(spec: ColumnSpec) -> tuple[int, np.ndarray] | None:
    """The least integer category and a table from each integer above it to its code (-1
    for none); None when the categories span more than :data:`_SPAN` integers."""
    ints = np.array([int(v) for v in spec.values], np.int64)
    low, high = int(ints.min()), int(ints.max())
    if high - low >= _SPAN:
        return None
    table = np.full(high - low + 1, -1, np.int32)
    table[ints - low] = np.arange(len(ints))
    return low, table


def _int_codes(
    values: pa.ChunkedArray, low: int, table: np.ndarray, dtype: np.dtype
) -> np.ndarray | None:
    """The codes of a batch of typed integers that are all categories (:func:`_int_lookup`);
    None for any other batch (floats, text, an integer that is no category, or unsigned
    64-bit, which int64 cannot hold)."""
    t = values.type
    if not pa.types.is_integer(t) or t == pa.uint64():
        return None
    at = values.to_numpy().astype(np.int64) - low
    if len(at) and (at.min() < 0 or at.max() >= len(table)):
        return None
    codes = table[at]
    return None if (codes < 0).any() else codes.astype(dtype)


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _matches(values: pa.ChunkedArray, pattern: str) -> bool:
    """Every value of ``values`` matches ``pattern``, which must match every string of 1 to
    18 ASCII digits: a batch of those is checked without the pattern, 10x faster."""
    if pc.all(pc.ascii_is_decimal(values), min_count=0).as_py():
        longest = pc.max(pc.utf8_length(values)).as_py()
        if longest is None or longest <= 18:
            return True
    return bool(pc.all(pc.match_substring_regex(values, pattern), min_count=0).as_py())


def _has_text(values: pa.ChunkedArray) -> bool:
    """Some value of ``values`` is text that no number or boolean parser takes."""
    number_like = pc.match_substring_regex(values, _NUMBER_LIKE)
    return bool(pc.any(pc.invert(number_like)).as_py())


def _cast(values: pa.ChunkedArray, pattern: str, to: pa.DataType) -> np.ndarray | None:
    """``values`` as ``to`` if every one matches ``pattern`` and converts (an integer in
    range, a number whose exponent fits); else None, for pandas to say what it makes of them."""
    if not _matches(values, pattern):
        return None
    try:
        return pc.cast(values, to).to_numpy()
    except pa.ArrowInvalid:
        return None


def _text_fingerprints(values: pa.ChunkedArray) -> np.ndarray:
    return text_fingerprints(values.to_numpy(zero_copy_only=False).astype(object, copy=False))


class _Rows:
    """Rows appended to one array that grows in place, so that the rows are never held
    twice (as batches and as their concatenation)."""

    def __init__(self, width: int | None, dtype: type | np.dtype) -> None:
        self._tail = () if width is None else (width,)
        self._rows = np.empty((0, *self._tail), dtype=dtype)
        self._n = 0

    def append(self, rows: np.ndarray) -> None:
        end = self._n + len(rows)
        if end > len(self._rows):  # a quarter more: the new space is zeroed, so touched
            self._rows.resize((max(end, len(self._rows) * 5 // 4), *self._tail), refcheck=False)
        self._rows[self._n : end] = rows
        self._n = end

    def array(self) -> np.ndarray:
        """The rows appended (the object takes no more)."""
        self._rows.resize((self._n, *self._tail), refcheck=False)
        return self._rows


def _exact(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """``batches`` cut and joined into tables of ``rows`` rows (the last may be shorter)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        while batch.num_rows:
            take = min(rows - count, batch.num_rows)
            pending.append(batch.slice(0, take))
            batch = batch.slice(take)
            count += take
            if count == rows:
                yield pa.Table.from_batches(pending)
                pending, count = [], 0
    if count:
        yield pa.Table.from_batches(pending)


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _pandas_csv(
    path: str | os.PathLike, *, nrows: int | None = None, usecols: list[str] | None = None
) -> pd.DataFrame:
    """pandas.read_csv, each column's type inferred from all of its values, only an empty
    cell missing."""
    try:
        return pd.read_csv(
            path, low_memory=False, nrows=nrows, usecols=usecols, keep_default_na=False,
            na_values=list(_MISSING),
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read CSV {path}: {_line(exc)}") from None


class _Csv:
    """A CSV file, read by pyarrow as text, batch by batch."""

    typed = False

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        self._names: list[str] = []

    def columns(self) -> list[str]:
        try:
            header = _pandas_csv(self.path, nrows=0)
        except ConfigError:
            raise _UnreadableError from None
        self._names = [str(c) for c in header.columns]
        return self._names

    def batches(self, names: Sequence[str], rows: int) -> Iterator[pa.Table]:
        convert = pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in self._names},
            null_values=list(_MISSING),
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )
        parse = pa_csv.ParseOptions(newlines_in_values=True)
        try:
            read = pa_csv.ReadOptions(block_size=_BLOCK_BYTES)
            reader = pa_csv.open_csv(self.path, read, parse, convert)
            if reader.schema.names != self._names:  # a header pandas reads otherwise
                raise _UnreadableError
            yield from _exact(reader, rows)
        except (pa.ArrowException, OSError, ValueError):
            raise _UnreadableError from None

    def check_rows(self) -> None:
        """_UnreadableError unless pyarrow parses every row."""
        for _ in self.batches(self._names, BATCH_ROWS):
            pass

    def pandas_columns(self, names: list[str], rows: int) -> pd.DataFrame:
        frame = _pandas_csv(self.path, usecols=names)
        if len(frame) != rows:  # pyarrow and pandas split the rows otherwise
            raise _UnreadableError
        return frame


def _source(path: str | os.PathLike) -> _Csv | _Parquet:
    """The file at ``path``, read by pyarrow batch by batch."""
    return _Parquet(path) if input_format(path) == "parquet" else _Csv(path)


def _dataset(path: str | os.PathLike) -> ds.Dataset:
    """The Parquet file or dataset directory at ``path``, as pandas.read_parquet opens it."""
    partitioning = ds.HivePartitioning.discover(infer_dictionary=True)
    return ds.dataset(path, format="parquet", partitioning=partitioning)


@contextlib.contextmanager
def _parquet_errors(path: str | os.PathLike) -> Iterator[None]:
    try:
        yield
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(
            f"cannot read Parquet {path} ({_line(exc)}); give a whole Parquet file, a folder "
            "of them, or a CSV file."
        ) from None


class _Parquet:
    """A Parquet file or dataset directory, read by pyarrow batch by batch."""

    typed = True

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        with _parquet_errors(path):
            self.dataset = _dataset(path)

    def columns(self) -> list[str]:
        with _parquet_errors(self.path):
            frame = self.dataset.schema.empty_table().to_pandas()
        return [str(c) for c in frame.columns]

    def batches(self, names: Sequence[str], rows: int) -> Iterator[pa.Table]:
        with _parquet_errors(self.path):
            scanner = self.dataset.scanner(  # no read-ahead: one row group held at a time
                columns=list(names), batch_size=rows, use_threads=False, batch_readahead=0,
                fragment_readahead=0,
            )  # fmt: skip
            yield from _exact(scanner.to_batches(), rows)

    def check_rows(self) -> None:
        """Nothing: a Parquet file's columns are read from its footer, its rows when read."""

    def pandas_columns(self, names: list[str], rows: int) -> pd.DataFrame:
        with _parquet_errors(self.path):
            frame = self.dataset.to_table(columns=names).to_pandas()
        frame.columns = [str(c) for c in frame.columns]
        return frame
