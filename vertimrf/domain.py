"""Public domains: attribute names and sizes, column specifications, and the table encoder.

A :class:`Domain` is the integer view every engine works on (attribute ``i`` takes codes
``0..sizes[i]-1``). A :class:`DomainSpec` is the user-facing description of each column
(categories or public numeric bounds, and whether an empty cell is a value of its own), and
a :class:`TableEncoder` maps DataFrames to codes and back. Domains are public knowledge:
nothing here reads them off private data except :func:`infer_spec`, which warns loudly that
its result is not differentially private.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np

from vertimrf import timecols
from vertimrf.errors import DomainError
from vertimrf.io import atomic_write_text, read_json
from vertimrf.timecols import TimeAxis

if TYPE_CHECKING:  # imported where a table is read or written: the protocol needs no pandas
    import pandas as pd


@dataclass(frozen=True)
class Domain:
    """Ordered attribute names with their domain sizes (codes ``0..size-1``)."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        names = tuple(str(x) for x in self.names)
        sizes = tuple(int(s) for s in self.sizes)
        if len(names) != len(sizes):
            raise DomainError(
                f"Domain has {len(names)} names but {len(sizes)} sizes; give one size per name."
            )
        if len(set(names)) != len(names):
            dup = sorted({x for x in names if names.count(x) > 1})
            raise DomainError(f"Domain attribute names must be unique; repeated: {dup}.")
        bad = [(n, s) for n, s in zip(names, sizes, strict=True) if s < 1]
        if bad:
            raise DomainError(f"Domain sizes must be >= 1; got {bad}.")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "sizes", sizes)

    @classmethod
    def from_sizes(cls, sizes: Sequence[int]) -> Domain:
        """Domain with attribute names ``"0".."d-1"``."""
        return cls(tuple(str(i) for i in range(len(sizes))), tuple(sizes))

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Position of attribute ``name``."""
        try:
            return self.names.index(str(name))
        except ValueError:
            raise DomainError(
                f"Unknown attribute {name!r}; the domain has {list(self.names)}."
            ) from None

    def size(self, attrs: Iterable[int] | None = None) -> int:
        """Number of cells of the sub-domain over attribute indices ``attrs`` (all if None)."""
        idx = range(len(self.sizes)) if attrs is None else attrs
        out = 1
        for i in idx:
            out *= self.sizes[i]
        return out

    def shape(self, attrs: Iterable[int]) -> tuple[int, ...]:
        """Table shape of the sub-domain over attribute indices ``attrs``."""
        return tuple(self.sizes[i] for i in attrs)

    def project(self, attrs: Iterable[int]) -> Domain:
        """Sub-domain over attribute indices ``attrs`` (in the given order)."""
        attrs = list(attrs)
        return Domain(tuple(self.names[i] for i in attrs), tuple(self.sizes[i] for i in attrs))

    @property
    def offsets(self) -> np.ndarray:
        """Start of each attribute's block in a flat concatenation of all value slots."""
        return np.concatenate(([0], np.cumsum(self.sizes)[:-1])).astype(np.int64)


@dataclass(frozen=True)
class EncodedTable:
    """A table as integer codes over a :class:`Domain`: the one table type inside vertimrf.

    ``codes[:, j]`` holds codes ``0..domain.sizes[j] - 1`` of attribute ``domain.names[j]``
    (like mbi's ``Dataset``). Attribute names matter only at the edges (the public API and
    messages); inside, tables travel as codes plus their domain.
    """

    codes: np.ndarray
    domain: Domain

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise DomainError(f"domain must be a Domain; got {type(self.domain).__name__}.")
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or codes.shape[1] != len(self.domain):
            raise DomainError(
                f"codes must have shape (n, {len(self.domain)}) for the domain; got {codes.shape}."
            )
        if not np.issubdtype(codes.dtype, np.integer):
            raise DomainError(f"codes must be integers; got dtype {codes.dtype}.")
        if codes.size:
            bad = (codes.min(axis=0) < 0) | (codes.max(axis=0) >= np.asarray(self.domain.sizes))
            if bad.any():
                names = [self.domain.names[j] for j in np.flatnonzero(bad)]
                raise DomainError(f"columns {names} hold codes outside 0..size-1 of the domain.")
        object.__setattr__(self, "codes", codes)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def select(self, names: Sequence[str]) -> EncodedTable:
        """The table of the attributes ``names`` (in that order)."""
        idx = [self.domain.index(n) for n in names]
        return EncodedTable(self.codes[:, idx], self.domain.project(idx))


