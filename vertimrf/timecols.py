"""A datetime column's public time axis: its bounds, its bins of whole units,
its cells' format; design notes in docs/design/core.md."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vertimrf.errors import DomainError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "UNITS",
    "TimeAxis",
    "bound_text",
    "divides",
    "floor",
    "format_resolution",
    "proposed_unit",
    "seconds",
]

UNITS = ("second", "minute", "hour", "day", "week", "month", "year")
_LENGTH = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_CALENDAR = {"month": "M", "year": "Y"}
_MONDAY = 4 * 86400  # 1970-01-05 00:00, the first Monday after the epoch
# A bound as the spec writes it: an ISO date, with a time of day or without.
_BOUND = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?))?$")
# The finest field each strftime code writes (codes of no field, such as %p, are left out).
_FIELD = {
    **dict.fromkeys("STXcsf", "second"),
    **dict.fromkeys("MR", "minute"),
    **dict.fromkeys("HIkl", "hour"),
    **dict.fromkeys("dejFDxaAuwUWV", "day"),
    **dict.fromkeys("mbBh", "month"),
    **dict.fromkeys("YyGC", "year"),
}
_PROBE = dt.datetime(2013, 5, 17, 13, 45, 27)  # a time whose every field differs from 0 and 1
MAX_PROPOSED_BINS = 400  # proposed_unit's cap on the bins of a column


def _order(unit: str) -> int:
    return UNITS.index(unit)


def divides(resolution: str, unit: str) -> bool:
    """Every start of a ``unit`` starts a ``resolution`` too (a day divides a month; a week
    divides no month)."""
    if resolution == unit:
        return True
    if "week" in (resolution, unit):
        return unit == "week" and _order(resolution) <= _order("day")
    return _order(resolution) < _order(unit)


def floor(x: np.ndarray, unit: str) -> np.ndarray:
    """The start of the ``unit`` that holds each time of ``x`` (seconds, finite)."""
    x = np.asarray(x, dtype=np.float64)
    if unit in _CALENDAR:
        whole = np.floor(x).astype(np.int64).astype("datetime64[s]")
        starts = whole.astype(f"datetime64[{_CALENDAR[unit]}]").astype("datetime64[s]")
        return starts.astype(np.int64).astype(np.float64)
    length = _LENGTH[unit]
    shift = _MONDAY if unit == "week" else 0
    return np.floor((x - shift) / length) * length + shift


def format_resolution(fmt: str) -> str:
    """The finest field a strftime ``fmt`` writes (``"year"`` when it writes none)."""
    codes = re.findall(r"%[-_0^#]?([A-Za-z%])", fmt)
    fields = [_FIELD[c] for c in codes if c in _FIELD]
    return min(fields, key=_order, default="year")


def proposed_unit(first: float, last: float, resolution: str) -> str:
    """The finest of minute, hour, day, week, month and year that ``resolution`` (the
    values' own) divides and that cuts the times ``first``..``last`` into at most
    :data:`MAX_PROPOSED_BINS` bins; year when none does."""
    for unit in UNITS[1:-1]:
        if not divides(resolution, unit):
            continue
        start = float(floor(np.array([first]), unit)[0])
        if _count(int(start), int(last), unit, 1) <= MAX_PROPOSED_BINS:
            return unit
    return "year"


def _seconds(value: object, what: str) -> int:
    """A bound as seconds: ISO text ("2013-01-01", "2013-12-31 23:00") or a date or time."""
    if isinstance(value, str):
        match = _BOUND.match(value.strip())
        if not match:
            raise DomainError(
                f"{what} must be an ISO date or time such as '2013-01-01' or "
                f"'2013-12-31 23:00' (no time zone), got {value!r}."
            )
        text = match.group(1) + ("T" + match.group(2) if match.group(2) else "")
        try:
            return int(np.datetime64(text, "s").astype(np.int64))
        except ValueError:
            raise DomainError(f"{what} {value!r} is no date of the calendar.") from None
    if isinstance(value, dt.date | np.datetime64):
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise DomainError(f"{what} must have no time zone, got {value!r}.")
        return int(np.datetime64(value).astype("datetime64[s]").astype(np.int64))
    raise DomainError(f"{what} must be an ISO date or time text, got {value!r}.")


def bound_text(seconds: float) -> str:
    """A time as the spec writes a bound: the date, then the time of day if not midnight."""
    text = str(np.datetime64(int(seconds), "s")).replace("T", " ")
    day, clock = text.split(" ")
    if clock == "00:00:00":
        return day
    return f"{day} {clock[:5]}" if clock.endswith(":00") else text


def _count(lower: int, upper: int, unit: str, step: int) -> int:
    """The bins of ``step`` units from ``lower`` (a unit's start) to the one holding ``upper``."""
    if unit in _CALENDAR:
        code = _CALENDAR[unit]
        first = np.datetime64(lower, "s").astype(f"datetime64[{code}]").astype(np.int64)
        last = np.datetime64(upper, "s").astype(f"datetime64[{code}]").astype(np.int64)
        units = int(last - first)
    else:
        units = (upper - lower) // _LENGTH[unit]
    return units // step + 1


@dataclass(frozen=True)
class TimeAxis:
    """The public time axis of a datetime column.

    ``lower`` and ``upper`` are ISO dates or times (``"2013-01-01"``, ``"2013-12-31 23:00"``;
    no time zone); ``lower`` starts a ``unit`` (one of :data:`UNITS`). A bin is ``step``
    units, the first from ``lower``, the last the one holding ``upper``: a value from ``lower``
    to that bin's end is taken. ``format`` (strftime) reads and writes the cells; by default
    ``"%Y-%m-%d"`` for units of a day or more, else ``"%Y-%m-%d %H:%M:%S"``. A time drawn
    inside a bin is a whole number of ``resolution`` units, by default the finest field the
    format writes (or the unit, when that field does not divide it).
    """

    lower: str
    upper: str
    unit: str
    step: int = 1
    format: str = ""
    resolution: str = ""

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise DomainError(f"unknown unit {self.unit!r}; use one of {list(UNITS)}.")
        if not isinstance(self.step, int) or isinstance(self.step, bool) or self.step < 1:
            raise DomainError(
                f"'step' must be a positive integer (units per bin), got {self.step!r}."
            )
        lower, upper = _seconds(self.lower, "'lower'"), _seconds(self.upper, "'upper'")
        if upper < lower:
            raise DomainError(f"'upper' {bound_text(upper)} is before 'lower' {bound_text(lower)}.")
        start = floor(np.array([lower]), self.unit)[0]
        if start != lower:
            raise DomainError(
                f"'lower' {bound_text(lower)} does not start a {self.unit}; use "
                f"{bound_text(start)}, the start of the {self.unit} that holds it."
            )
        object.__setattr__(self, "lower", bound_text(lower))
        object.__setattr__(self, "upper", bound_text(upper))
        fmt = self.format or (
            "%Y-%m-%d" if _order(self.unit) >= _order("day") else "%Y-%m-%d %H:%M:%S"
        )
        _check_format(fmt)
        object.__setattr__(self, "format", fmt)
        own = format_resolution(fmt)
        resolution = self.resolution or (own if divides(own, self.unit) else self.unit)
        if resolution not in UNITS or not divides(resolution, self.unit):
            raise DomainError(
                f"'resolution' must be a unit that divides the bins' unit {self.unit!r} (e.g. "
                f"'second', 'hour', 'day'), got {resolution!r}."
            )
        object.__setattr__(self, "resolution", resolution)

    @property
    def span(self) -> tuple[int, int]:
        """The bounds as seconds: ``lower``, and ``upper`` as written."""
        return _seconds(self.lower, "'lower'"), _seconds(self.upper, "'upper'")

    @property
    def bins(self) -> int:
        """The number of bins."""
        lower, upper = self.span
        return _count(lower, upper, self.unit, self.step)

    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges (seconds, float64): each bin's start, then the last's end."""
        lower, upper = self.span
        k = np.arange(_count(lower, upper, self.unit, self.step) + 1, dtype=np.int64) * self.step
        if self.unit in _CALENDAR:
            code = _CALENDAR[self.unit]
            first = np.datetime64(lower, "s").astype(f"datetime64[{code}]")
            return (first + k).astype("datetime64[s]").astype(np.int64).astype(np.float64)
        return (lower + k * _LENGTH[self.unit]).astype(np.float64)

    def to_dict(self) -> dict[str, Any]:
        """The spec's keys of the axis (``step`` and ``resolution`` only when not the default)."""
        out: dict[str, Any] = {"lower": self.lower, "upper": self.upper, "unit": self.unit}
        if self.step != 1:
            out["step"] = self.step
        out["format"] = self.format
        default = TimeAxis(self.lower, self.upper, self.unit, 1, self.format).resolution
        if self.resolution != default:
            out["resolution"] = self.resolution
        return out

    def read(self, s: pd.Series, empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each cell of ``s`` as seconds (NaN where ``empty`` or bad), and where it is bad: text
        (or an integer, as a CSV reads ``20130101``) the format does not read, or no time at
        all. A date or time object is taken as it is; a time zone is dropped (its wall-clock
        time kept)."""
        import pandas as pd

        if isinstance(s.dtype, pd.DatetimeTZDtype):
            s = s.dt.tz_localize(None)
        if pd.api.types.is_datetime64_dtype(s.dtype):
            return seconds(s.to_numpy()), np.zeros(len(s), dtype=bool)
        values = s.to_numpy(dtype=object)
        x = np.full(len(values), np.nan)
        bad = ~np.asarray(empty, dtype=bool)
        text = np.array([_as_text(v) for v in values], dtype=object)
        is_text = np.fromiter((t is not None for t in text), bool, len(text)) & bad
        if is_text.any():
            read = pd.to_datetime(
                pd.Series(text[is_text], dtype=object), format=self.format, errors="coerce"
            )
            x[is_text] = seconds(read.to_numpy())
        stamps = np.flatnonzero(bad & ~is_text)
        for i in stamps:
            x[i] = _stamp_seconds(values[i])
        bad &= np.isnan(x)
        return x, bad

    def write(self, seconds: np.ndarray) -> np.ndarray:
        """Times (finite seconds) as text in the format."""
        import pandas as pd

        whole = np.floor(np.asarray(seconds, dtype=np.float64)).astype(np.int64)
        return np.asarray(pd.DatetimeIndex(whole.astype("datetime64[s]")).strftime(self.format))

    def draw(
        self, edges: np.ndarray, bins: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        """A time in each bin of ``bins``: its start without ``rng``, else drawn uniformly
        inside it and floored to a whole ``resolution``."""
        start = edges[bins]
        if rng is None:
            return start
        end = edges[bins + 1]
        x = floor(start + rng.random(len(bins)) * (end - start), self.resolution)
        return np.clip(x, start, floor(end - 1.0, self.resolution))


def _check_format(fmt: object) -> None:
    """DomainError unless ``fmt`` is a strftime format without a time zone that reads back
    what it writes, down to its finest field."""
    if not isinstance(fmt, str) or "%" not in fmt:
        raise DomainError(
            f"'format' must be a strftime format such as '%Y-%m-%d %H:%M:%S', got {fmt!r}."
        )
    if re.search(r"%[-_0^#]?[zZ]", fmt):
        raise DomainError(
            f"'format' {fmt!r} holds a time zone (%z, %Z): a datetime column takes times "
            "without one; write them in one zone (a literal Z is fine: '%Y-%m-%dT%H:%M:%SZ')."
        )
    probe = floor(np.array([_probe_seconds()]), format_resolution(fmt))[0]
    want = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=float(probe))
    try:
        back = dt.datetime.strptime(_PROBE.strftime(fmt), fmt)
    except ValueError:
        back = None
    if back != want:
        raise DomainError(
            f"'format' {fmt!r} does not read back the time it writes (2013-05-17 13:45:27 "
            f"is written {_PROBE.strftime(fmt)!r}): it needs every field from the year down "
            "to its finest one, and %p with %I."
        )


def _probe_seconds() -> float:
    return float(np.datetime64(_PROBE, "s").astype(np.int64))


def _as_text(value: object) -> str | None:
    """A cell as the text to parse: text as it is, an integer (or a float of one) in digits."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating) and np.isfinite(value) and value == int(value):
        return str(int(value))
    return None


def _stamp_seconds(value: object) -> float:
    """A date or time object as seconds (its wall-clock time), else NaN."""
    if not isinstance(value, dt.date | np.datetime64):
        return np.nan
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    if isinstance(value, np.datetime64):
        stamp = value.astype("datetime64[us]")
    else:
        stamp = np.datetime64(value, "us")
    if np.isnat(stamp):
        return np.nan
    return float(stamp.astype(np.int64)) / 1e6


def seconds(values: np.ndarray) -> np.ndarray:
    """datetime64 values (naive) as seconds since 1970 (NaN where NaT)."""
    micro = values.astype("datetime64[us]")
    out = micro.astype(np.int64).astype(np.float64) / 1e6
    out[np.isnat(micro)] = np.nan
    return out
