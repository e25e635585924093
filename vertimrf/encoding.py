"""The table encoder: DataFrames to compact integer codes over a spec's domain and back, with
one line naming the row, the column and the fix for a cell that does not fit."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from vertimrf.domain import (
    CATEGORICAL,
    NA_STRINGS,
    ColumnSpec,
    DomainSpec,
    EncodedTable,
    empty_cells,
    plain,
)
from vertimrf.errors import DomainError
from vertimrf.timecols import TimeAxis

if TYPE_CHECKING:
    import pandas as pd


class TableEncoder:
    """Maps a DataFrame to compact integer codes (n x d, uint8 or uint16) and back.

    Categorical values map to their index in the spec's category list; numeric values map to
    their bin (:meth:`ColumnSpec.bin_of`), and so do times, read in their column's format.
    Decoding returns categories exactly; for numeric columns, the bin midpoint (or a uniform
    draw inside the bin when ``rng`` is given); for datetime columns, text in their format.
    In a column declared ``missing``, an empty cell (NaN, None, pandas' NA or "") encodes to
    the column's missing code and decodes to NaN, pandas' marker for a missing value, which
    a CSV file writes as an empty cell and pandas reads back as NaN; a column of integer (or
    boolean) categories holding any is of object dtype, so its values still print as such.
    """

    def __init__(self, spec: DomainSpec) -> None:
        if not isinstance(spec, DomainSpec):
            raise DomainError(f"TableEncoder needs a DomainSpec, got {type(spec).__name__}.")
        self.spec = spec
        self.domain = spec.domain
        self.dtype = np.dtype(np.uint8 if max(self.domain.sizes) <= 256 else np.uint16)

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        """Codes of ``df``'s spec columns (any column order); raises on any value off the spec."""
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise DomainError(f"encode needs a pandas DataFrame, got {type(df).__name__}.")
        cols = [str(c) for c in df.columns]
        self.check_columns(cols)
        frame = df.set_axis(cols, axis=1)
        out = np.empty((len(df), len(self.spec)), dtype=self.dtype)
        for j, col in enumerate(self.spec.columns):
            out[:, j] = _encode_column(frame[col.name], col)
        return out

    def check_columns(self, columns: Sequence[str]) -> None:
        """DomainError unless ``columns`` are the spec's (in any order), with or without its
        ignored ones."""
        unknown = [c for c in columns if c not in self.spec.names and c not in self.spec.ignored]
        missing = [c for c in self.spec.names if c not in columns]
        if unknown or missing:
            raise DomainError(
                f"DataFrame columns do not match the spec: unknown {unknown}, missing {missing}. "
                "Drop or rename columns (e.g. the record-ID column) so they equal the spec's."
            )

    def table(self, df: pd.DataFrame) -> EncodedTable:
        """``df`` as an :class:`EncodedTable` over the spec's domain."""
        return EncodedTable(self.encode(df), self.domain)

    def decode(
        self,
        codes: np.ndarray,
        rng: np.random.Generator | None = None,
        within: Placement | None = None,
    ) -> pd.DataFrame:
        """DataFrame for ``codes`` (n x d); a numeric bin decodes to a value inside it as
        ``within`` places it (:mod:`vertimrf.within`; default uniform), or to its midpoint
        without ``rng``; a datetime bin to text in the column's format, of a time drawn
        uniformly inside it (:meth:`~vertimrf.timecols.TimeAxis.draw`), or of its start
        without ``rng``."""
        import pandas as pd

        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.spec):
            raise DomainError(f"codes must have shape (n, {len(self.spec)}); got {codes.shape}.")
        bad = (codes < 0) | (codes >= np.asarray(self.domain.sizes))
        if bad.any():
            j = int(np.argwhere(bad)[0][1])
            raise DomainError(
                f"codes of column {self.spec.names[j]!r} must be in 0..{self.domain.sizes[j] - 1}."
            )
        data = {}
        for j, col in enumerate(self.spec.columns):
            c = codes[:, j].astype(np.int64)
            empty = c == col.missing_code
            if col.kind == CATEGORICAL:
                index = pd.Index(list(col.values))
                if empty.any():  # NaN after the categories; integers stay integers (object)
                    exact = object if index.dtype.kind in "iub" else None
                    index = pd.Index([*index, np.nan], dtype=exact)
                data[col.name] = index[c]
            elif col.time is not None:  # text in the column's format, NaN where empty
                at = np.minimum(c, col.value_codes - 1)
                text = col.time.write(col.time.draw(col.edges, at, rng)).astype(object)
                text[empty] = np.nan
                data[col.name] = text
            else:
                at = np.minimum(c, col.value_codes - 1)  # the missing code: NaN below
                x = uniform_values(col, at, rng) if within is None else within.place(col, at, rng)
                data[col.name] = np.where(empty, np.nan, x) if empty.any() else x
        return pd.DataFrame(data)


