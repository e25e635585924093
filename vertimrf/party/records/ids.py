"""64-bit fingerprints of record IDs, the message each party hashes under the
shared keys; design notes in docs/design/party.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from vertimrf.errors import RecordIDError

# A column of record IDs, one per row: all integers or all text.
RecordIds = np.ndarray | pd.Series | pd.Index | Sequence[int] | Sequence[str]

_N_EXAMPLES = 3
_EXAMPLE_CHARS = 40
_STRING_HASH_KEY = "0123456789123456"  # pandas' default key, pinned so a pandas change is visible
_INT_KINDS = {"integer"}
_STR_KINDS = {"string"}


def _rows(mask: np.ndarray) -> str:
    rows = np.flatnonzero(mask)
    shown = ", ".join(str(int(r)) for r in rows[:_N_EXAMPLES])
    return f"{shown}, ..." if rows.size > _N_EXAMPLES else shown


def _show(value: object) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= _EXAMPLE_CHARS else text[: _EXAMPLE_CHARS - 3] + "..."


def _as_series(ids: RecordIds) -> pd.Series:
    if isinstance(ids, pd.Series | pd.Index | pd.api.extensions.ExtensionArray):
        series = pd.Series(ids).reset_index(drop=True)
    elif isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            raise RecordIDError(
                f"Record IDs must be one-dimensional (one ID per row); got shape {ids.shape}."
            )
        series = pd.Series(ids, copy=False)
    elif isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise RecordIDError(
            f"Record IDs must be a column (array, list or Series); got {type(ids).__name__}."
        )
    else:
        series = pd.Series(list(ids))  # pandas keeps a list mixing int and str as object
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(series.cat.categories.dtype)
    return series


def _check_missing(series: pd.Series, values: np.ndarray) -> None:
    missing = series.isna().to_numpy().copy()
    if values.dtype == object or values.dtype.kind == "U":
        present = np.flatnonzero(~missing)
        missing[present[values[present] == ""]] = True
    if missing.any():
        raise RecordIDError(
            f"{int(missing.sum())} of {missing.size} record IDs are missing (None, NaN or empty) "
            f"at rows {_rows(missing)}. Every record needs an ID: drop or fill these rows first."
        )


def _int_fingerprints(series: pd.Series) -> np.ndarray:
    dtype = series.dtype
    if isinstance(dtype, pd.api.extensions.ExtensionDtype):
        values = series.to_numpy(dtype=np.uint64 if dtype.kind == "u" else np.int64)
    else:
        values = series.to_numpy()
        if values.dtype == object:
            try:
                values = np.array(values.tolist(), dtype=np.int64)
            except OverflowError:
                try:
                    values = np.array(values.tolist(), dtype=np.uint64)
                except OverflowError:
                    raise RecordIDError(
                        "Integer record IDs must fit in 64 bits (int64 or uint64); give larger "
                        "IDs as text (e.g. with a letter prefix)."
                    ) from None
    return int_fingerprints(values)


def int_fingerprints(values: np.ndarray) -> np.ndarray:
    """Fingerprints (n,) uint64 of integer record IDs: each ID modulo 2**64 (no checks)."""
    if values.dtype.kind == "u":
        return values.astype(np.uint64)
    return values.astype(np.int64).view(np.uint64)


def text_fingerprints(values: np.ndarray) -> np.ndarray:
    """Fingerprints (n,) uint64 of text record IDs (no checks)."""
    objects = values if values.dtype == object else values.astype(object)
    return pd.util.hash_array(
        objects, encoding="utf8", hash_key=_STRING_HASH_KEY, categorize=False
    ).astype(np.uint64, copy=False)


def _check_unique(fingerprints: np.ndarray, values: np.ndarray) -> None:
    shared = pd.Series(fingerprints).duplicated(keep=False).to_numpy()
    if not shared.any():
        return
    rows = np.flatnonzero(shared)
    sub = pd.DataFrame({"fp": fingerprints[rows], "id": values[rows]})
    same_id = sub["id"].duplicated(keep=False).to_numpy()
    if same_id.any():
        dup_rows = rows[same_id]
        dup_values = pd.unique(values[dup_rows])
        examples = ", ".join(_show(v) for v in dup_values[:_N_EXAMPLES])
        more = ", ..." if dup_values.size > _N_EXAMPLES else ""
        raise RecordIDError(
            f"{dup_rows.size} rows carry {dup_values.size} duplicated record ID(s) "
            f"(e.g. {examples}{more}). Each record must have exactly one row: deduplicate or "
            "aggregate these rows first."
        )
    collided = np.zeros(fingerprints.size, dtype=bool)
    collided[rows] = True
    raise RecordIDError(
        f"{rows.size} distinct record IDs share a 64-bit fingerprint (rows {_rows(collided)}); "
        "this is a hash collision (probability about n**2 / 2**65). Rename one of these IDs."
    )


def _not_typed(column: str, id_type: str, row: int, value: object, fix: str) -> RecordIDError:
    return RecordIDError(
        f"ID column {column!r}, row {row} (counting from 0 after the header): {_show(value)} "
        f"is not {id_type} as the config's id_type declares; {fix}"
    )


def typed_fingerprints(
    ids: RecordIds, id_type: str, column: str = "id", first_row: int = 0
) -> np.ndarray:
    """Fingerprints (n,) uint64 of record IDs of the declared ``id_type``, every row checked
    (the rows counted from ``first_row``; no duplicate check, see
    :func:`record_fingerprints`). "integer": an integer, a whole number (7.0) or text of one
    ("7", "007", "7.0", "+7") is that integer, 64 bits at most; "text": text as written, an
    integer as its decimal digits. RecordIDError (one line: row, column, value, fix) for a
    missing ID or one of another type."""
    series = _as_series(ids)
    values = series.to_numpy()
    _check_missing(series, values)
    kind = pd.api.types.infer_dtype(values, skipna=False)
    if id_type == "text":
        if kind in _STR_KINDS:
            return text_fingerprints(values)
        bad = ~np.array([isinstance(v, str | int | np.integer) for v in values.tolist()])
        bad |= np.array([isinstance(v, bool | np.bool_) for v in values.tolist()])
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise _not_typed(
                column, "text", first_row + row, values[row],
                "store the IDs as text (e.g. a string column in Parquet), or declare "
                "--id-type integer when every party's IDs are integers.",
            )  # fmt: skip
        return text_fingerprints(np.array([str(v) for v in values.tolist()], dtype=object))
    if kind == "integer" or (values.dtype.kind in "iu"):
        return _int_fingerprints(series)
    text = series.astype(str).str.strip()
    whole = text.str.fullmatch(r"[+-]?[0-9]+(?:\.0*)?").to_numpy(dtype=bool)
    if kind in ("boolean",) or values.dtype.kind == "b":
        whole[:] = False
    if not whole.all():
        row = int(np.flatnonzero(~whole)[0])
        raise _not_typed(
            column, "integer", first_row + row, values[row],
            "fix this row's ID, or declare --id-type text (at every party: the same ID "
            "written the same way).",
        )  # fmt: skip
    digits = text.str.replace(r"\.0*$", "", regex=True).str.lstrip("+")
    return _int_fingerprints(pd.Series([int(d) for d in digits.tolist()], dtype=object))


def record_fingerprints(ids: RecordIds, id_type: str = "", column: str = "id") -> np.ndarray:
    """Fingerprints (n,) uint64 of a column of unique int or str record IDs, or of IDs of
    the declared ``id_type`` (:func:`typed_fingerprints`) in ``column``.

    Raises :class:`RecordIDError` for missing, duplicated or unsupported IDs and for
    fingerprint collisions; the message counts the rows affected and shows a few examples.
    """
    series = _as_series(ids)
    if series.size == 0:
        return np.empty(0, dtype=np.uint64)
    values = series.to_numpy()
    if id_type:
        typed = typed_fingerprints(series, id_type, column)
        _check_unique(typed, values)
        return typed
    _check_missing(series, values)
    dtype = series.dtype
    if dtype == np.dtype(object):
        inferred = pd.api.types.infer_dtype(values, skipna=False)
        if inferred not in _INT_KINDS | _STR_KINDS:
            raise RecordIDError(
                f"Record IDs must all be integers or all be text; got values of kind "
                f"{inferred!r}. Make every value of the ID column an integer, or every one text."
            )
        is_str = inferred in _STR_KINDS
    elif isinstance(dtype, pd.StringDtype) or dtype.kind in "UT":
        is_str = True
    elif dtype.kind in "iu":
        is_str = False
    else:
        raise RecordIDError(
            f"Record IDs of type {dtype} are not supported; give the ID column integers "
            "(written without a decimal point) or text."
        )
    fingerprints = text_fingerprints(values) if is_str else _int_fingerprints(series)
    _check_unique(fingerprints, values)
    return fingerprints
