"""Where a decoded numeric value lies inside its bin: one strategy per
choice; design notes in docs/design/core.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.domain import NUMERIC, ColumnSpec, DomainSpec
from vertimrf.encoding import Placement, uniform_values
from vertimrf.errors import DomainError, MessageError

__all__ = [
    "PLACEMENTS",
    "Fine",
    "Midpoint",
    "Placement",
    "Uniform",
    "placement",
    "within_from_meta",
    "within_meta",
]

PLACEMENTS = ("fine", "uniform", "midpoint")


@dataclass(frozen=True)
class Uniform:
    name: str = "uniform"

    def place(
        self, col: ColumnSpec, bins: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        return uniform_values(col, bins, rng)


@dataclass(frozen=True)
class Midpoint(Uniform):
    """Uniform's draw without a generator: the bin's midpoint, always."""

    name: str = "midpoint"

    def place(
        self, col: ColumnSpec, bins: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        return super().place(col, bins, None)


@dataclass(frozen=True)
class Fine:
    """Fine histograms by column name: ``bins * s`` noisy counts, ``s`` sub-bins per bin."""

    counts: Mapping[str, np.ndarray] = field(default_factory=dict)
    name: str = "fine"

    def place(
        self, col: ColumnSpec, bins: np.ndarray, rng: np.random.Generator | None
    ) -> np.ndarray:
        counts = self.counts.get(col.name)
        if rng is None or counts is None:
            return Uniform().place(col, bins, rng)
        k = col.bounds[2]
        if counts.size % k:
            raise DomainError(
                f"column {col.name!r}: a fine histogram of {counts.size} cells does not split "
                f"its {k} bins evenly."
            )
        s = counts.size // k
        w = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None).reshape(k, s)
        w[w.sum(axis=1) == 0] = 1.0  # nothing known inside the bin: uniform
        within = np.cumsum(w, axis=1) / w.sum(axis=1, keepdims=True)
        # one sorted axis: cell (b, j) ends at b + within[b, j]; bin b's draw is b + u
        ends = (np.arange(k)[:, None] + within).ravel()
        ends[s - 1 :: s] = np.arange(1, k + 1)  # each bin's last cell ends at b + 1 exactly
        cell = np.searchsorted(ends, bins + rng.random(len(bins)), side="right")
        cell = np.clip(cell, bins * s, bins * s + s - 1)
        j = cell - bins * s
        edges = col.edges
        width = edges[bins + 1] - edges[bins]
        return edges[bins] + (j + rng.random(len(bins))) / s * width


def placement(name: str, counts: Mapping[str, np.ndarray] | None = None) -> Placement:
    """The strategy called ``name`` (one of :data:`PLACEMENTS`)."""
    if name == "fine":
        return Fine({k: np.asarray(v, dtype=np.int64) for k, v in (counts or {}).items()})
    if name == "uniform":
        return Uniform()
    if name == "midpoint":
        return Midpoint()
    raise DomainError(f"unknown placement {name!r}; use one of {list(PLACEMENTS)}.")


def within_meta(within: Placement) -> dict[str, Any]:
    """JSON-ready: the strategy's name, and a fine one's counts by column."""
    out: dict[str, Any] = {"name": within.name}
    if isinstance(within, Fine):
        out["counts"] = {k: [int(v) for v in c] for k, c in within.counts.items()}
    return out


def within_from_meta(meta: object, spec: DomainSpec, where: object) -> Placement:
    """The strategy :func:`within_meta` described (None: the midpoint); MessageError
    naming ``where`` unless its counts are integers of the spec's numeric columns, whole
    sub-bins per bin."""
    if meta is None:
        return Midpoint()
    try:
        assert isinstance(meta, dict)
        counts = meta.get("counts") or {}
        out = placement(str(meta["name"]), counts)
        for name, c in counts.items():
            col = spec[name]
            assert col.kind == NUMERIC and all(isinstance(v, int) for v in c)
            assert len(c) >= col.bounds[2] and len(c) % col.bounds[2] == 0
    except (AssertionError, KeyError, TypeError, ValueError, DomainError):
        raise MessageError(f"{where}: malformed placement of numeric values.") from None
    return out