class Placement(Protocol):
    """Where a decoded numeric value lies inside its bin (:mod:`vertimrf.within`): values for
    bins ``bins`` (int64, valid codes of the column's own values)."""

    @property
    def name(self) -> str: ...

    def place(
        self, col: ColumnSpec, bins: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray: ...


def uniform_values(
    col: ColumnSpec, bins: np.ndarray, rng: np.random.Generator | None
) -> np.ndarray:
    """A value drawn uniformly inside each of ``bins`` of ``col``; its midpoint without
    ``rng``."""
    edges = col.edges
    offset = 0.5 if rng is None else rng.random(len(bins))
    return edges[bins] + offset * (edges[bins + 1] - edges[bins])


def _encode_column(s: pd.Series, col: ColumnSpec) -> np.ndarray:
    import pandas as pd

    if col.kind == CATEGORICAL:
        values = s.to_numpy(dtype=object)
        codes = pd.Index(list(col.values)).get_indexer(pd.Index(values))
        if col.missing_code is not None:
            codes[empty_cells(values)] = col.missing_code
        bad = codes < 0
        if bad.any():
            nan = pd.isna(values) & bad
            if nan.any():
                raise _cell_error(col, values, nan, _EMPTY, _EMPTY_FIX)
            # A value that equals a category as text (1 against '1') is a type mismatch, as
            # when one bad cell makes a CSV column text: name a truly foreign value first.
            texts = {str(c) for c in col.values}
            as_text = np.fromiter((str(plain(v)) in texts for v in values[bad]), bool, bad.sum())
            foreign = bad.copy()
            foreign[bad] = ~as_text
            problem = f"is not one of its categories {_preview(col.values)}"
            if not foreign.any():
                twin = next(c for c in col.values if str(c) == str(plain(values[bad][0])))
                problem += f" (the spec's category is {twin!r}: the types differ)"
            raise _cell_error(
                col,
                values,
                foreign if foreign.any() else bad,
                problem,
                "change the data, or add the value to the column's categories in the domain spec",
            )
        return codes
    if col.time is not None:
        return _encode_times(s, col, col.time)
    x = _numbers(s, col)
    nan = np.isnan(x)
    if nan.any() and col.missing_code is None:
        raise _cell_error(col, x, nan, _EMPTY, _EMPTY_FIX)
    lower, upper, _ = col.bounds
    out = (x < lower) | (x > upper)
    if out.any():
        raise _cell_error(col, x, out, f"is outside its public bounds [{lower}, {upper}]", _WIDEN)
    return _bins(col, x, nan)


def _encode_times(s: pd.Series, col: ColumnSpec, axis: TimeAxis) -> np.ndarray:
    """The bins of datetime column ``col``'s cells; DomainError naming the first cell that
    is no time in the column's format, or outside its bins."""
    empty = empty_cells(s)
    if empty.any() and col.missing_code is None:
        raise _cell_error(col, s.to_numpy(dtype=object), empty, _EMPTY, _EMPTY_FIX)
    x, bad = axis.read(s, empty)
    if bad.any():
        fix = "fix the cell, or correct the column's format in the domain spec"
        problem = f"is not a time in the column's format {axis.format!r}"
        raise _cell_error(col, s.to_numpy(dtype=object), bad, problem, fix)
    lower, upper, _ = col.bounds
    out = (x < lower) | (x >= upper)
    if out.any():
        last = f"the {axis.unit}" if axis.step == 1 else "the bin"
        problem = (
            f"is outside its public bounds: from {axis.lower} to the end of {last} that "
            f"holds {axis.upper}"
        )
        raise _cell_error(col, s.to_numpy(dtype=object), out, problem, _WIDEN)
    return _bins(col, x, np.isnan(x))


def _bins(col: ColumnSpec, x: np.ndarray, nan: np.ndarray) -> np.ndarray:
    """The bin of each value ``x`` of ``col``, its missing code where ``nan``."""
    b = col.bin_of(np.where(nan, col.bounds[0], x))
    if col.missing_code is not None:
        b[nan] = col.missing_code
    return b


_EMPTY = "the cell is missing ({value}: empty, NaN or None)"
_EMPTY_FIX = (
    'declare "missing": true for the column in the domain spec (an empty cell is then a value of '
    "its own), or fill the cell or drop the row"
)
_WIDEN = "change the data, or widen the bounds in the domain spec"


def _numbers(s: pd.Series, col: ColumnSpec) -> np.ndarray:
    """The values of numeric column ``col`` as float64 (NaN where empty); a DomainError
    naming the first cell that holds no number, else the first that holds one as text (one
    cell that is no number makes pandas read a whole CSV column as text)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return s.to_numpy(dtype=np.float64, na_value=np.nan)
    values = s.to_numpy(dtype=object)
    empty = empty_cells(values)
    number = np.fromiter(
        (isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in values),
        dtype=bool,
        count=len(values),
    )
    text = np.fromiter((isinstance(v, str) for v in values), bool, len(values)) & ~empty
    reads = text.copy()  # text that reads as a number ("72.0"; not "nan")
    reads[text] = pd.notna(pd.to_numeric(pd.Series(values[text], dtype=object), errors="coerce"))
    bad = ~(number | reads | empty)
    if bad.any():
        na = isinstance(values[bad][0], str) and values[bad][0].strip() in NA_STRINGS
        problem = "is not a number" + (" (only an empty cell is missing)" if na else "")
        raise _cell_error(col, values, bad, problem, _number_fix(col))
    if reads.any():
        problem = "is not a number (it is text; the column is numeric in the domain spec)"
        fix = "give the column as numbers, or declare it categorical in the domain spec"
        raise _cell_error(col, values, reads, problem, fix)
    return np.where(empty, np.nan, values).astype(np.float64)


def _number_fix(col: ColumnSpec) -> str:
    """The fixes of a cell of numeric column ``col`` that holds no number."""
    empty = "empty it" if col.missing else 'empty it and declare "missing": true in the domain spec'
    return f"fix the cell, {empty}, or declare the column categorical in the domain spec"


def _cell_error(
    col: ColumnSpec, values: np.ndarray, bad: np.ndarray, problem: str, fix: str
) -> DomainError:
    """One line naming the column, the first bad value and its row (counting from 1, as in
    a CSV file after its header), how many rows are bad, and ``fix``, how to fix them.
    ``problem`` says what is wrong with the value, or with the cell where it holds
    ``{value}`` (the value's repr)."""
    import pandas as pd

    rows = np.flatnonzero(bad)
    first = rows[0]
    more = f"; {len(rows)} bad row{'s' * (len(rows) > 1)} in all"
    if len(rows) > 1:
        others = pd.unique(pd.Series(values[rows[1:]], dtype=object))[:3]
        more += f" (other values: {', '.join(repr(plain(v)) for v in others)})"
    value = repr(plain(values[first]))
    what = (
        problem.replace("{value}", value)
        if "{value}" in problem
        else f"the value {value} {problem}"
    )
    return DomainError(
        f"column {col.name!r}, row {first + 1} (counting from 1 after the header): {what}{more}; "
        f"{fix}."
    )


def _preview(cats: tuple, k: int = 6) -> str:
    shown = ", ".join(repr(c) for c in cats[:k])
    return f"[{shown}{', ...' if len(cats) > k else ''}] ({len(cats)} in all)"
