"""Public domains: attribute names and sizes, and column
specifications; design notes in docs/design/core.md."""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

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
        return math.prod(self.sizes[i] for i in idx)

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
            bad = codes.max(axis=0) >= np.asarray(self.domain.sizes)
            if codes.dtype.kind == "i":  # unsigned codes are never negative
                bad |= codes.min(axis=0) < 0
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


def plain(v: object) -> object:
    """A numpy scalar as the Python value it holds; anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v