CATEGORICAL = "categorical"
NUMERIC = "numeric"
DATETIME = "datetime"  # binned like a numeric column, on seconds since 1970 (vertimrf.timecols)
IGNORE = "ignore"  # a spec file's column left out of the domain, wherever it is read
# pandas.read_csv's default missing-value strings. vertimrf reads none of them as missing
# (only an empty cell is), so a numeric cell holding one is named as not a number.
NA_STRINGS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip
_MAX_CODES = 65536
# A numeric column's bin edges: equal width, the user's cut points, log-spaced, DP quantiles.
EQUAL, CUTS, LOG, QUANTILE = "equal", "cuts", "log", "quantile"
SCALES = (EQUAL, CUTS, LOG, QUANTILE)


@dataclass(frozen=True)
class ColumnSpec:
    """Public description of one column.

    A categorical column has an ordered list of categories (code i is ``categories[i]``).
    A numeric column has public ``lower``/``upper`` bounds cut into ``bins`` bins by its
    ``scale`` (see :data:`SCALES`): equal width (the default); the user's own interior
    ``cuts`` (``bins`` is then their number + 1); ``"log"``, edges evenly spaced in
    log(x - lower + 1), for positive heavy tails; or ``"quantile"``, DP quantile cuts that the
    column's party measures at run time (charged to the run's ledger; :meth:`with_cuts`
    gives the column with them). Bin ``b`` holds the values in [edge b, edge b+1); the upper
    bound lands in the last bin. With ``missing``, an empty cell (NaN, None or "") is one
    more value, coded :attr:`missing_code`: right after the column's own values, so every
    engine sees an ordinary categorical value.

    A datetime column has its public :class:`~vertimrf.timecols.TimeAxis` as ``time``: bins
    of whole units (days, months, ...) between ISO bounds, and the strftime format of its
    cells. Its ``lower``, ``upper``, ``bins`` and ``cuts`` are derived from it: the bins'
    edges as seconds since 1970, so it bins as a numeric column with those cut points.
    """

    name: str
    kind: str
    categories: tuple | None = None
    lower: float | None = None
    upper: float | None = None
    bins: int | None = None
    missing: bool = False
    scale: str = EQUAL
    cuts: tuple[float, ...] | None = None
    time: TimeAxis | None = None
    integer: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))
        if not isinstance(self.integer, bool) or self.integer and self.kind != NUMERIC:
            raise DomainError(
                f"column {self.name!r}: 'integer' is true or false, and true for a numeric "
                f"column only; got {_brief(self.integer)} for a {self.kind} column."
            )
        if not isinstance(self.missing, bool):
            raise DomainError(
                f"column {self.name!r}: 'missing' must be true or false, "
                f"got {_brief(self.missing)}."
            )
        if self.time is not None and self.kind != DATETIME:
            raise DomainError(f"column {self.name!r} is {self.kind}: it takes no time axis.")
        if self.kind == CATEGORICAL:
            cats = tuple(self.categories or ())
            if not cats:
                raise DomainError(f"column {self.name!r}: a categorical column needs categories.")
            if len(set(cats)) != len(cats):
                raise DomainError(f"column {self.name!r}: categories must be distinct.")
            if self.missing and empty_cells(np.array(cats, dtype=object)).any():
                raise DomainError(
                    f'column {self.name!r}: with "missing": true an empty cell is its own '
                    'value; drop null and "" from the categories.'
                )
            if self.scale != EQUAL or self.cuts is not None:
                raise DomainError(
                    f"column {self.name!r} is categorical: it takes no scale nor cuts."
                )
            object.__setattr__(self, "categories", cats)
        elif self.kind == NUMERIC:
            if self.cuts is not None and self.scale == EQUAL:
                object.__setattr__(self, "scale", CUTS)
            if self.bins is None and self.scale == CUTS and self.cuts is not None:
                object.__setattr__(self, "bins", len(self.cuts) + 1)
            lo, hi, b = self.lower, self.upper, self.bins
            if lo is None or hi is None or b is None or not (float(lo) < float(hi)) or int(b) < 1:
                raise DomainError(
                    f"column {self.name!r}: a numeric column needs lower < upper and bins >= 1; "
                    f"got lower={lo}, upper={hi}, bins={b}."
                )
            object.__setattr__(self, "lower", float(lo))
            object.__setattr__(self, "upper", float(hi))
            object.__setattr__(self, "bins", int(b))
            self._check_scale()
        elif self.kind == DATETIME:
            self._set_time_bins()
        else:
            raise DomainError(
                f"column {self.name!r}: unknown type {self.kind!r}; use "
                f"{CATEGORICAL!r}, {NUMERIC!r} or {DATETIME!r}."
            )
        if self.size > _MAX_CODES:
            raise DomainError(
                f"column {self.name!r} has {self.size} codes; at most {_MAX_CODES} are supported."
            )

    def _set_time_bins(self) -> None:
        """A datetime column's bounds, bins and cut points, from its time axis."""
        if not isinstance(self.time, TimeAxis):
            raise DomainError(
                f"column {self.name!r}: a datetime column needs its time axis (time=TimeAxis(...))."
            )
        if self.categories is not None:
            raise DomainError(f"column {self.name!r} is datetime: it takes no categories.")
        bins = self.time.bins
        if bins + self.missing > _MAX_CODES:
            raise DomainError(
                f"column {self.name!r} has {bins:,} bins of one {self.time.unit}; at most "
                f"{_MAX_CODES:,} are supported: take a longer unit or a larger step."
            )
        edges = self.time.edges()
        for key, value in (("lower", float(edges[0])), ("upper", float(edges[-1])),
                           ("bins", bins), ("scale", CUTS),
                           ("cuts", tuple(float(e) for e in edges[1:-1]))):  # fmt: skip
            object.__setattr__(self, key, value)

    def _check_scale(self) -> None:
        """DomainError unless the scale is known and its cuts fit the bounds and bins."""
        where = f"column {self.name!r}"
        if self.scale not in SCALES:
            raise DomainError(f"{where}: unknown scale {self.scale!r}; use one of {list(SCALES)}.")
        if self.cuts is None:
            if self.scale == CUTS:
                raise DomainError(f"{where}: scale 'cuts' needs the cut points ('cuts': [...]).")
            return
        if self.scale == LOG:
            raise DomainError(
                f"{where}: scale {self.scale!r} takes no 'cuts'; drop them, or drop the scale "
                "to use them."
            )
        try:
            cuts = tuple(float(c) for c in self.cuts)
        except (TypeError, ValueError):
            raise DomainError(f"{where}: 'cuts' must be a list of numbers.") from None
        lo, hi = float(self.lower or 0.0), float(self.upper or 0.0)
        if len(cuts) != self.bins - 1:  # type: ignore[operator]
            raise DomainError(
                f"{where}: {len(cuts)} cuts make {len(cuts) + 1} bins, not bins={self.bins}."
            )
        # the user's cuts rise strictly inside the bounds; DP quantile cuts may tie
        strict = self.scale == CUTS
        inside = all(lo < c < hi if strict else lo <= c <= hi for c in cuts)
        rising = all(a < b if strict else a <= b for a, b in zip(cuts, cuts[1:], strict=False))
        if not (inside and rising and all(math.isfinite(c) for c in cuts)):
            raise DomainError(
                f"{where}: 'cuts' must rise {'strictly ' * strict}inside the bounds "
                f"({lo:g}, {hi:g}); got {_brief(list(self.cuts))}."
            )
        object.__setattr__(self, "cuts", cuts)

    @property
    def resolved(self) -> bool:
        """False for a numeric column whose DP quantile cuts are not measured yet."""
        return not (self.scale == QUANTILE and self.cuts is None)

    def with_cuts(self, cuts: Sequence[float]) -> ColumnSpec:
        """This ``"quantile"`` column with its measured ``cuts`` (non-decreasing, inside the
        bounds, one fewer than the bins)."""
        if self.scale != QUANTILE:
            raise DomainError(f"column {self.name!r} is not cut at quantiles.")
        return dataclasses.replace(self, cuts=tuple(float(c) for c in cuts))

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges of a numeric column, lower bound first, upper last."""
        lower, upper, bins = self.bounds
        if self.cuts is not None:
            return np.array([lower, *self.cuts, upper])
        if self.scale == QUANTILE:
            raise DomainError(
                f"column {self.name!r}: its bins are DP quantile cuts, which its party measures "
                "at run time; they are not known yet."
            )
        k = np.arange(bins + 1, dtype=np.float64)
        if self.scale == LOG:
            out = lower - 1.0 + np.power(upper - lower + 1.0, k / bins)
        else:
            out = lower + k * ((upper - lower) / bins)
        out[0], out[-1] = lower, upper
        return out

    def bin_of(self, x: np.ndarray) -> np.ndarray:
        """The bin (int64) of each value of ``x`` (inside the bounds) of a numeric column."""
        lower, upper, bins = self.bounds
        if self.scale == EQUAL:
            b = np.floor((x - lower) / (upper - lower) * bins).astype(np.int64)
        else:
            b = np.searchsorted(self.edges[1:-1], x, side="right").astype(np.int64)
        return np.clip(b, 0, bins - 1)

    @property
    def size(self) -> int:
        """Number of codes of this column: its own values, then the missing code if any."""
        return self.value_codes + self.missing

    @property
    def value_codes(self) -> int:
        """Number of codes of the column's own values (categories or bins), ``0..value_codes-1``."""
        return len(self.values) if self.kind == CATEGORICAL else self.bounds[2]

    @property
    def missing_code(self) -> int | None:
        """The code of an empty cell (right after the values), or None without ``missing``."""
        return self.value_codes if self.missing else None

    @property
    def values(self) -> tuple[Any, ...]:
        """The categories of a categorical column (DomainError for a numeric one)."""
        if self.categories is None:
            raise DomainError(f"column {self.name!r} is {self.kind}: it has no categories.")
        return self.categories

    @property
    def bounds(self) -> tuple[float, float, int]:
        """(lower, upper, bins) of a numeric column (DomainError for a categorical one)."""
        if self.lower is None or self.upper is None or self.bins is None:
            raise DomainError(f"column {self.name!r} is categorical: it has no bounds.")
        return self.lower, self.upper, self.bins

    def to_dict(self) -> dict:
        """JSON-ready form (``"missing"`` only when true, so older specs keep their bytes)."""
        out: dict[str, Any]
        if self.kind == CATEGORICAL:
            out = {"name": self.name, "type": CATEGORICAL, "categories": list(self.values)}
        elif self.time is not None:
            out = {"name": self.name, "type": DATETIME, **self.time.to_dict()}
        else:
            out = {
                "name": self.name,
                "type": NUMERIC,
                "lower": self.lower,
                "upper": self.upper,
                "bins": self.bins,
            }
            if self.scale != EQUAL:
                out["scale"] = self.scale
            if self.cuts is not None:
                out["cuts"] = list(self.cuts)
            if self.integer:
                out["integer"] = True
        return {**out, "missing": True} if self.missing else out


