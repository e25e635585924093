"""The party-message schema: size bounds derived from the config, and typed
manifest fields; design notes in docs/design/protocol.md."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, overload

from vertimrf.errors import MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.options import is_number

# Without a public max_rows, a party may release at most this many GRR rows per message.
DEFAULT_MAX_ROWS = 10_000_000
_CELL_BYTES = 8
_ARRAYS_PER_COLUMN = 64


def array_bounds(config: ProtocolConfig) -> Callable[[str], int | None]:
    """Largest payload (bytes) of each array a message under ``config`` may hold."""
    binned = set(config.binned_columns())
    paper = config.paper_options()
    bins, cells = paper.bins, paper.max_model_cells
    widest_bin = max((config.spec[c].size for c in binned), default=0)
    per_party = [
        (
            sum(c in binned for c in p.columns),
            sum(min(config.spec[c].size, bins) if c in binned else config.spec[c].size
                for c in p.columns),
            len(p.columns),
        )
        for p in config.parties
    ]  # fmt: skip
    n_binned = max(b for b, _, _ in per_party)
    slots = max(s for _, s, _ in per_party)
    width = max(d for _, _, d in per_party)
    rows = 2 * (config.max_rows or DEFAULT_MAX_ROWS) + 10_000
    tables = _ARRAYS_PER_COLUMN * width
    fixed = {"sketch": rules(config).sketch_rows(config) * slots, "grr": rows * width * _CELL_BYTES}
    indexed = {
        "bin_map": (n_binned, widest_bin * _CELL_BYTES),
        "bin_counts": (n_binned, widest_bin * _CELL_BYTES),
        "potential": (tables, int(cells) * _CELL_BYTES),
        "target": (tables, int(cells) * _CELL_BYTES),
    }

    def bound(name: str) -> int | None:
        if name in fixed:
            return fixed[name]
        stem, _, index = name.rpartition("_")
        if stem in indexed and index.isascii() and index.isdigit() and index == str(int(index)):
            count, size = indexed[stem]
            return size if int(index) < count else None
        return None

    return bound


class Fields:
    """Typed access to one JSON object of a manifest; every mismatch is a MessageError."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise MessageError(f"{where} must be a JSON object; got {type(data).__name__}.")
        self._data = data
        self.where = where

    def _get(self, key: str) -> Any:
        if key not in self._data:
            raise MessageError(f"{self.where} lacks the field {key!r}.")
        return self._data[key]

    def _bad(self, key: str, want: str) -> MessageError:
        value = repr(self._data[key])[:80]
        return MessageError(f"{self.where}: field {key!r} must be {want}; got {value}.")

    def _typed(self, key: str, ok: Callable[[Any], bool], want: str, optional: bool = False) -> Any:
        """The value of ``key`` when ``ok`` of it (None when ``optional`` and null)."""
        value = self._get(key)
        if value is None and optional:
            return None
        if not ok(value):
            raise self._bad(key, want)
        return value

    @overload
    def text(self, key: str) -> str: ...
    @overload
    def text(self, key: str, *, optional: bool) -> str | None: ...
    def text(self, key: str, *, optional: bool = False) -> str | None:
        return self._typed(key, _is_text, "a string", optional)

    def flag(self, key: str) -> bool:
        return self._typed(key, lambda v: isinstance(v, bool), "true or false")

    @overload
    def integer(self, key: str) -> int: ...
    @overload
    def integer(self, key: str, *, optional: bool) -> int | None: ...
    def integer(self, key: str, *, optional: bool = False) -> int | None:
        return self._typed(key, _is_integer, "an integer", optional)

    @overload
    def number(self, key: str) -> float: ...
    @overload
    def number(self, key: str, *, optional: bool) -> float | None: ...
    def number(self, key: str, *, optional: bool = False) -> float | None:
        value = self._typed(key, is_number, "a number", optional)
        if value is None:
            return None
        value = float(value)
        if not math.isfinite(value):
            raise self._bad(key, "a finite number")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        return tuple(self._typed(key, _list_of(_is_text), "a list of strings"))

    def text_lists(self, key: str) -> tuple[tuple[str, ...], ...]:
        value = self._typed(key, _list_of(_list_of(_is_text)), "a list of lists of strings")
        return tuple(tuple(v) for v in value)

    def numbers(self, key: str) -> tuple[float, ...]:
        return tuple(float(v) for v in self._typed(key, _list_of(is_number), "a list of numbers"))

    def objects(self, key: str) -> list[Fields]:
        value = self._typed(key, lambda v: isinstance(v, list), "a list of objects")
        return [Fields(v, f"{self.where}: {key}[{i}]") for i, v in enumerate(value)]

    @overload
    def object(self, key: str) -> Fields: ...
    @overload
    def object(self, key: str, *, optional: bool) -> Fields | None: ...
    def object(self, key: str, *, optional: bool = False) -> Fields | None:
        value = self._get(key)
        if value is None and optional:
            return None
        return Fields(value, f"{self.where}: {key}")

    def raw_object(self, key: str) -> dict[str, Any]:
        """A JSON object whose values are numbers, strings, booleans or null."""
        value = self._get(key)
        if not isinstance(value, dict) or not all(
            isinstance(v, int | float | str | bool) or v is None for v in value.values()
        ):
            raise self._bad(key, "an object of plain values")
        return dict(value)


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """Whether a value is a list of values each ``ok``."""
    return lambda value: isinstance(value, list) and all(map(ok, value))
