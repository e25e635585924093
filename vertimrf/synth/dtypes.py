"""Synthetic frames in the pandas dtypes of the frame a model was
fitted on; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import CATEGORICAL, DATETIME, ColumnSpec, DomainSpec
from vertimrf.errors import DomainError

CATEGORY = "category"
ORDERED = "category (ordered)"

Cast = Callable[[pd.Series], pd.Series]


def column_dtypes(frame: pd.DataFrame, spec: DomainSpec) -> dict[str, str]:
    """The dtype of each of ``spec``'s columns that ``frame`` holds, by name: ``"category"``,
    ``"category (ordered)"``, or the name of a boolean, integer, float or text dtype
    (``"int64"``, ``"Int64"``, ...)."""
    out = {}
    for name in spec.names:
        if name in frame.columns:
            dtype = frame[name].dtype
            if spec[name].kind == DATETIME:
                if _times(dtype) or pd.api.types.is_string_dtype(dtype):
                    out[name] = str(dtype)
            elif isinstance(dtype, pd.CategoricalDtype):
                out[name] = ORDERED if dtype.ordered else CATEGORY
            elif _supported(dtype):
                out[name] = str(dtype)
    return out


def check_dtypes(dtypes: object, spec: DomainSpec) -> dict[str, str]:
    """``dtypes`` (as :func:`column_dtypes` gives them) checked against ``spec``;
    DomainError naming the first that does not fit."""
    if not isinstance(dtypes, Mapping):
        raise DomainError(f"dtypes must map column names to dtype names; got {dtypes!r}.")
    for name, dtype in dtypes.items():
        if name not in spec.names:
            raise DomainError(f"dtypes name column {name!r}, which the spec does not have.")
        _cast(spec[name], dtype, empty=False)
    return dict(dtypes)


def typed(
    decode: Callable[..., pd.DataFrame],
    spec: DomainSpec,
    dtypes: Mapping[str, str],
    *,
    absent: bool = False,
) -> Callable[..., pd.DataFrame]:
    """``decode`` (codes, or codes and rng) followed by the cast of each column named in
    ``dtypes``, or declared ``integer`` in ``spec`` (to ``int64`` where ``dtypes`` names no
    dtype or a float one, as a column of whole numbers with empty cells reads; in a model
    over the union of records, ``absent``, every column can be empty)."""
    whole = {c.name: "int64" for c in getattr(spec, "columns", ()) if c.integer}
    kept = {n: d for n, d in dtypes.items() if n not in whole or not _float(d)}
    dtypes = {**whole, **kept}
    if not dtypes:
        return decode
    casts = {
        name: _cast(spec[name], dtype, empty=absent or spec[name].missing)
        for name, dtype in dtypes.items()
    }

    def run(codes: np.ndarray, rng: np.random.Generator | None = None) -> pd.DataFrame:
        frame = decode(codes) if rng is None else decode(codes, rng)  # a one-argument decode
        out = frame.copy(deep=False)  # not assign(**names): a column may be named "self"
        for name, cast in casts.items():
            out[name] = cast(frame[name])
        return out

    return run


def _float(dtype: str) -> bool:
    """``dtype`` names a float dtype (not a category's name)."""
    return dtype not in (CATEGORY, ORDERED) and pd.api.types.is_float_dtype(
        pd.api.types.pandas_dtype(dtype)
    )


def _times(dtype: Any) -> bool:
    """``dtype`` is a ``datetime64`` without a time zone."""
    return pd.api.types.is_datetime64_dtype(dtype) and not isinstance(dtype, pd.DatetimeTZDtype)


def _supported(dtype: Any) -> bool:
    return (
        pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_integer_dtype(dtype)
        or pd.api.types.is_float_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _cast(col: ColumnSpec, dtype: object, *, empty: bool) -> Cast:
    """How a decoded column of ``col`` becomes ``dtype`` (nullable when it can be ``empty``);
    DomainError if the column's values cannot."""
    if dtype in (CATEGORY, ORDERED):
        if col.kind != CATEGORICAL:
            raise DomainError(f"column {col.name!r} is numeric: it cannot be a category.")
        kind = pd.CategoricalDtype(list(col.values), ordered=dtype == ORDERED)
        return lambda s: s.astype(kind)
    try:
        want = pd.api.types.pandas_dtype(dtype)
    except TypeError:
        want = None
    if col.time is not None:
        return _text_or_times(col, want, dtype)
    if want is None or not _supported(want):
        raise DomainError(f"column {col.name!r}: {dtype!r} is not a dtype a sample can take.")
    if pd.api.types.is_bool_dtype(want):
        if col.kind != CATEGORICAL or not set(col.values) <= {False, True}:
            raise DomainError(f"column {col.name!r} has values that are not booleans.")
        target = pd.BooleanDtype() if empty else want
        return lambda s: s.astype(target)
    if pd.api.types.is_integer_dtype(want):
        return _integers(col, want, empty)
    return lambda s: s.astype(want)


def _text_or_times(col: ColumnSpec, want: Any, dtype: object) -> Cast:
    """How the text a datetime column ``col`` decodes to becomes ``want``: text as it is,
    ``datetime64`` read in the column's format."""
    if want is not None and _times(want):
        fmt = col.time.format if col.time is not None else None
        return lambda s: pd.to_datetime(s, format=fmt).astype(want)
    if want is not None and pd.api.types.is_string_dtype(want):
        return lambda s: s.astype(want)
    raise DomainError(
        f"column {col.name!r} is datetime: {dtype!r} is not a dtype its sample can take "
        "(text or datetime64)."
    )


def _integers(col: ColumnSpec, want: Any, empty: bool) -> Cast:
    """Integers of dtype ``want`` (64-bit if the column's values do not fit it)."""
    if col.kind == CATEGORICAL:
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in col.values):
            raise DomainError(f"column {col.name!r} has categories that are not integers.")
        least, most = int(min(col.values)), int(max(col.values))
    else:
        starts, ends = integer_bins(col)
        least, most = int(starts[0]), int(ends[-1])
    base = np.dtype(getattr(want, "numpy_dtype", want))
    info = np.iinfo(base)
    if not info.min <= least <= most <= info.max:
        base = np.dtype(np.int64)
    nullable = empty or isinstance(want, pd.api.extensions.ExtensionDtype)
    target: Any = f"{'U' if base.kind == 'u' else ''}Int{8 * base.itemsize}" if nullable else base
    if col.kind == CATEGORICAL:
        return lambda s: s.astype(target)
    lower, _, _ = col.bounds

    def run(s: pd.Series) -> pd.Series:
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        k = col.bin_of(np.nan_to_num(x, nan=lower))
        near = np.floor(x + 0.5)
        inside = starts[k] <= ends[k]
        v = np.where(inside, np.clip(near, starts[k], ends[k]), np.clip(near, least, most))
        return pd.Series(v, index=s.index, name=s.name).astype(target)

    return run


def integer_bins(col: ColumnSpec) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's least and greatest integer inside numeric ``col``'s bounds (least >
    greatest for a bin that holds none); DomainError if the bounds hold no integer."""
    lower, upper, bins = col.bounds
    first, last = int(np.ceil(lower)), int(np.floor(upper))
    if first > last:
        raise DomainError(
            f"column {col.name!r}: no integer lies in its bounds [{lower}, {upper}]; widen the "
            "bounds in the domain spec."
        )
    # the bin of every integer, found by binary search on the encoder's own bins: the least
    # integer of bin k is the first whose bin is >= k
    k = np.arange(bins)
    lo = np.full(bins, first, dtype=np.int64)
    hi = np.full(bins, last + 1, dtype=np.int64)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        below = col.bin_of(mid.astype(np.float64)) < k
        lo = np.where(below & (lo < hi), mid + 1, lo)
        hi = np.where(~below & (lo < hi), mid, hi)
    start = lo
    return start, np.append(start[1:] - 1, last)