class DomainSpec:
    """The public domain of a table: one :class:`ColumnSpec` per column, in order.

    ``ignored`` names the table's columns that the spec leaves out (``"type": "ignore"`` in
    its file): they are no part of the domain, so an encoder skips them, and neither the
    names, the domain nor :meth:`to_dict` (a config's spec) holds them.
    """

    def __init__(self, columns: Sequence[ColumnSpec], ignored: Sequence[str] = ()) -> None:
        self.columns: tuple[ColumnSpec, ...] = tuple(columns)
        self.ignored: tuple[str, ...] = tuple(str(n) for n in ignored)
        names = [c.name for c in self.columns]
        if not names:
            every = "; every column is ignored: give one a type" if self.ignored else ""
            raise DomainError(f"a DomainSpec needs at least one column{every}.")
        if len(set(names + list(self.ignored))) != len(names) + len(self.ignored):
            raise DomainError(f"column names must be unique; got {names + list(self.ignored)}.")
        self._by_name = {c.name: c for c in self.columns}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def domain(self) -> Domain:
        """The integer-code view (names and sizes)."""
        return Domain(self.names, tuple(c.size for c in self.columns))

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, name: str) -> ColumnSpec:
        try:
            return self._by_name[str(name)]
        except KeyError:
            if str(name) in self.ignored:
                raise DomainError(
                    f'column {name!r} is ignored in the spec ("type": "ignore"); give it a '
                    "type to use it."
                ) from None
            raise DomainError(
                f"unknown column {name!r}; the spec has {list(self.names)}."
            ) from None

    def __eq__(self, other: object) -> bool:
        """Specs with the same columns are equal: their ignored columns are no part of it."""
        return isinstance(other, DomainSpec) and self.columns == other.columns

    def __hash__(self) -> int:
        return hash(self.columns)

    def __repr__(self) -> str:
        return f"DomainSpec({len(self)} columns: {', '.join(self.names)})"

    def subset(self, names: Iterable[str]) -> DomainSpec:
        """The spec of the given columns, in the given order."""
        return DomainSpec([self[n] for n in names])

    def to_dict(self) -> dict:
        """The domain, JSON-ready: the columns, not the ignored ones (a config holds this)."""
        return {"columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, data: object) -> DomainSpec:
        """Read a spec in any accepted format (see :data:`DOMAIN_FORMATS`).

        This library's ``{"columns": [...]}``, the integer-coded
        ``{"0": {"type": "discrete", "domain": 16}, ...}`` format, or private-pgm / mbi's
        ``{"age": 85, ...}`` (column name -> number of values); the last two give
        categorical columns with categories ``0..size-1``.
        """
        if not isinstance(data, dict) or not data:
            raise _format_error(f"a domain must be a non-empty JSON object, got {_brief(data)}.")
        if isinstance(data.get("columns"), list):
            read = [_column_from_dict(i, c) for i, c in enumerate(data["columns"])]
            return cls(
                [c for c in read if isinstance(c, ColumnSpec)],
                [c for c in read if isinstance(c, str)],
            )
        for name, value in data.items():
            if not isinstance(value, dict) and not _is_int(value):
                raise _format_error(
                    f"column {_brief(name)} maps to {_brief(value)} "
                    f"({type(value).__name__}); expected a column object or a size."
                )
        kinds = {isinstance(value, dict) for value in data.values()}
        if len(kinds) > 1:
            raise _format_error("the domain mixes column objects and sizes.")
        if kinds == {True}:
            return cls([_discrete_column(name, c) for name, c in data.items()])
        return cls(
            [
                ColumnSpec(name, CATEGORICAL, tuple(range(_size(name, size, "size"))))
                for name, size in data.items()
            ]
        )

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> DomainSpec:
        """Load a spec from a JSON file (any format :meth:`from_dict` accepts)."""
        data = read_json(path, DomainError, "domain file")
        try:
            return cls.from_dict(data)
        except DomainError as exc:
            raise DomainError(f"{path}: {exc}") from None

    def to_json(self, path: str | os.PathLike) -> None:
        """Save the spec as JSON (atomically): its columns, then its ignored ones."""
        data = self.to_dict()
        data["columns"] += [{"name": n, "type": IGNORE} for n in self.ignored]
        atomic_write_text(path, json.dumps(data, indent=1))


DOMAIN_FORMATS = (
    "Accepted domain formats: "
    '(1) vertimrf\'s {"columns": [{"name": "sex", "type": "categorical", '
    '"categories": ["F", "M"]}, {"name": "age", "type": "numeric", "lower": 0, '
    '"upper": 100, "bins": 10, "integer": true, "missing": true}, {"name": "day", '
    '"type": "datetime", '
    '"lower": "2013-01-01", "upper": "2013-12-31", "unit": "day", "format": "%Y-%m-%d"}, '
    '{"name": "notes", "type": "ignore"}]} '
    '("missing": true makes an empty cell a value of its own; "integer": true decodes a '
    "numeric column to whole numbers; a datetime column has ISO "
    'bounds, bins of one "unit" (second, minute, hour, day, week, month, year; "step" units '
    'with "step") and the strftime "format" of its cells; "ignore" leaves the column out); '
    '(2) integer-coded {"0": {"type": "discrete", "domain": 16}, "1": {...}}; '
    '(3) private-pgm / mbi {"age": 85, "sex": 2} (column name -> number of values).'
)


def _format_error(problem: str) -> DomainError:
    return DomainError(f"{problem} {DOMAIN_FORMATS}")


def _brief(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_finite_number(value: object) -> bool:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond float range
        return False


def _size(name: object, value: object, what: str) -> int:
    """``value`` as a number of codes (a positive int, at most ``_MAX_CODES``)."""
    if not _is_int(value) or value < 1:
        raise _format_error(
            f"column {_brief(name)}: {what} must be a positive integer, got {_brief(value)}."
        )
    if value > _MAX_CODES:
        raise DomainError(
            f"column {_brief(name)} has {value} codes; at most {_MAX_CODES} are supported."
        )
    return int(value)


def _discrete_column(name: object, c: dict) -> ColumnSpec:
    """A column of the integer-coded ``{"type": "discrete", "domain": u}`` format."""
    if c.get("type") != "discrete" or "domain" not in c:
        raise _format_error(
            f"column {_brief(name)}: expected {{'type': 'discrete', 'domain': u}}, got {_brief(c)}."
        )
    return ColumnSpec(str(name), CATEGORICAL, tuple(range(_size(name, c["domain"], "'domain'"))))


def _column_from_dict(i: int, c: object) -> ColumnSpec | str:
    """A column of this library's ``{"columns": [...]}`` format, or the name of an ignored
    one."""
    where = f"'columns'[{i}]"
    if not isinstance(c, dict):
        raise _format_error(f"{where} is {_brief(c)}, not a column object.")
    kind = c.get("type")
    if kind not in (CATEGORICAL, NUMERIC, DATETIME, IGNORE):
        raise _format_error(
            f"{where}: 'type' must be 'categorical', 'numeric', 'datetime' or 'ignore', got "
            f"{_brief(kind)}."
        )
    need = {
        CATEGORICAL: ("name", "categories"),
        NUMERIC: ("name", "lower", "upper", "bins" if "cuts" not in c else "cuts"),
        DATETIME: ("name", "lower", "upper", "unit"),
        IGNORE: ("name",),
    }[kind]
    missing = [k for k in need if k not in c]
    if missing:
        raise _format_error(
            f"{where}: a {kind} column needs the keys {list(need)}; missing {missing}."
        )
    name = c["name"]
    if not isinstance(name, str):
        raise _format_error(f"{where}: 'name' must be a string, got {_brief(name)}.")
    if kind == IGNORE:
        return name
    missing = c.get("missing", False)
    if kind == CATEGORICAL:
        cats = c["categories"]
        if not isinstance(cats, (list, tuple)) or not all(_hashable(v) for v in cats):
            raise _format_error(
                f"column {name!r}: 'categories' must be a list of values (strings, numbers, "
                f"booleans or null), got {_brief(cats)}."
            )
        return ColumnSpec(name, CATEGORICAL, tuple(cats), missing=missing)
    if kind == DATETIME:
        return _datetime_from_dict(name, c, missing)
    lo, hi, cuts = c["lower"], c["upper"], c.get("cuts")
    scale = c.get("scale", EQUAL if cuts is None else CUTS)
    if cuts is not None and not (
        isinstance(cuts, list) and all(_is_finite_number(v) for v in cuts)
    ):
        raise _format_error(
            f"column {name!r}: 'cuts' must be a list of numbers, got {_brief(cuts)}."
        )
    bins = c.get("bins", None if cuts is None else len(cuts) + 1)
    if not (_is_finite_number(lo) and _is_finite_number(hi) and _is_int(bins)):
        raise _format_error(
            f"column {name!r}: 'lower' and 'upper' must be finite numbers and 'bins' an "
            f"integer, got lower={_brief(lo)}, upper={_brief(hi)}, bins={_brief(bins)}."
        )
    return ColumnSpec(
        name, NUMERIC, None, lo, hi, bins, missing, scale, None if cuts is None else tuple(cuts),
        integer=c.get("integer", False),
    )  # fmt: skip


def _datetime_from_dict(name: str, c: dict, missing: Any) -> ColumnSpec:
    """A datetime column of this library's format."""
    keys = {k: c[k] for k in ("step", "format", "resolution") if k in c}
    for k in ("lower", "upper", "unit", "format", "resolution"):
        if k in c and not isinstance(c[k], str):
            raise _format_error(f"column {name!r}: {k!r} must be text, got {_brief(c[k])}.")
    try:
        axis = TimeAxis(c["lower"], c["upper"], c["unit"], **keys)
        return ColumnSpec(name, DATETIME, missing=missing, time=axis)
    except DomainError as exc:
        text = str(exc)
        raise DomainError(
            text if text.startswith("column") else f"column {name!r}: {text}"
        ) from None


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


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
            cols.append(ColumnSpec(name, CATEGORICAL, tuple(_py(v) for v in cats), missing=missing))
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
            f"holds dates or times (e.g. {_py(uniq[0])!r}) that no one date format reads",
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
            f"holds one value ({_py(uniq[0])!r}) in every row",
            "it tells nothing: leave it out (--drop), unless other tables may hold other values",
        )
    return None


class PrivacyWarning(UserWarning):
    """Warns that an operation is not differentially private."""


class SpecWarning(UserWarning):
    """Warns that :func:`infer_spec` proposed a column a user would likely not want so."""


class SmallTableWarning(UserWarning):
    """Warns that a table is too small for its synthetic table to carry any signal."""


def warn_small_table(rows: int, stacklevel: int = 3) -> None:
    """Warn (:class:`SmallTableWarning`) when a table to synthesize has 0 or 1 rows: the run
    goes on, as differential privacy allows, but its output is noise."""
    if rows <= 1:
        warnings.warn(
            f"the table has {rows} row{'' if rows == 1 else 's'}: differential privacy hides "
            "any single row, so the synthetic table will be noise.",
            SmallTableWarning,
            stacklevel=stacklevel,
        )


def empty_cells(values: np.ndarray | pd.Series) -> np.ndarray:
    """Where ``values`` are empty: NaN, None, pandas' NA or NaT, or the empty string."""
    import pandas as pd

    array = np.asarray(values, dtype=object)
    empty = np.asarray(pd.isna(array), dtype=bool)
    present = ~empty
    empty[present] = array[present] == ""
    return empty


def _py(v: object) -> object:
    return v.item() if isinstance(v, np.generic) else v


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
            as_text = np.fromiter((str(_py(v)) in texts for v in values[bad]), bool, bad.sum())
            foreign = bad.copy()
            foreign[bad] = ~as_text
            problem = f"is not one of its categories {_preview(col.values)}"
            if not foreign.any():
                twin = next(c for c in col.values if str(c) == str(_py(values[bad][0])))
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
        raise _cell_error(
            col,
            x,
            out,
            f"is outside its public bounds [{lower}, {upper}]",
            "change the data, or widen the bounds in the domain spec",
        )
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
        raise _cell_error(
            col,
            s.to_numpy(dtype=object),
            out,
            f"is outside its public bounds: from {axis.lower} to the end of {last} that "
            f"holds {axis.upper}",
            "change the data, or widen the bounds in the domain spec",
        )
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
        more += f" (other values: {', '.join(repr(_py(v)) for v in others)})"
    value = repr(_py(values[first]))
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
