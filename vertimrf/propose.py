"""What ``vertimrf spec`` proposes for a table: a spec read off the data (NOT differentially
private, and it says so), with a line for each column a user would not want as proposed."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING

import numpy as np

from vertimrf import timecols
from vertimrf.domain import (
    CATEGORICAL,
    DATETIME,
    NUMERIC,
    ColumnSpec,
    DomainSpec,
    PrivacyWarning,
    SpecWarning,
    empty_cells,
    plain,
)
from vertimrf.errors import DomainError
from vertimrf.timecols import TimeAxis

if TYPE_CHECKING:
    import pandas as pd


def infer_spec(df: pd.DataFrame, *, numeric_bins: int = 16, max_categories: int = 64) -> DomainSpec:
    """Read a spec off the data. NOT differentially private: the result leaks the data.

    Columns of dates (datetime64, or text that one date format reads) become datetime
    (:func:`proposed_axis`: the data's first and last unit as bounds); other columns with at
    most ``max_categories`` distinct values become categorical; other numeric columns become
    numeric with the observed min/max as bounds (``integer`` when every value is a whole
    number); other text columns, and columns of times
    of day with more values, are ignored (``"type": "ignore"``). A column with empty cells
    (NaN, None or "") gets ``missing``. A :class:`SpecWarning` names each column a user
    would likely not want as proposed: ignored for its many values, dates or times in no one
    format, numbers with a few cells of text, a different value in every row (a record ID),
    one value in every row. Prefer a public spec.
    """
    import pandas as pd

    warnings.warn(
        "infer_spec reads categories and bounds from the data itself, so the resulting domain "
        "is NOT differentially private. Use a public DomainSpec for real releases.",
        PrivacyWarning,
        stacklevel=2,
    )
    cols, ignored = [], []
    for name in df.columns:
        empty = empty_cells(df[name])
        s = df[name][~empty]
        if empty.any() and s.dtype == object:
            s = s.infer_objects()  # the numbers of a column that held "" too
        uniq = np.asarray(pd.unique(s))
        missing = bool(empty.any())
        numeric = pd.api.types.is_numeric_dtype(s)
        timed = pd.api.types.is_datetime64_any_dtype(s)
        dated = timed or _dates_or_times(uniq)
        axis = proposed_axis(s, uniq) if dated and len(uniq) else None
        ids = len(df) >= _ID_ROWS and len(uniq) == len(df) and (s.dtype.kind in "iu" or not numeric)
        ids = ids and axis is None  # a time in every row is no record ID
        many = len(uniq) > max_categories
        if axis is not None:
            cols.append(ColumnSpec(name, DATETIME, missing=missing, time=axis))
            proposed = f"datetime by {axis.unit}"
        elif timed or (many and (ids or not numeric)):
            ignored.append(name)
            proposed = '"type": "ignore"'
        elif not many or not numeric:
            cats = sorted(uniq.tolist(), key=lambda v: (str(type(v)), v))
            cols.append(
                ColumnSpec(name, CATEGORICAL, tuple(plain(v) for v in cats), missing=missing)
            )
            proposed = f"categorical with {len(cats):,} categor{'y' if len(cats) == 1 else 'ies'}"
        else:
            lo, hi = float(s.min()), float(s.max())
            values = pd.to_numeric(s, errors="coerce").dropna().to_numpy(np.float64)
            whole = bool(np.all(np.mod(values, 1.0) == 0))
            cols.append(
                ColumnSpec(
                    name, NUMERIC, None, lo, hi if hi > lo else lo + 1, numeric_bins, missing,
                    integer=whole,
                )
            )  # fmt: skip
            proposed = "numeric"
        odd = _odd_column(
            df[name], empty, uniq, numeric, dated and not axis, ids, max_categories, bool(axis)
        )
        if odd:
            what, fix = odd
            message = f"column {name!r} {what}: proposed as {proposed}; {fix}."
            warnings.warn(message, SpecWarning, stacklevel=2)
    return DomainSpec(cols, ignored)


# A text value that starts as a date or a time does: 2013-01-01, 1/31/2013, 31.01.13, 05:30.
_DATE_TIME = re.compile(r"\s*(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2})")
_ID_ROWS = 20  # fewer rows than this cannot tell a record ID from a column of few values


def proposed_axis(s: pd.Series, uniq: np.ndarray) -> TimeAxis | None:
    """The time axis :func:`infer_spec` proposes for the non-empty cells ``s`` of distinct
    values ``uniq`` (NOT DP: read off the data), or None when no one format reads them.

    The format: ``"%Y-%m-%d"`` (or with ``" %H:%M:%S"`` when a time is not midnight) for
    datetime64 values, else the one pandas guesses that reads every distinct text (a
    trailing ``Z`` kept as a literal). The resolution: the coarsest of second, minute,
    hour, day, month and year that every value is a whole number of. The unit: the finest
    one of at most 400 bins (:func:`~vertimrf.timecols.proposed_unit`). The bounds: the
    starts of the first and the last value's units."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(s):
        stamps = s.dt.tz_localize(None) if isinstance(s.dtype, pd.DatetimeTZDtype) else s
        x = timecols.seconds(stamps.to_numpy())
        fmt = "%Y-%m-%d" if (x % 86400 == 0).all() else "%Y-%m-%d %H:%M:%S"
    else:
        found = _text_format(uniq)
        if found is None:
            return None
        fmt, x = found
    first, last = float(x.min()), float(x.max())
    resolution = next(
        u for u in ("year", "month", "day", "hour", "minute", "second")
        if u == "second" or (timecols.floor(x, u) == x).all()
    )  # fmt: skip
    unit = timecols.proposed_unit(first, last, resolution)
    start, end = timecols.floor(np.array([first, last]), unit)
    if not timecols.divides(resolution, unit):
        resolution = unit
    try:
        return TimeAxis(
            timecols.bound_text(start), timecols.bound_text(end), unit, 1, fmt, resolution
        )
    except DomainError:  # a format that does not read back what it writes
        return None


def _text_format(uniq: np.ndarray) -> tuple[str, np.ndarray] | None:
    """The format pandas guesses from one of the first 20 texts ``uniq`` that reads all of
    them, and their times as seconds; or None."""
    import pandas as pd
    from pandas.tseries.api import guess_datetime_format

    texts = pd.Series(uniq, dtype=object)
    if not all(isinstance(v, str) for v in uniq):
        return None
    zulu = bool(texts.str.endswith("Z").all())
    tried = set()
    for value in uniq[:20]:
        for dayfirst in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fmt = guess_datetime_format(value, dayfirst=dayfirst)
            if fmt is None or fmt in tried:
                continue
            tried.add(fmt)
            if zulu and fmt.endswith("%z"):
                fmt = fmt[:-2] + "Z"
            if "%z" in fmt or "%Z" in fmt:
                continue
            read = pd.to_datetime(texts, format=fmt, errors="coerce")
            if read.notna().all():
                return fmt, timecols.seconds(read.to_numpy())
    return None


def _dates_or_times(uniq: np.ndarray) -> bool:
    """Every one of the distinct values ``uniq`` (up to 1,000 of them tried) is text that
    reads as a date or a time."""
    import pandas as pd

    tried = uniq[:1000]
    if not len(tried) or not all(isinstance(v, str) and _DATE_TIME.match(v) for v in tried):
        return False
    read = pd.to_datetime(pd.Series(tried, dtype=object), errors="coerce", format="mixed")
    return bool(read.notna().all())


def _cells(n: int) -> str:
    return "1 cell holds" if n == 1 else f"{n:,} cells hold"


def _odd_column(
    column: pd.Series,
    empty: np.ndarray,
    uniq: np.ndarray,
    numeric: bool,
    dated: bool,
    ids: bool,
    max_categories: int,
    timed: bool = False,
) -> tuple[str, str] | None:
    """What a user would likely not want in the proposal of ``column`` (``empty`` where its
    cells are empty, ``uniq`` its distinct other values; ``dated``: they are dates or times
    in no one format, ``ids``: they are distinct in every row, ``timed``: it is proposed as
    datetime), and how to fix it; or None."""
    import pandas as pd

    if timed:
        return _one_value(uniq, empty)
    if dated:
        return (
            f"holds dates or times (e.g. {plain(uniq[0])!r}) that no one date format reads",
            "to have it proposed as datetime, write every cell as a date, or a date and a time, "
            "in one format (e.g. 2013-01-01 05:00:00)",
        )
    values = column.to_numpy(dtype=object)
    text = np.fromiter((isinstance(v, str) for v in values), bool, len(values)) & ~empty
    if not numeric and text.any():
        reads = pd.notna(pd.to_numeric(pd.Series(values, dtype=object), errors="coerce"))
        words = text & ~np.asarray(reads)
        if words.sum() * 2 < (~empty).sum():
            row = int(np.flatnonzero(words)[0])
            return (
                f"holds numbers, but {_cells(int(words.sum()))} none (the first: row {row + 1}, "
                f"counting from 1 after the header, {values[row]!r})",
                "fix those cells (only an empty cell is missing), and it is proposed as numeric",
            )
    if ids:
        return (
            "holds a different value in every row, like a record ID",
            "a record ID is never in the spec: give it as the ID column (--id-column), or "
            "leave it out (--drop)",
        )
    if len(uniq) > max_categories and not numeric:
        return (
            f"has {len(uniq):,} distinct text values, more than max categories ({max_categories})",
            "to keep it, list its categories in the spec, raise --max-categories, or group "
            "its values in the table",
        )
    return _one_value(uniq, empty)


def _one_value(uniq: np.ndarray, empty: np.ndarray) -> tuple[str, str] | None:
    if len(uniq) == 1 and not empty.any():
        return (
            f"holds one value ({plain(uniq[0])!r}) in every row",
            "it tells nothing: leave it out (--drop), unless other tables may hold other values",
        )
    return None
